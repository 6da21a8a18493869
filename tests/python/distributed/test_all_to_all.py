"""all_to_all_single with uneven input/output split sizes (0-size splits included, a rank that
sends and receives nothing, everything empty) and all_to_all of tensor lists, on 2 and 3
processes over loopback, against numpy (helpers/distributed_workers.py, all_to_all_uneven)."""

from __future__ import annotations

import pytest

import distributed_workers
from distributed_ranks import run_ranks


@pytest.mark.parametrize("world_size", [2, 3])
def test_all_to_all_uneven_splits_match_numpy(world_size):
    failures = run_ranks(distributed_workers.all_to_all_uneven, world_size, timeout=90)
    found = [f"rank {rank}: {message}" for rank, messages in enumerate(failures) for message in messages]
    assert not found, "\n".join(found[:20])
