"""Random ops in graphs captured with symbolic sizes (issue 23 items 3 and 9; capture Note [Random ops
under capture], its symbolic form): each random op's generator starts where the previous one's ended,
read when the graph runs, and the graph returns where its last draw left the generator, so one graph
draws eager's numbers at every size and leaves the default generator where eager leaves it.

Every case is bit-exact: the replay runs the same random kernels from the same (seed, offset)."""

import numpy as np
import pytest

import kiln
import kiln.nn.functional as F

RNG = np.random.default_rng(23)
SIZES = (5, 7, 9, 7, 12)  # the batch extent of each call; one graph serves them all


def _randn(*shape, requires_grad=False):
    return kiln.tensor(RNG.standard_normal(shape).astype(np.float32), requires_grad=requires_grad)


def two_dropouts(x):
    return F.dropout(x, 0.3) * 2 + F.dropout(x.square(), 0.6)


def like_samplers(x):
    return x + kiln.rand_like(x) * kiln.randn_like(x)


def sized_sampler(x):
    """randn with the sizes read in Python (SymInts)."""
    n, d = x.shape
    return x * kiln.randn(n, d) + kiln.rand(n, 1)


def bernoulli_then_dropout(x):
    return kiln.bernoulli(x.sigmoid()) + F.dropout(x, 0.5)


def sampler_on_a_slice(x):
    """A random op on an intermediate of another shape, then arithmetic on its sizes."""
    head = x[:, :-1]
    return head * kiln.rand_like(head) + kiln.randn(x.shape[0] - 1, 1).sum()


CASES = {f.__name__: f for f in (two_dropouts, like_samplers, sized_sampler, bernoulli_then_dropout,
                                   sampler_on_a_slice)}


def _state():
    return kiln.random.get_rng_state().numpy()


@pytest.mark.parametrize("backend", ["eager", "default"])
@pytest.mark.parametrize("name", list(CASES))
def test_one_graph_draws_eagers_numbers_at_every_size(name, backend):
    fn = CASES[name]
    compiled = kiln.compile(fn, backend=backend, dynamic=True)
    for n in SIZES:
        x = _randn(n, 6)
        kiln.manual_seed(n)
        with kiln.no_grad():
            want = [fn(x) for _ in range(2)]  # two calls: fresh numbers each
        want_state = _state()
        kiln.manual_seed(n)
        with kiln.no_grad():
            got = [compiled(x) for _ in range(2)]
        assert not np.array_equal(got[0].numpy(), got[1].numpy())
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
        np.testing.assert_array_equal(_state(), want_state)  # the generator ends where eager leaves it
    assert compiled.num_captures == 1 and len(compiled.symbolic_entries) == 1, compiled.specialized_reasons


@pytest.mark.parametrize("backend", ["eager", "default"])
def test_dynamic_none_makes_a_random_graph_symbolic_after_one_size_change(backend):
    compiled = kiln.compile(two_dropouts, backend=backend)
    for n in (4, 6, 8, 11, 6):
        x = _randn(n, 5)
        kiln.manual_seed(1)
        with kiln.no_grad():
            want = two_dropouts(x)
        kiln.manual_seed(1)
        with kiln.no_grad():
            got = compiled(x)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert compiled.num_captures == 2 and len(compiled.symbolic_entries) == 1, compiled.specialized_reasons


@pytest.mark.parametrize("backend", ["eager", "default"])
def test_gradients_through_dropout_from_one_symbolic_graph(backend):
    # A call needing gradients: the joint graph's forward draws the mask, its backward reuses it.
    def f(x, w):
        return F.dropout(x @ w, 0.4).tanh()

    compiled = kiln.compile(f, backend=backend, dynamic=True)
    w = _randn(6, 3, requires_grad=True)
    w_c = w.detach().clone().requires_grad_(True)
    for n in SIZES:
        x = _randn(n, 6, requires_grad=True)
        x_c = x.detach().clone().requires_grad_(True)
        kiln.manual_seed(n)
        f(x, w).square().sum().backward()
        kiln.manual_seed(n)
        compiled(x_c, w_c).square().sum().backward()
        np.testing.assert_allclose(x_c.grad.numpy(), x.grad.numpy(), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(w_c.grad.numpy(), w.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert compiled.num_captures == 1 and len(compiled.symbolic_entries) == 1, compiled.specialized_reasons


def test_the_graph_reads_each_generator_offset_at_run_time():
    # The symbolic form: no relative offset is a literal; the graph returns the generator's end.
    compiled = kiln.compile(two_dropouts, backend="eager", dynamic=True)
    with kiln.no_grad():
        compiled(_randn(5, 6))
    text = str(compiled.symbolic_entries[0].entry.graph)
    assert text.count("capture::generator_offset") == 2
    assert "relative_offset=0" in text and "relative_offset=1" not in text
