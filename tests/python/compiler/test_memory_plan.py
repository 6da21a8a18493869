"""The compiled graph's memory plan (runtime/MemoryPlan.h, Note [The memory plan]): kernel outputs take dead
intermediates' buffers in place, never a graph input's or a storage an output or a later step still sees;
mode="reduce-overhead" lays kernel intermediates out in one arena, so a replay allocates only what the caller
gets back (the caching allocator's counters say so). Values equal eager throughout."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln import _C
from kiln.compiler._backends import _entries, compiled_graphs


def rand(*shape, seed=0):
    return kiln.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def allocations() -> int:
    return kiln.memory_stats()["allocation.all.allocated"]


def allocations_of(fn) -> int:
    before = allocations()
    fn()
    return allocations() - before


def assert_same(got, want):
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


def mlp_chain(x, w):
    """Matmuls (eager steps, fresh outputs) between pointwise kernels: each kernel's input dies there."""
    a = ((x @ w) * 2.0 + 1.0).relu()
    b = ((a @ w) * 0.5).tanh()
    return (b @ w).sigmoid()


def transposed_chain(x):
    """Kernels separated by views only: every intermediate is a kernel output."""
    a = (x * 2.0 + 1.0).sin()
    c = ((a.t() * 3.0).tanh() + 1.0).t()
    return (c * 0.5).exp()


def graph_of(compiled):
    (entry,) = _entries(compiled)
    return entry.program.graph


def test_kernel_outputs_take_dead_intermediates_in_place():
    x, w = rand(16, 32), rand(32, 32, seed=1)
    compiled = kiln.compile(mlp_chain)
    with kiln.no_grad():
        got = compiled(x, w)
        assert_same(got, mlp_chain(x, w))
        (graph,) = compiled_graphs(compiled)
        assert "3 in place" in graph.memory_plan
        unplanned = _C._runtime.compile(graph_of(compiled), runs_without_autograd=True, plan_memory=False)
        assert_same(unplanned.run([x, w])[0], got)
        planned_allocations = allocations_of(lambda: compiled(x, w))
        unplanned_allocations = allocations_of(lambda: unplanned.run([x, w]))
    assert planned_allocations == unplanned_allocations - 3  # each kernel wrote over its matmul's output


def test_graph_inputs_are_never_overwritten():
    x = rand(40)
    keep = x.numpy().copy()
    compiled = kiln.compile(lambda x: (x * 2.0).sin() + x)
    with kiln.no_grad():
        got = compiled(x)
    np.testing.assert_array_equal(x.numpy(), keep)
    assert "0 in place" in compiled_graphs(compiled)[0].memory_plan
    assert_same(got, (x * 2.0).sin() + x)


def test_a_storage_an_output_still_shows_is_not_overwritten():
    def f(x, w):
        a = x @ w
        return a.t(), (a * 3.0).exp()  # `a` is read by the kernel and returned through a view

    x, w = rand(8, 8), rand(8, 8, seed=1)
    compiled = kiln.compile(f)
    with kiln.no_grad():
        view, out = compiled(x, w)
        want_view, want_out = f(x, w)
    assert "0 in place" in compiled_graphs(compiled)[0].memory_plan
    assert_same(view, want_view)
    assert_same(out, want_out)


@pytest.mark.parametrize("fn, inputs", [
    (transposed_chain, lambda seed: [rand(24, 40, seed=seed)]),
    (mlp_chain, lambda seed: [rand(16, 32, seed=seed), rand(32, 32, seed=seed + 100)]),
], ids=["views-between-kernels", "matmuls-between-kernels"])
def test_reduce_overhead_replays_equal_eager_and_earlier_results_survive(fn, inputs):
    compiled = kiln.compile(fn, mode="reduce-overhead")
    with kiln.no_grad():
        calls = [(args, compiled(*args)) for args in (inputs(seed) for seed in range(4))]
        for args, got in calls:  # an arena buffer never reaches the caller: earlier outputs are intact
            assert_same(got, fn(*args))
    assert compiled_graphs(compiled)[0].arena_bytes > 0


def test_reduce_overhead_replay_allocates_only_the_output():
    x = rand(24, 40)
    default = kiln.compile(transposed_chain)
    reduce_overhead = kiln.compile(transposed_chain, mode="reduce-overhead")
    with kiln.no_grad():
        for _ in range(2):  # the capture, then the first replay, which allocates the arena
            default(x)
            reduce_overhead(x)
        (graph,) = compiled_graphs(reduce_overhead)
        assert "2 in the arena" in graph.memory_plan
        assert allocations_of(lambda: reduce_overhead(x)) == 1  # the returned tensor; no intermediate
        assert allocations_of(lambda: default(x)) == 3  # views keep their base alive: nothing in place
        assert_same(reduce_overhead(x), transposed_chain(x))


def test_reduce_overhead_training_steps_equal_eager():
    def make():
        kiln.manual_seed(0)
        return kiln.nn.Sequential(kiln.nn.Linear(12, 24), kiln.nn.GELU(), kiln.nn.Linear(24, 24), kiln.nn.Tanh(),
                                  kiln.nn.Linear(24, 3))

    eager, model = make(), make()
    compiled = kiln.compile(model, mode="reduce-overhead")
    x, target = rand(10, 12), rand(10, 3, seed=1)
    for m, run in ((eager, eager), (model, compiled)):
        opt = kiln.optim.SGD(m.parameters(), lr=0.1)
        for _ in range(5):
            opt.zero_grad()
            ((run(x) - target) ** 2).mean().backward()
            opt.step()
    for p, q in zip(eager.parameters(), model.parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert len(compiled_graphs(compiled)) == 2  # the forward and the backward graph, both compiled
