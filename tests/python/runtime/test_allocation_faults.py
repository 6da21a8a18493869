"""Fault injection in the CPU caching allocator (Note [Failing the N-th allocation],
eager/memory/CachingAllocator.cpp): for each op, every allocation it makes is failed in
turn. Each failure must surface as kiln.OutOfMemoryError (a RuntimeError, like
torch.OutOfMemoryError), leak nothing (the allocator's live bytes and allocation count
return to their baseline), leave an in-place op's destination unwritten, and the next
call must work."""

import gc

import numpy as np
import pytest

import kiln

INJECTED = "failure injected by fail_nth_allocation"


def live() -> tuple[int, int]:
    """Live bytes and live allocations of the CPU caching allocator."""
    gc.collect()
    stats = kiln.memory_stats()
    return stats["allocated_bytes.all.current"], stats["allocation.all.current"]


def allocations_made_by(fn) -> int:
    before = kiln.memory_stats()["allocation.all.allocated"]
    result = fn()
    count = kiln.memory_stats()["allocation.all.allocated"] - before
    del result
    return count


def as_numpy(result):
    if isinstance(result, (tuple, list)):
        return [as_numpy(r) for r in result]
    return result.detach().numpy().copy()


@pytest.fixture(scope="module", autouse=True)
def frozen_heap():
    """gc.collect() in live() scans only what this module makes: what exists before is frozen."""
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


@pytest.fixture(autouse=True)
def disarmed():
    """No test leaves a failure armed for the next one."""
    yield
    kiln._C._fail_nth_allocation(0)


def test_hook_is_off_by_default_and_disarms_after_firing():
    assert kiln._C._allocations_until_failure() == 0
    kiln._C._fail_nth_allocation(2)
    assert kiln._C._allocations_until_failure() == 2
    a = kiln.ones(4)
    assert kiln._C._allocations_until_failure() == 1
    ooms = kiln.memory_stats()["num_ooms"]
    with pytest.raises(kiln.OutOfMemoryError, match=INJECTED):
        kiln.ones(4)
    assert kiln.memory_stats()["num_ooms"] == ooms + 1
    assert kiln._C._allocations_until_failure() == 0
    assert (kiln.ones(4) + a).tolist() == [2.0] * 4


def test_out_of_memory_error_is_a_runtime_error():
    assert issubclass(kiln.OutOfMemoryError, RuntimeError)
    with pytest.raises(ValueError, match="n must be >= 0"):
        kiln._C._fail_nth_allocation(-1)


def _inputs():
    gen = np.random.default_rng(0)
    a = kiln.tensor(gen.standard_normal((8, 16)).astype(np.float32))
    b = kiln.tensor(gen.standard_normal((16, 8)).astype(np.float32))
    c = kiln.tensor(gen.standard_normal((8, 16)).astype(np.float32))
    idx = kiln.tensor([0, 3, 5, 7])
    return a, b, c, idx


# Functional ops: each is run once unarmed for the reference, then with each of its allocations failed.
EAGER_OPS = {
    "add": lambda a, b, c, idx: a + c,
    "matmul": lambda a, b, c, idx: a @ b,
    "sum_dim": lambda a, b, c, idx: a.sum(dim=1),
    "softmax": lambda a, b, c, idx: kiln.softmax(a, dim=-1),
    "cat": lambda a, b, c, idx: kiln.cat([a, c, a], dim=0),
    "advanced_index": lambda a, b, c, idx: a[idx, 1:],
    "transpose_contiguous": lambda a, b, c, idx: a.t().contiguous() * 2,
    "sort": lambda a, b, c, idx: kiln.sort(a, dim=1),
    "layer_norm": lambda a, b, c, idx: kiln.nn.functional.layer_norm(a, (16,)),
}


@pytest.mark.parametrize("name", sorted(EAGER_OPS))
def test_every_allocation_of_an_eager_op_can_fail(name):
    op = EAGER_OPS[name]
    inputs = _inputs()
    expected = as_numpy(op(*inputs))
    count = allocations_made_by(lambda: op(*inputs))
    assert count >= 1
    baseline = live()
    for n in range(1, count + 1):
        kiln._C._fail_nth_allocation(n)
        with pytest.raises(kiln.OutOfMemoryError, match=INJECTED):
            op(*inputs)
        assert kiln._C._allocations_until_failure() == 0, f"allocation {n} of {count} was not reached"
        assert live() == baseline, f"failing allocation {n} of {count} leaked"
        np.testing.assert_array_equal(as_numpy(op(*inputs)), expected) if not isinstance(expected, list) else [
            np.testing.assert_array_equal(got, want) for got, want in zip(as_numpy(op(*inputs)), expected)]


