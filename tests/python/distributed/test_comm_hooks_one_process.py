"""kiln.futures.Future (torch.futures' contract), Work.get_future, GradBucket and DDP's
register_comm_hook in one process (a group of one). Training under each hook on 2 ranks is in
test_ddp.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
import torch

import kiln
import kiln.distributed as dist
from distributed_ranks import free_port
from kiln.distributed.algorithms.ddp_comm_hooks import default_hooks
from kiln.futures import Future, collect_all, wait_all


@pytest.fixture
def one_process_group():
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1,
                            timeout=timedelta(seconds=10))
    yield
    dist.destroy_process_group()


def test_names_match_torch():
    def public(cls):
        return sorted(m for m in dir(cls) if not m.startswith("_"))
    assert public(dist.GradBucket) == public(torch.distributed.GradBucket)
    assert public(Future) == public(torch.futures.Future)
    assert [n for n in ("collect_all", "wait_all") if hasattr(kiln.futures, n)] == ["collect_all", "wait_all"]
    for name in ("allreduce_hook", "fp16_compress_hook", "bf16_compress_hook", "fp16_compress_wrapper",
                 "bf16_compress_wrapper"):
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks as torch_hooks
        assert callable(getattr(default_hooks, name)) and callable(getattr(torch_hooks, name))


@pytest.mark.parametrize("framework", [kiln, torch])
def test_future_matches_torch(framework):
    Fut = framework.futures.Future
    fut = Fut()
    assert not fut.done()
    seen = []
    fut.add_done_callback(lambda f: seen.append(f.value()))
    chained = fut.then(lambda f: f.value() * 2)
    fut.set_result(21)
    assert fut.done() and fut.wait() == 21 and fut.value() == 21 and seen == [21]
    assert chained.wait() == 42
    with pytest.raises(RuntimeError, match="Future can only be marked completed once"):
        fut.set_result(1)
    failing = Fut()
    failing.set_exception(ValueError("boom"))
    with pytest.raises(ValueError, match="boom"):
        failing.wait()
    with pytest.raises(RuntimeError, match="Got the following error when running the callback: ValueError: boom"):
        failing.then(lambda f: f.value()).wait()
    a, b = Fut(), Fut()
    a.set_result(1)
    b.set_result(2)
    assert [f.value() for f in framework.futures.collect_all([a, b]).wait()] == [1, 2]
    assert framework.futures.wait_all([a, b]) == [1, 2]


def test_work_get_future(one_process_group):
    t = kiln.ones(3) * 2
    fut = dist.all_reduce(t, async_op=True).get_future()
    assert isinstance(fut, Future)
    assert fut.wait()[0] is t and t.tolist() == [2.0, 2.0, 2.0]
    assert fut.then(lambda f: f.value()[0].sum().item()).wait() == 6.0
    assert collect_all([fut]).wait()[0] is fut and wait_all([fut])[0][0] is t
    work = dist.all_reduce(kiln.ones(2), async_op=True)
    work.wait()
    assert work.get_future().done()  # the operation finished: done before anyone waited on the future


@pytest.mark.parametrize("hook", ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook"])
def test_default_hooks_on_a_bucket(one_process_group, hook):
    grads = kiln.tensor([0.5, -1.25, 3.0, 8.0])
    params = [kiln.nn.Parameter(kiln.zeros(2, 1)), kiln.nn.Parameter(kiln.zeros(2))]
    bucket = dist.GradBucket(0, grads, params, [0, 2], True)
    assert bucket.index() == 0 and bucket.is_last() and bucket.parameters() == params
    assert [tuple(g.shape) for g in bucket.gradients()] == [(2, 1), (2,)]
    result = getattr(default_hooks, hook)(None, bucket).wait()
    assert result.dtype == kiln.float32 and result.tolist() == [0.5, -1.25, 3.0, 8.0]  # exact in 16 bits


@pytest.mark.parametrize("wrapper", ["fp16_compress_wrapper", "bf16_compress_wrapper"])
def test_compress_wrappers(one_process_group, wrapper):
    bucket = dist.GradBucket(0, kiln.tensor([0.5, -1.25]), [kiln.nn.Parameter(kiln.zeros(2))], [0], True)
    result = getattr(default_hooks, wrapper)(default_hooks.allreduce_hook)(None, bucket).wait()
    low = kiln.float16 if wrapper.startswith("fp16") else kiln.bfloat16
    assert result.dtype == low and bucket.buffer() is result and result.tolist() == [0.5, -1.25]


def test_register_comm_hook_errors(one_process_group):
    ddp = kiln.nn.parallel.DistributedDataParallel(kiln.nn.Linear(2, 1))
    with pytest.raises(TypeError, match="Communication hook must be callable"):
        ddp.register_comm_hook(None, "allreduce")
    ddp.register_comm_hook(None, lambda state, bucket: bucket.buffer())
    with pytest.raises(RuntimeError, match="can only be called once"):
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    with pytest.raises(RuntimeError, match="a communication hook must return a kiln.futures.Future, got Tensor"):
        ddp(kiln.ones(1, 2)).sum().backward()
