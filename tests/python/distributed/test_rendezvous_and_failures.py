"""Two processes meeting through each init_method (tcp://, file://, a store passed in),
and a job where a rank dies or hangs: the others fail with a clear error within the
timeout, never hang."""

from __future__ import annotations

import distributed_workers as workers
from distributed_ranks import free_port, run_ranks


def test_init_methods(tmp_path):
    ranks = run_ranks(workers.init_methods, 2, free_port(), str(tmp_path / "rendezvous"))
    for rank, seen in enumerate(ranks):
        assert seen[0] == ("tcp", rank, 2, [3.0, 3.0])
        assert seen[1] == ("file", rank, 2, [3.0, 3.0])
        assert seen[2] == ("store", f"value{(rank + 1) % 2}", True, [1.0])
    assert not (tmp_path / "rendezvous").exists()


def test_a_rank_that_dies_makes_the_others_fail():
    messages = run_ranks(workers.rank_dies, 3, expect_exit={2: 3}, timeout=60)
    for message in messages[:2]:
        assert "all_reduce failed on rank" in message, message


def test_a_rank_that_hangs_makes_the_others_fail_within_the_timeout():
    messages = run_ranks(workers.rank_hangs, 2, timeout=60)
    assert "all_reduce failed on rank 0" in messages[0] and "Timed out" in messages[0], messages[0]
    assert messages[1] == "slept"
