"""kiln.distributed's collectives on 3 processes over loopback (Gloo), against numpy:
every ReduceOp, several dtypes and sizes (0-size and non-contiguous included), async
handles, send/recv, object collectives and subgroups. One job runs the whole table
(helpers/distributed_workers.py, collective_table); each test asserts one category."""

from __future__ import annotations

import pytest

import distributed_workers
from distributed_ranks import run_ranks

WORLD_SIZE = 3


@pytest.fixture(scope="module")
def failures_by_rank():
    return run_ranks(distributed_workers.collective_table, WORLD_SIZE, timeout=90)


@pytest.mark.parametrize("category", distributed_workers.CATEGORIES)
def test_collective_matches_numpy(failures_by_rank, category):
    failures = [f"rank {rank}: {message}" for rank, found in enumerate(failures_by_rank)
                for message in found[category]]
    assert not failures, "\n".join(failures[:20])
