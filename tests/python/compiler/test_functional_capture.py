"""The functional form of a capture (issue 23 item 3): random ops take the
default generator's seed and offset as graph inputs, and in-place writes into
inputs are recorded out of place with a copy-back after the graph
(Note [Random ops under capture], Note [In-place ops under capture])."""

import numpy as np
import pytest

import kiln
from kiln.compiler import GraphBreak

RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 6)).astype(np.float32)


def _graph(compiled):
    (entry,) = compiled.cache.values()
    return entry.graph


RANDOM_FNS = {
    "dropout": lambda x: kiln.nn.functional.dropout(x, 0.5, training=True) * 2,
    "rand": lambda x: x + kiln.rand(4, 6),
    "randn": lambda x: x * kiln.randn(6),
    "bernoulli": lambda x: kiln.bernoulli(kiln.sigmoid(x)) + x,
    "two_draws": lambda x: kiln.randn(4, 6) + kiln.rand(6) * x,
}


@pytest.mark.parametrize("name", sorted(RANDOM_FNS))
def test_random_ops_draw_fresh_numbers_equal_to_eager_under_the_same_seed(name):
    fn = RANDOM_FNS[name]
    x = kiln.tensor(X)
    kiln.manual_seed(3)
    want = [fn(x) for _ in range(4)]
    want_state = kiln.get_rng_state()
    compiled = kiln.compile(fn, backend="eager", fullgraph=True)
    kiln.manual_seed(3)
    got = [compiled(x) for _ in range(4)]  # capture, then three replays
    assert compiled.num_captures == 1
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    assert not np.array_equal(got[2].numpy(), got[3].numpy())  # fresh numbers every replay
    # the replay leaves the generator where eager leaves it
    np.testing.assert_array_equal(kiln.get_rng_state().numpy(), want_state.numpy())
    graph = str(_graph(compiled))
    assert "%rng_seed : int" in graph and "%rng_offset : int" in graph
    assert "capture::philox_generator" in graph


def test_a_graph_without_random_ops_takes_no_generator_inputs():
    compiled = kiln.compile(lambda x: x * 2, backend="eager")
    compiled(kiln.tensor(X))
    assert "rng_seed" not in str(_graph(compiled))


def test_random_op_with_an_explicit_generator_is_a_graph_break():
    gen = kiln.Generator().manual_seed(1)
    compiled = kiln.compile(lambda x: x + kiln.rand(4, 6, generator=gen), backend="eager", fullgraph=True)
    with pytest.raises(GraphBreak, match="explicit Generator"):
        compiled(kiln.tensor(X))


def test_inplace_on_an_input_is_recorded_out_of_place_and_copied_back():
    def f(x, y):
        x.add_(y)
        x.mul_(3)
        return x * 2

    compiled = kiln.compile(f, backend="eager", fullgraph=True)
    for _ in range(3):
        xe, ye = kiln.tensor(X), kiln.tensor(X[::-1].copy())
        xc, yc = kiln.tensor(X), kiln.tensor(X[::-1].copy())
        want = f(xe, ye)
        got = compiled(xc, yc)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        np.testing.assert_array_equal(xc.numpy(), xe.numpy())  # visible after the call
    assert compiled.num_captures == 1
    graph = _graph(compiled)
    assert graph.node_kinds == ["kiln::add.Tensor", "kiln::mul.Scalar", "kiln::mul.Scalar"]
    assert graph.num_outputs == 2  # the result, then x's new value copied back
    (entry,) = compiled.cache.values()
    assert entry.program.copy_back == [0]


def test_inplace_on_a_fresh_intermediate_needs_no_copy_back():
    def f(x):
        z = x * 2
        z.add_(1)
        return z

    compiled = kiln.compile(f, backend="eager", fullgraph=True)
    x = kiln.tensor(X)
    compiled(x)
    np.testing.assert_array_equal(compiled(x).numpy(), f(x).numpy())
    (entry,) = compiled.cache.values()
    assert entry.program.copy_back == [] and entry.graph.num_outputs == 1


def test_batchnorm_buffers_after_compiled_calls_equal_eager():
    def make():
        kiln.manual_seed(0)
        return kiln.nn.Sequential(kiln.nn.Linear(6, 5), kiln.nn.BatchNorm1d(5))

    eager, model = make(), make()
    compiled = kiln.compile(model, backend="eager", fullgraph=True)
    x = kiln.tensor(X)
    for _ in range(3):
        np.testing.assert_array_equal(compiled(x).detach().numpy(), eager(x).detach().numpy())
    for (name, got), (_, want) in zip(model.named_buffers(), eager.named_buffers()):
        np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=name)


def test_an_inplace_write_through_a_view_of_an_input_stays_in_place_and_is_named_impure():
    def through_view(x):
        x[0].add_(1)
        return x * 2

    def functional(x):
        x.add_(1)
        return x * 2

    compiled = kiln.compile(through_view, backend="eager", fullgraph=True)
    xe, xc = kiln.tensor(X), kiln.tensor(X)
    for _ in range(2):
        np.testing.assert_array_equal(compiled(xc).numpy(), through_view(xe).numpy())
        np.testing.assert_array_equal(xc.numpy(), xe.numpy())
    (entry,) = compiled.cache.values()
    assert entry.graph.node_kinds == ["kiln::select.int", "kiln::add_.Scalar", "kiln::mul.Scalar"]
    assert "writes in place" in entry.program.impure_reason
    pure = kiln.compile(functional, backend="eager", fullgraph=True)
    pure(kiln.tensor(X))
    (entry,) = pure.cache.values()
    assert entry.program.impure_reason is None


@pytest.mark.parametrize("num_classes", [5, -1])
def test_one_hot_replays_with_each_calls_indices(num_classes):
    # one_hot reads its indices' values; it was a composite allocating outside the
    # dispatcher, so capture recorded none of it and a replay returned the first
    # call's one-hot rows. It is now one recorded op.
    def f(x):
        return kiln.nn.functional.one_hot(x, num_classes).float() * 2

    compiled = kiln.compile(f)
    first, second = kiln.tensor([0, 1, 2]), kiln.tensor([4, 3, 2])
    with kiln.no_grad():
        compiled(first)
        got = compiled(second)
    assert kiln.equal(got, f(second))
    assert "kiln::one_hot" in str(_graph(compiled))