INPLACE_OPS = {
    # a float64 operand makes the in-place op compute in float64: a temporary, then the write.
    "mul_promoting": lambda a, c: a.mul_(c.double()),
    "add_broadcast": lambda a, c: a.add_(c[0]),
    "index_put_": lambda a, c: a.index_put_((kiln.tensor([1, 2]),), c[:2]),
    "copy_transposed": lambda a, c: a.copy_(c.t().contiguous().t()),
}


@pytest.mark.parametrize("name", sorted(INPLACE_OPS))
def test_a_failed_in_place_op_leaves_its_destination_unwritten(name):
    op = INPLACE_OPS[name]
    a, _, c, _ = _inputs()
    original = as_numpy(a)
    expected = as_numpy(op(a.clone(), c))
    count = allocations_made_by(lambda: op(a.clone(), c)) - 1  # the clone's own allocation
    baseline = live()
    for n in range(1, count + 1):
        target = a.clone()
        kiln._C._fail_nth_allocation(n)
        with pytest.raises(kiln.OutOfMemoryError, match=INJECTED):
            op(target, c)
        np.testing.assert_array_equal(as_numpy(target), original, err_msg=f"allocation {n} of {count}")
        del target
        assert live() == baseline, f"failing allocation {n} of {count} leaked"
    np.testing.assert_array_equal(as_numpy(op(a.clone(), c)), expected)


def _train_step(model, x, target):
    model.zero_grad()
    loss = ((model(x) - target) ** 2).mean()
    loss.backward()
    return [p.grad.detach().numpy().copy() for p in model.parameters()]


def test_every_allocation_of_a_backward_pass_can_fail():
    kiln.manual_seed(0)
    model = kiln.nn.Sequential(kiln.nn.Linear(16, 32), kiln.nn.GELU(), kiln.nn.LayerNorm(32), kiln.nn.Linear(32, 4))
    x = kiln.randn(8, 16)
    target = kiln.randn(8, 4)
    expected = _train_step(model, x, target)
    model.zero_grad(set_to_none=True)
    count = allocations_made_by(lambda: _train_step(model, x, target))
    model.zero_grad(set_to_none=True)
    baseline = live()
    for n in range(1, count + 1):
        kiln._C._fail_nth_allocation(n)
        with pytest.raises(kiln.OutOfMemoryError, match=INJECTED):
            _train_step(model, x, target)
        assert kiln._C._allocations_until_failure() == 0
        model.zero_grad(set_to_none=True)
        assert live() == baseline, f"failing allocation {n} of {count} leaked"
    for got, want in zip(_train_step(model, x, target), expected):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def _compiled_block(x, w, b):
    h = kiln.nn.functional.gelu(x @ w + b)
    return (h * h).sum(dim=-1) + h.mean()


def test_every_allocation_of_a_compiled_replay_can_fail():
    compiled = kiln.compile(_compiled_block)
    gen = np.random.default_rng(1)
    x, w, b = (kiln.tensor(gen.standard_normal(shape).astype(np.float32)) for shape in ((8, 16), (16, 32), (32,)))
    expected = as_numpy(compiled(x, w, b))  # the first call captures and compiles
    np.testing.assert_allclose(expected, as_numpy(_compiled_block(x, w, b)), rtol=1e-5, atol=1e-5)
    count = allocations_made_by(lambda: compiled(x, w, b))
    baseline = live()
    for n in range(1, count + 1):
        kiln._C._fail_nth_allocation(n)
        with pytest.raises(kiln.OutOfMemoryError, match=INJECTED):
            compiled(x, w, b)
        assert kiln._C._allocations_until_failure() == 0
        assert live() == baseline, f"failing allocation {n} of {count} leaked"
        # The first call captures (and may run unfused); replays run the fused kernels: equal to rounding.
        np.testing.assert_allclose(as_numpy(compiled(x, w, b)), expected, rtol=1e-5, atol=1e-5)
