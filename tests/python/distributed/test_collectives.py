"""kiln.distributed's collectives on 2 and 3 processes over loopback (Gloo), against numpy:
every ReduceOp, several dtypes and sizes (0-size and non-contiguous included), async
handles, send/recv, object collectives and subgroups. One job per world size runs the whole
table (helpers/distributed_workers.py, collective_table); each test asserts one category."""

from __future__ import annotations

import pytest

import distributed_workers
from distributed_ranks import run_ranks

WORLD_SIZES = (2, 3)


@pytest.fixture(scope="module", params=WORLD_SIZES, ids=lambda n: f"{n}-ranks")
def failures_by_rank(request):
    return run_ranks(distributed_workers.collective_table, request.param, timeout=90)


@pytest.mark.parametrize("category", distributed_workers.CATEGORIES)
def test_collective_matches_numpy(failures_by_rank, category):
    failures = [f"rank {rank}: {message}" for rank, found in enumerate(failures_by_rank)
                for message in found[category]]
    assert not failures, "\n".join(failures[:20])
