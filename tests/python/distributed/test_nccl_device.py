"""backend="nccl" on CUDA tensors, against numpy: every collective on a group of one process on
cuda:0 (in this process), and on 2 processes with a GPU each where the machine has 2 GPUs.
Without a GPU (or without NCCL) every test skips with "no GPU"; tests/gpu/run.sh runs this file
on a lent GPU machine. The no-GPU errors are tested in test_nccl_loading.py."""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

import kiln
import kiln.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "helpers"))

from distributed_ranks import run_ranks  # noqa: E402

import distributed_nccl_workers  # noqa: E402

pytestmark = pytest.mark.skipif(kiln.cuda.device_count() == 0 or not dist.is_nccl_available(),
                                reason="no GPU on this machine (or no NCCL for it)")

DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "int8")


@pytest.fixture
def nccl_group(tmp_path):
    dist.init_process_group("nccl", init_method=f"file://{tmp_path / 'init'}", rank=0, world_size=1,
                            timeout=timedelta(seconds=30), device_id=kiln.device("cuda:0"))
    try:
        yield
    finally:
        dist.destroy_process_group()


def _cuda(values, dtype: str, noncontiguous: bool = False):
    t = kiln.tensor(np.asarray(values, dtype=np.float64).tolist(), dtype=getattr(kiln, dtype)).to("cuda:0")
    if noncontiguous and t.numel() % 2 == 0 and t.numel():
        t = t.reshape(2, -1).t().contiguous().t()
    return t


def _host(t) -> np.ndarray:
    return np.asarray(t.detach().to(kiln.float64).cpu().reshape(-1).tolist(), dtype=np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 1000])
def test_one_rank_collectives_keep_values(nccl_group, dtype, n):
    values = (np.arange(n) % 5 + 1).astype(np.float64)
    assert dist.get_backend() == "nccl"
    ops = ["SUM", "PRODUCT", "MIN", "MAX"] + (["AVG"] if dtype.startswith(("float", "bfloat")) else [])
    for op in ops:
        for nc in (False, True):
            t = _cuda(values, dtype, nc)
            dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
            np.testing.assert_allclose(_host(t), values, err_msg=f"{op} non-contiguous={nc}")
    t = _cuda(values, dtype)
    dist.broadcast(t, src=0)
    dist.reduce(t, dst=0)
    np.testing.assert_allclose(_host(t), values)
    outs = [_cuda(np.zeros(n), dtype)]
    dist.all_gather(outs, _cuda(values, dtype))
    np.testing.assert_allclose(_host(outs[0]), values)
    out = _cuda(np.zeros(n), dtype)
    dist.reduce_scatter_tensor(out, _cuda(values, dtype))
    np.testing.assert_allclose(_host(out), values)
    gathered = [_cuda(np.zeros(n), dtype)]
    dist.gather(_cuda(values, dtype), gathered, dst=0)
    np.testing.assert_allclose(_host(gathered[0]), values)
    out = _cuda(np.zeros(n), dtype)
    dist.scatter(out, [_cuda(values, dtype)], src=0)
    np.testing.assert_allclose(_host(out), values)


def test_one_rank_async_barrier_objects_and_all_to_all(nccl_group):
    t = _cuda(np.arange(6), "float32", noncontiguous=True)
    work = dist.all_reduce(t, async_op=True)
    work.wait()
    assert work.is_completed()
    np.testing.assert_allclose(_host(t), np.arange(6))
    out = _cuda(np.zeros(4), "float32")
    dist.all_to_all_single(out, _cuda(np.arange(4), "float32"))
    np.testing.assert_allclose(_host(out), np.arange(4))
    dist.barrier()
    got = [None]
    dist.all_gather_object(got, {"a": 1})
    assert got == [{"a": 1}]


def test_one_rank_errors_name_the_device_and_the_op(nccl_group):
    with pytest.raises(RuntimeError, match="NCCL backend takes CUDA tensors"):
        dist.all_reduce(kiln.ones(3))
    with pytest.raises(RuntimeError, match="not supported for the NCCL process group: int16"):
        dist.all_reduce(kiln.ones(3, dtype=kiln.int16).to("cuda:0"))
    with pytest.raises(RuntimeError, match="AVG is only supported for floating-point"):
        dist.all_reduce(kiln.ones(3, dtype=kiln.int64).to("cuda:0"), op=dist.ReduceOp.AVG)
    with pytest.raises(ValueError, match="cannot receive from any source"):
        dist.recv(kiln.ones(3).to("cuda:0"))


@pytest.mark.skipif(kiln.cuda.device_count() < 2, reason="no GPU pair on this machine (2 ranks need 2 GPUs)")
def test_two_ranks_match_numpy():
    failures = run_ranks(distributed_nccl_workers.two_rank_table, 2, timeout=180)
    assert failures == [[], []]
