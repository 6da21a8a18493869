"""A compiled function with a backward frees each call's inputs and outputs: the joint
program's backward closure once held them, a reference cycle through the C++ autograd node
that Python's collector cannot see, so every training step leaked its batch and its loss
(found by scripts/soak.py; tests/python/models/test_soak.py soaks a whole model)."""

import gc
import weakref

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


def test_a_module_compiled_in_place_is_freed_with_its_cached_calls():
    # The C++ module guard holds each module's instance __dict__, which holds the compiled call that holds the
    # guard: the collector frees that cycle only if the guard visits every reference it owns.
    model = kiln.nn.Sequential(kiln.nn.Linear(2, 8), kiln.nn.ReLU(), kiln.nn.Linear(8, 2))
    before = live()
    model.compile(backend="eager")
    x = kiln.randn(3, 2)
    for _ in range(3):
        model(x)
    assert sum(model._compiled_call_impl._fast_path_hits.values()) == 2  # the C++ hit path, with its module guard
    alive = weakref.ref(model)
    del model, x
    gc.collect()
    assert alive() is None
    assert live()[1] <= before[1] - 4  # its two weights and two biases are gone too
