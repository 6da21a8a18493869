"""Whole training steps with shapes that change (issue 23 items 5 and 9; Note [Symbolic training steps] in
kiln/compiler/_symbolic_training.py): a compiled function calling zero_grad(), loss.backward() and
optimizer.step() is captured once with symbolic sizes (dynamic=True), or after one size change
(dynamic=None), and that one graph serves every later batch size / sequence length. Each case runs a
twin model and optimizer eagerly on the same batches and compares losses, parameters, gradients and
optimizer state after every step; the number of captures proves the reuse (the first call of a
training step runs eagerly to observe it: Note [Capturing a training step]).

Tolerance: the replay runs the eager kernels (backend "eager") or fused kernels of the same math
("default"); the optimizer update is the capturable form of the fused one, op for op."""

import numpy as np
import pytest

import kiln
import kiln.nn.functional as F
from kiln import nn

RTOL, ATOL = 1e-4, 1e-5


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))

    def forward(self, x):
        return self.net(x)


class TinyGpt(nn.Module):
    """nanoGPT's shape: token and position embeddings, one causal self-attention block with the mask
    sliced to [:T, :T] and C // h head views, a tied head, next-token cross entropy over B * T."""

    def __init__(self, vocab=11, C=16, heads=4, block=32):
        super().__init__()
        self.tok = nn.Embedding(vocab, C)
        self.pos = nn.Embedding(block, C)
        self.ln = nn.LayerNorm(C)
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)
        self.heads = heads
        self.register_buffer("bias", kiln.tril(kiln.ones(block, block)).view(1, 1, block, block))

    def forward(self, idx):
        B, T = idx.size()
        x = self.tok(idx) + self.pos(kiln.arange(0, T))
        C = x.size(-1)
        q, k, v = self.c_attn(self.ln(x)).split(C, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (C // self.heads) ** 0.5)
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.c_proj(y)
        return x @ self.tok.weight.t()


def _mlp_batch(rng, n):
    return (kiln.tensor(rng.standard_normal((n, 8)).astype(np.float32)),
            kiln.tensor(rng.standard_normal((n, 4)).astype(np.float32)))


def _mlp_loss(model, x, y):
    return (model(x) - y).square().mean()


def _gpt_batch(rng, shape):
    B, T = shape
    idx = rng.integers(0, 11, (B, T + 1))
    return kiln.tensor(idx[:, :-1]), kiln.tensor(idx[:, 1:])


def _gpt_loss(model, idx, targets):
    logits = model(idx)
    B, T, V = logits.shape
    return F.cross_entropy(logits.view(B * T, V), targets.reshape(B * T))


# name -> (model class, optimizer factory, batch maker, loss, the size of each call)
CASES = {
    "mlp_adamw_batch": (Mlp, lambda ps: kiln.optim.AdamW(ps, lr=1e-2, weight_decay=0.1), _mlp_batch, _mlp_loss,
                        [5, 5, 6, 7, 9, 3, 12, 6]),
    "mlp_sgd_momentum_batch": (Mlp, lambda ps: kiln.optim.SGD(ps, lr=0.05, momentum=0.9), _mlp_batch, _mlp_loss,
                               [5, 5, 6, 7, 9, 3, 12, 6]),
    "gpt_adam_batch_and_seq_len": (TinyGpt, lambda ps: kiln.optim.Adam(ps, lr=1e-2), _gpt_batch, _gpt_loss,
                                   [(2, 5), (2, 5), (3, 6), (2, 9), (5, 7), (3, 12), (2, 6)]),
}


def _close(got, want):
    if want is None:
        assert got is None
        return
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=RTOL, atol=ATOL)


# How the compiled step is called: its two tensors positionally, by keyword, in a tuple, in a dict.
CALLS = {
    "positional": (lambda step, a, b: step(a, b), lambda a, b: (a, b)),
    "keyword": (lambda step, a, b: step(a=a, b=b), lambda a, b: (a, b)),
    "nested_tuple": (lambda step, a, b: step((a, [b])), lambda pair, _=None: (pair[0], pair[1][0])),
    "dict": (lambda step, a, b: step({"a": a, "b": b}, scale=1.0), lambda d, scale=1.0: (d["a"], d["b"])),
}


def _run(name, backend, dynamic, call="positional"):
    model_cls, make_opt, batch, loss_fn, sizes = CASES[name]
    call_step, unpack = CALLS[call]
    kiln.manual_seed(0)
    model = model_cls()
    twin = model_cls()
    twin.load_state_dict(model.state_dict())
    opt, twin_opt = make_opt(model.parameters()), make_opt(twin.parameters())

    @kiln.compile(backend=backend, dynamic=dynamic)
    def step(*args, **kwargs):
        a, b = unpack(*args, **kwargs)
        opt.zero_grad()
        loss = loss_fn(model, a, b)
        loss.backward()
        opt.step()
        return loss

    rng = np.random.default_rng(5)
    for size in sizes:
        a, b = batch(rng, size)
        loss = call_step(step, a, b)
        twin_opt.zero_grad()
        twin_loss = loss_fn(twin, a, b)
        twin_loss.backward()
        twin_opt.step()
        _close(loss, twin_loss)
        for p, q in zip(model.parameters(), twin.parameters()):
            _close(p, q)
            _close(p.grad, q.grad)
            for key, value in twin_opt.state[q].items():
                if isinstance(value, kiln.Tensor):
                    _close(opt.state[p][key], value)
    return step


@pytest.mark.parametrize("backend", ["eager", "default"])
@pytest.mark.parametrize("name", list(CASES))
def test_dynamic_true_training_step_is_one_graph_for_every_size(name, backend):
    step = _run(name, backend, True)
    # The observing eager call, then one symbolic capture every later size reuses.
    assert step.num_captures == 2, (step.specialized_reasons, step.recompile_reasons)
    assert len(step.symbolic_entries) == 1 and not step.specialized_reasons


@pytest.mark.parametrize("backend", ["eager", "default"])
@pytest.mark.parametrize("name", list(CASES))
def test_dynamic_none_training_step_becomes_symbolic_after_one_size_change(name, backend):
    step = _run(name, backend, None)
    # Observe, capture for the first size, capture symbolically at the first new size; then reuse.
    assert step.num_captures == 3, (step.specialized_reasons, step.recompile_reasons)
    assert len(step.symbolic_entries) == 1 and not step.specialized_reasons


@pytest.mark.parametrize("call", ["keyword", "nested_tuple", "dict"])
@pytest.mark.parametrize("name", ["mlp_adamw_batch", "gpt_adam_batch_and_seq_len"])
def test_a_training_step_called_with_keyword_or_nested_tensors_is_one_graph_for_every_size(name, call):
    step = _run(name, "eager", True, call)
    assert step.num_captures == 2, (step.specialized_reasons, step.recompile_reasons)
    assert len(step.symbolic_entries) == 1 and not step.specialized_reasons
    if name == "mlp_adamw_batch":  # its batch size 6 comes again: the C++ guard check (keywords, nesting) serves it
        assert sum(step._fast_path_hits.values()) >= 1


def test_dynamic_false_training_step_captures_each_size():
    step = _run("mlp_adamw_batch", "eager", False)
    assert step.num_captures == 1 + len({5, 6, 7, 9, 3, 12}) and not step.symbolic_entries


def test_a_training_step_whose_backward_is_no_expression_of_the_symbols_keeps_its_sizes():
    # var's backward divides by N - 1, a Scalar the size table never reads as a symbol: the check that
    # reruns the step eagerly at other sizes sees other results, so each capture keeps its exact sizes
    # (and after two failed checks the function stops trying). Every step still equals eager's.
    kiln.manual_seed(0)
    model, twin = Mlp(), Mlp()
    twin.load_state_dict(model.state_dict())
    opt, twin_opt = kiln.optim.SGD(model.parameters(), lr=0.1), kiln.optim.SGD(twin.parameters(), lr=0.1)

    def loss_of(m, x):
        return m(x).var(0).sum()

    @kiln.compile(backend="eager", dynamic=True)
    def step(x):
        opt.zero_grad()
        loss = loss_of(model, x)
        loss.backward()
        opt.step()
        return loss

    rng = np.random.default_rng(2)
    for n in (5, 5, 6, 7, 9, 6):
        x = kiln.tensor(rng.standard_normal((n, 8)).astype(np.float32))
        loss = step(x)
        twin_opt.zero_grad()
        twin_loss = loss_of(twin, x)
        twin_loss.backward()
        twin_opt.step()
        _close(loss, twin_loss)
        for p, q in zip(model.parameters(), twin.parameters()):
            _close(p, q)
    assert not step.symbolic_entries
    assert "differ from eager's at other sizes" in step.specialized_reasons[0]
    assert step.num_backward_checks_failed == 2


def test_the_check_leaves_no_trace():
    # The check reruns the function eagerly and the graph at other sizes: the parameters, gradients,
    # optimizer state and generator it leaves are those of the capturing call alone.
    kiln.manual_seed(0)
    model, twin = Mlp(), Mlp()
    twin.load_state_dict(model.state_dict())
    opt, twin_opt = kiln.optim.Adam(model.parameters(), lr=0.01), kiln.optim.Adam(twin.parameters(), lr=0.01)

    @kiln.compile(backend="eager", dynamic=True)
    def step(x, y):
        opt.zero_grad()
        loss = _mlp_loss(model, F.dropout(x, 0.2), y)
        loss.backward()
        opt.step()
        return loss

    rng = np.random.default_rng(3)
    for n in (5, 5, 7):
        x, y = _mlp_batch(rng, n)
        kiln.manual_seed(n)
        loss = step(x, y)
        state = kiln.random.get_rng_state().numpy()
        kiln.manual_seed(n)
        twin_opt.zero_grad()
        twin_loss = _mlp_loss(twin, F.dropout(x, 0.2), y)
        twin_loss.backward()
        twin_opt.step()
        np.testing.assert_array_equal(state, kiln.random.get_rng_state().numpy())
        _close(loss, twin_loss)
        for p, q in zip(model.parameters(), twin.parameters()):
            _close(p, q)
            _close(opt.state[p]["exp_avg_sq"], twin_opt.state[q]["exp_avg_sq"])
            assert int(opt.state[p]["step"]) == int(twin_opt.state[q]["step"])
    assert step.num_captures == 2 and len(step.symbolic_entries) == 1, step.specialized_reasons
