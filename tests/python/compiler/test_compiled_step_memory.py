"""A compiled function with a backward frees each call's inputs and outputs: the joint
program's backward closure once held them, a reference cycle through the C++ autograd node
that Python's collector cannot see, so every training step leaked its batch and its loss
(found by scripts/soak.py; tests/python/models/test_soak.py soaks a whole model)."""

import gc

import kiln


def live() -> tuple[int, int]:
    gc.collect()
    stats = kiln.memory_stats()
    return stats["allocated_bytes.all.current"], stats["allocation.all.current"]


def test_compiled_training_steps_leave_no_tensor_behind():
    compiled = kiln.compile(lambda x, w: (x @ w).relu().sum())
    w = kiln.randn(8, 8, requires_grad=True)

    def step():
        compiled(kiln.randn(4, 8), w).backward()
        w.grad = None

    step()
    step()
    before = live()
    for _ in range(4):
        step()
    assert live() == before


def test_compiled_outputs_never_backpropagated_are_freed():
    compiled = kiln.compile(lambda x, w: (x * w).sum(dim=1))
    w = kiln.randn(16, requires_grad=True)
    out = compiled(kiln.randn(3, 16), w)
    del out
    before = live()
    for _ in range(4):
        out = compiled(kiln.randn(3, 16), w)
        assert out.requires_grad
        del out
    assert live() == before
