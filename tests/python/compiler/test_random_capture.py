"""Random ops inside captured graphs (issue 23 item 3, Note [Random ops under capture]): dropout,
bernoulli_, the *_like draws and normal_/uniform_ in a compiled forward, a compiled forward +
backward and a compiled whole training step give eager's values under the same generator state,
draw fresh numbers on every call (the seed and offset are graph inputs read from the default
generator at each call, never one draw baked in) and leave the generator where eager leaves it."""

import copy

import numpy as np
import pytest

import kiln
import kiln.nn.functional as F

BACKENDS = ("eager", "default")
CALLS = 4

RANDOM_FNS = {
    "dropout": lambda x: F.dropout(x, 0.3, training=True) + 1,
    "two_dropouts": lambda x: F.dropout(F.dropout(x, 0.2, training=True).relu(), 0.5, training=True),
    "bernoulli_": lambda x: x.clone().bernoulli_(0.4) * x,
    "bernoulli": lambda x: kiln.bernoulli(kiln.sigmoid(x)) - x,
    "rand_like": lambda x: x + kiln.rand_like(x),
    "randn_like": lambda x: x * kiln.randn_like(x),
    "normal_": lambda x: x.clone().normal_() + x,
    "uniform_": lambda x: x.clone().uniform_(-1, 2) + x,
}


def _same(got, want):
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())


def _entries(compiled):
    return list(compiled.cache.values())


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(RANDOM_FNS))
def test_compiled_forward_draws_eagers_numbers_and_advances_the_generator_as_eager(name, backend):
    fn = RANDOM_FNS[name]
    xs = [kiln.randn(8, 16) for _ in range(CALLS)]
    kiln.manual_seed(7)
    want = [fn(x) for x in xs]
    want_state = kiln.get_rng_state()
    compiled = kiln.compile(fn, backend=backend, fullgraph=True)
    kiln.manual_seed(7)
    got = [compiled(x) for x in xs]  # capture, then replays
    assert compiled.num_captures == 1
    for g, w in zip(got, want):
        _same(g, w)
    np.testing.assert_array_equal(kiln.get_rng_state().numpy(), want_state.numpy())
    # Reseeding between calls is seen by the replay: the seed is read at each call.
    for seed in (3, 3, 12):
        kiln.manual_seed(seed)
        w = fn(xs[0])
        kiln.manual_seed(seed)
        _same(compiled(xs[0]), w)
    graph = str(_entries(compiled)[0].graph)
    assert "%rng_seed : int" in graph and "%rng_offset : int" in graph


class _DropoutMLP(kiln.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = kiln.nn.Linear(16, 32)
        self.drop = kiln.nn.Dropout(0.3)
        self.l2 = kiln.nn.Linear(32, 4)

    def forward(self, x):
        return self.l2(self.drop(F.relu(self.l1(x))))


def _models():
    kiln.manual_seed(0)
    model = _DropoutMLP()
    return model, copy.deepcopy(model)


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_forward_and_backward_with_dropout_equal_eager_values_and_grads(backend):
    eager, model = _models()
    compiled = kiln.compile(model, backend=backend, fullgraph=True)
    for i in range(CALLS):
        x = kiln.randn(8, 16)
        kiln.manual_seed(100 + i)
        want = eager(x).square().mean()
        want.backward()
        after_eager = kiln.rand(3)
        kiln.manual_seed(100 + i)
        got = compiled(x).square().mean()
        got.backward()
        _same(got, want)
        _same(kiln.rand(3), after_eager)
        for (name, p), (_, q) in zip(eager.named_parameters(), model.named_parameters()):
            np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    calls = compiled._compiled_call
    assert calls.num_captures == 1 and not calls.break_reasons


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_training_step_with_dropout_equals_eager(backend):
    eager, model = _models()
    opt_eager = kiln.optim.AdamW(eager.parameters(), lr=1e-2)
    opt = kiln.optim.AdamW(model.parameters(), lr=1e-2)

    def step(m, o, x, y):
        o.zero_grad()
        loss = F.mse_loss(m(x), y)
        loss.backward()
        o.step()
        return loss

    compiled = kiln.compile(step, backend=backend)
    rng = np.random.default_rng(3)
    for i in range(6):
        x = kiln.tensor(rng.standard_normal((8, 16)).astype(np.float32))
        y = kiln.tensor(rng.standard_normal((8, 4)).astype(np.float32))
        kiln.manual_seed(200 + i)
        want = step(eager, opt_eager, x, y)
        after_eager = kiln.rand(3)
        kiln.manual_seed(200 + i)
        got = compiled(model, opt, x, y)
        _same(kiln.rand(3), after_eager)
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
        for (name, p), (_, q) in zip(eager.named_parameters(), model.named_parameters()):
            np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
            np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    assert not compiled.break_reasons
    (entry,) = _entries(compiled)
    graph = str(entry.graph)
    assert "capture::philox_generator" in graph and "%rng_seed : int" in graph
