"""kiln.compile with shapes that change (issue 23 item 9; Note [Symbolic capture] in
kiln/compiler/_symbolic.py).

Each case runs compiled over several sizes and is compared with eager (values, and gradients
where the inputs require them), with the number of captures asserted: dynamic=None captures
once, again at the first size change (then symbolic in the dims that changed), dynamic=True
captures symbolically from the start, dynamic=False specialises every shape."""

import math
import warnings

import numpy as np
import pytest

import kiln
from kiln import _C, nn
from kiln.compiler._symbolic import SymInt

RNG = np.random.default_rng(9)


def _randn(*shape, requires_grad=False):
    return kiln.tensor(RNG.standard_normal(shape).astype(np.float32), requires_grad=requires_grad)


def _assert_close(actual, expected, tol=1e-5):
    assert tuple(actual.shape) == tuple(expected.shape)
    assert actual.dtype == expected.dtype
    np.testing.assert_allclose(actual.detach().numpy(), expected.detach().numpy(), rtol=tol, atol=tol)


def _captures(compiled):
    return getattr(compiled, "_compiled_call", compiled).num_captures


# --- the functions and modules ---------------------------------------------------------------

def heads_view(x):
    """nanoGPT's head split: B, T, C = x.size(); x.view(B, T, h, C // h)."""
    B, T, C = x.size()
    h = 4
    y = x.view(B, T, h, C // h).transpose(1, 2)
    return (y * 2).sum(-1).reshape(B, h * T)


def reductions(x):
    """Reductions over the dynamic dimension and beside it."""
    return x.sum(0) + x.mean(0) * x.amax(0), x.softmax(0), x.var(dim=1, keepdim=True) - x.mean()


def sizes_in_arithmetic(x):
    """Integer arithmetic on sizes feeding int[] arguments (expand, new_zeros, reshape, narrow)."""
    n, d = x.shape
    z = x.new_zeros(n, 2 * d) + 1
    e = x[:, :1].expand(n, d)
    half = x.reshape(n * d // 2, 2)
    return z.narrow(1, 0, d) * e + half.sum(1).reshape(n, d // 2).sum(1, keepdim=True)


def control_flow(x):
    """A comparison on a size decides Python control flow: a guard."""
    if x.shape[0] > 4:
        return x * 2
    return x - 1


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))

    def forward(self, x):
        return self.net(x)


class CausalSelfAttention(nn.Module):
    """nanoGPT's attention: B, T, C = x.size(), head views, the causal mask sliced to [:T, :T]."""

    def __init__(self, C=16, heads=4, block=32):
        super().__init__()
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)
        self.heads = heads
        self.register_buffer("bias", kiln.tril(kiln.ones(block, block)).view(1, 1, block, block))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(16)
        self.attn = CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(16)
        self.mlp = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 16))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


def _flat(out):
    return list(out) if isinstance(out, tuple) else [out]


# name -> (callable or module factory, input shapes per call,
#          expected captures for dynamic=None, True, False)
CASES = {
    "mlp_batch": (Mlp, [(4, 8), (8, 8), (16, 8), (3, 8)], (2, 1, 4)),
    "gpt_block_seq_len": (Block, [(2, 8, 16), (2, 12, 16), (2, 16, 16), (2, 5, 16)], (2, 1, 4)),
    "gpt_block_batch_and_seq": (Block, [(2, 8, 16), (3, 8, 16), (3, 9, 16), (5, 7, 16)], (3, 1, 4)),
    "heads_view": (lambda: heads_view, [(2, 8, 16), (3, 8, 16), (5, 8, 16), (6, 8, 16)], (2, 1, 4)),
    "reductions": (lambda: reductions, [(4, 6), (7, 6), (9, 6), (5, 6)], (2, 1, 4)),
    "sizes_in_arithmetic": (lambda: sizes_in_arithmetic, [(4, 6), (8, 6), (3, 6), (5, 6)], (2, 1, 4)),
    # x.shape[0] > 4 guards: 2 (static), 3 (symbolic, s0 <= 4), 8 (guard fails: s0 > 4), 9, 4 hit.
    "control_flow": (lambda: control_flow, [(2, 3), (3, 3), (8, 3), (9, 3), (4, 3)], (3, 2, 5)),
}


def _make(factory):
    kiln.manual_seed(0)
    made = factory()
    return made


@pytest.mark.parametrize("dynamic", [None, True, False], ids=["dynamic_None", "dynamic_True", "dynamic_False"])
@pytest.mark.parametrize("backend", ["eager", "default"])
@pytest.mark.parametrize("name", list(CASES))
def test_values_match_eager_and_captures_are_counted(name, backend, dynamic):
    factory, shapes, expected = CASES[name]
    fn = _make(factory)
    compiled = kiln.compile(fn, backend=backend, dynamic=dynamic)
    with kiln.no_grad():
        for shape in shapes:
            x = _randn(*shape)
            for got, want in zip(_flat(compiled(x)), _flat(fn(x))):
                if isinstance(want, int):
                    assert got == want
                else:
                    _assert_close(got, want)
    assert _captures(compiled) == expected[[None, True, False].index(dynamic)]


@pytest.mark.parametrize("backend", ["eager", "default"])
@pytest.mark.parametrize("name", ["mlp_batch", "gpt_block_seq_len", "gpt_block_batch_and_seq", "heads_view",
                                  "reductions"])
def test_gradients_match_eager_across_sizes_from_one_symbolic_graph(name, backend):
    # A call whose outputs need gradients records its backward with the sizes the Engine's formulas pass
    # matched to symbols (Note [Symbolic sizes in the backward]): it captures as often as the same call
    # without gradients (dynamic=None), values and gradients as eager's.
    factory, shapes, captures = CASES[name]
    fn = _make(factory)
    compiled = kiln.compile(fn, backend=backend)
    params = list(fn.parameters()) if isinstance(fn, nn.Module) else []
    for shape in shapes:
        x_eager, x_compiled = _randn(*shape, requires_grad=True), None
        x_compiled = x_eager.detach().clone().requires_grad_(True)
        for p in params:
            p.grad = None
        loss = sum(o.square().sum() for o in _flat(fn(x_eager)) if not isinstance(o, int))
        loss.backward()
        want = [x_eager.grad] + [p.grad.clone() for p in params]
        for p in params:
            p.grad = None
        loss_c = sum(o.square().sum() for o in _flat(compiled(x_compiled)) if not isinstance(o, int))
        loss_c.backward()
        _assert_close(loss_c, loss, 1e-4)
        for got, expected in zip([x_compiled.grad] + [p.grad for p in params], want):
            _assert_close(got, expected, 1e-4)
    calls = getattr(compiled, "_compiled_call", compiled)
    assert _captures(compiled) == captures[0], calls.specialized_reasons
    assert len(calls.symbolic_entries) == captures[0] - 1 and not calls.specialized_reasons


def test_a_backward_whose_sizes_match_no_symbol_is_kept_for_its_exact_sizes():
    # Batch 3 is captured exactly; batch 4 (a size change: the batch becomes symbolic) also has 4 heads,
    # so the backward's literal 4s all read as the batch: the graph fails the check at other sizes and
    # is kept for batch 4 only; batch 5 makes the symbolic graph that batch 6 reuses; 4 hits its entry.
    compiled = kiln.compile(heads_view, backend="eager")
    for n in (3, 4, 5, 6, 4):
        x = _randn(n, 8, 16, requires_grad=True)
        x_c = x.detach().clone().requires_grad_(True)
        heads_view(x).square().sum().backward()
        compiled(x_c).square().sum().backward()
        _assert_close(x_c.grad, x.grad, 1e-4)
    assert _captures(compiled) == 3
    assert len(compiled.symbolic_entries) == 1 and len(compiled.cache) == 2
    assert any("at other sizes" in r for r in compiled.specialized_reasons)


def test_a_backward_the_size_table_cannot_express_is_caught_and_given_up_after_two_tries():
    # var's backward divides by N - 1, which no entry of the size table is: the check at other sizes
    # sees wrong gradients, the graph keeps its exact sizes, and after two failed checks the function's
    # calls needing gradients are no longer captured symbolically (each check costs two extra runs).
    def f(x):
        return x.var(0)

    compiled = kiln.compile(f, backend="eager")
    for n in (5, 6, 7, 8, 9):
        x = _randn(n, 3, requires_grad=True)
        x_c = x.detach().clone().requires_grad_(True)
        f(x).sum().backward()
        compiled(x_c).sum().backward()
        _assert_close(x_c.grad, x.grad, 1e-5)
    assert _captures(compiled) == 5 and not compiled.symbolic_entries
    assert compiled.num_backward_checks_failed == 2
    assert "gradients differ from eager's at other sizes" in compiled.specialized_reasons[0]
    assert "2 symbolic backward graphs failed" in compiled.specialized_reasons[-1]


def test_training_step_with_a_new_batch_size_stays_right():
    # A whole training step is captured for exact sizes: a new batch size recaptures it.
    kiln.manual_seed(0)
    model, twin = Mlp(), Mlp()
    twin.load_state_dict(model.state_dict())
    opt = kiln.optim.SGD(model.parameters(), lr=0.1)
    twin_opt = kiln.optim.SGD(twin.parameters(), lr=0.1)

    @kiln.compile(backend="eager")
    def step(x, y):
        opt.zero_grad()
        loss = (model(x) - y).square().mean()
        loss.backward()
        opt.step()
        return loss

    for n in (4, 4, 4, 8, 8, 3):
        x, y = _randn(n, 8), _randn(n, 4)
        loss = step(x, y)
        twin_opt.zero_grad()
        twin_loss = (twin(x) - y).square().mean()
        twin_loss.backward()
        twin_opt.step()
        _assert_close(loss, twin_loss)
    for p, q in zip(model.parameters(), twin.parameters()):
        _assert_close(p, q)


def test_sizes_are_symbolic_ints_during_capture():
    seen = []

    def f(x):
        B, C = x.size()
        seen.append((B, C, x.shape[0], x.size(-2), x.size(1), B * 2 + 1, (B - 1) // 2, B % 3))
        return x.view(B * C) * 2

    compiled = kiln.compile(f, backend="eager", dynamic=True)
    compiled(_randn(6, 4))
    B, C, shape0, size_neg, size1, arith, floordiv, mod = seen[0]
    assert isinstance(B, SymInt) and isinstance(shape0, SymInt) and isinstance(size_neg, SymInt)
    assert isinstance(C, SymInt) and isinstance(size1, SymInt)  # dynamic=True: every dimension
    assert isinstance(arith, SymInt) and isinstance(floordiv, SymInt) and isinstance(mod, SymInt)
    assert repr(arith) == "SymInt(13, ((s0 * 2) + 1))"
    text = str(compiled.symbolic_entries[0].entry.graph)
    assert "capture::sym_size" in text and "f32[s0, s1]" in text
    x = _randn(7, 2)
    _assert_close(compiled(x), x.view(14) * 2)
    assert compiled.num_captures == 1  # sizes outside the capture are plain ints again
    assert type(x.size(0)) is int


def test_int_of_a_size_specialises_it():
    def f(x):
        n = int(x.shape[0])  # leaves the graph: a guard s0 == n (len(x) too: Python makes it an int)
        assert len(x) == n and type(len(x)) is int
        return x * n

    compiled = kiln.compile(f, backend="eager", dynamic=True)
    for n in (3, 5, 3, 5, 6):
        x = _randn(n, 2)
        _assert_close(compiled(x), x * n)
    assert compiled.num_captures == 3


def test_zero_and_one_extents_stay_specialised():
    compiled = kiln.compile(lambda x: x.sum(0) * x.shape[0], backend="eager", dynamic=True)
    for n in (4, 1, 0, 5, 1, 6):
        x = _randn(n, 3)
        _assert_close(compiled(x), x.sum(0) * n)
    assert compiled.num_captures == 3  # n >= 2, 1, 0


def test_equal_extents_share_a_symbol():
    # Duck sizing: x and y are [s0, 4] when captured at equal extents; unequal extents capture again.
    compiled = kiln.compile(lambda x, y: x.view(x.shape[0], 2, 2) + y.view(y.shape[0], 2, 2), backend="eager",
                            dynamic=True)
    for nx, ny in ((3, 3), (5, 5), (5, 1)):
        x, y = _randn(nx, 4), _randn(ny, 4)
        _assert_close(compiled(x, y), x.view(nx, 2, 2) + y.view(ny, 2, 2))
    assert compiled.num_captures == 2


def test_a_graph_that_does_not_generalise_is_kept_for_its_sizes():
    # matmul broadcasting its batch runs matmul's C++ form, which computes the folded extents itself
    # (literals in the graph): the probe run at other sizes finds that the graph does not generalise,
    # so the entry keeps exact sizes.
    w = _randn(1, 5, 3)

    def f(x):
        return (x @ w) * 2

    compiled = kiln.compile(f, backend="eager", dynamic=True)
    for n in (3, 4, 3):
        x = _randn(n, 2, 5)
        _assert_close(compiled(x), f(x))
    assert compiled.num_captures == 2
    assert "does not run at other sizes" in compiled.specialized_reasons[0]


def test_flatten_stays_symbolic():
    def f(x):
        return kiln.flatten(x, 0, 1).sum(1).view(x.shape[0], -1).sum(1) * 2 + x.flatten(1).sum(1)

    compiled = kiln.compile(f, backend="eager", dynamic=True)
    for n in (3, 4, 6):
        x = _randn(n, 2, 5)
        _assert_close(compiled(x), f(x))
    assert compiled.num_captures == 1


def test_recompile_reasons_are_reported():
    compiled = kiln.compile(control_flow, backend="eager")
    with kiln.no_grad():
        for n in (2, 3, 8):
            compiled(_randn(n, 3))
    reasons = compiled.recompile_reasons
    assert len(reasons) == 2
    assert "tensor argument 0 sizes (2, 3) -> (3, 3)" in reasons[0] and "now dynamic" in reasons[0]
    assert reasons[1].startswith("symbolic guard failed: not (s0 > 4)") and "test_dynamic_shapes.py" in reasons[1]
    report = kiln.compiler.explain(compiled)(_randn(9, 3))
    assert report.recompile_reasons == reasons
    assert "Recompile Reasons:" in str(report)


def test_recompiles_log(capfd):
    from kiln import _logging

    compiled = kiln.compile(lambda x: x + 1, backend="eager")
    _logging.set_logs(recompiles=True)
    try:
        compiled(_randn(2, 3))
        compiled(_randn(4, 3))
    finally:
        _logging.set_logs()
    assert "<lambda>: failing guard: tensor argument 0 sizes" in capfd.readouterr().err
    assert compiled.recompile_reasons == ["tensor argument 0 sizes (2, 3) -> (4, 3) (dims 0:[0] now dynamic)"]


def test_dynamic_argument_is_checked():
    with pytest.raises(ValueError, match="dynamic must be None, True or False"):
        kiln.compile(lambda x: x, dynamic="yes")


def test_symbolic_int_outside_a_capture_is_rejected_by_nothing_else():
    # The SymInt class is registered with the argument parser; ordinary ints still parse as before.
    x = _randn(2, 3)
    assert x.view(3, 2).shape == (3, 2)
    assert _C._capture.is_capturing() is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.new_zeros(2, 2).shape == (2, 2)


def test_default_backend_compiles_fused_kernels_per_size_for_one_graph():
    # One capture, one set of guards; the runtime's kernels are compiled per set of input sizes
    # (Note [Fused kernels for symbolic graphs] in kiln/compiler/_specialize.py).
    from kiln.compiler._specialize import SpecializingRunner

    def f(x):
        B, C = x.shape
        return ((x * 2 + 1).relu().view(B, 2, C // 2) * 3).sum(-1)

    compiled = kiln.compile(f, dynamic=True)
    for n in (4, 6, 9, 6):
        x = _randn(n, 8)
        _assert_close(compiled(x), f(x))
    assert compiled.num_captures == 1
    runner = compiled.symbolic_entries[0].entry.program.runner
    assert isinstance(runner, SpecializingRunner) and not runner.failed
    assert len(runner.compiled) == 2  # 6 and 9: the capturing call (4) ran eagerly
    assert all(g.kernel_count >= 1 for g in runner.compiled.values())


def test_positions_from_arange_of_a_symbolic_length():
    # nanoGPT's input: b, t = idx.size(); pos = arange(0, t); tok_emb + pos_emb.
    kiln.manual_seed(0)
    wte, wpe = nn.Embedding(50, 8), nn.Embedding(32, 8)

    def f(idx):
        b, t = idx.size()
        pos = kiln.arange(0, t, dtype=kiln.long)
        x = wte(idx) + wpe(pos)
        return (kiln.ones(b, t, 1) * x).mean(1) + x[:, -1, :]

    for backend in ("eager", "default"):
        compiled = kiln.compile(f, backend=backend)
        with kiln.no_grad():
            for b, t in ((2, 5), (2, 7), (3, 9), (4, 16), (2, 3)):
                idx = kiln.tensor(RNG.integers(0, 50, (b, t)))
                _assert_close(compiled(idx), f(idx))
        # (2, 5) static; (2, 7) symbolic in t; (3, 9) symbolic in b and t, reused by the rest.
        assert compiled.num_captures == 3


def test_a_symbolic_int_kept_past_its_capture_is_a_plain_value():
    kept = []

    def f(x):
        kept.append(x.shape[0])
        return x * 2

    compiled = kiln.compile(f, backend="eager", dynamic=True)
    compiled(_randn(3, 2))
    s = kept[0]
    assert s + 1 == 4 and s * 2 == 6 and s > 2 and int(s) == 3
    x = _randn(4, 2)
    _assert_close(x.view(s + 1, 2), x)  # no capture: the parser reads its value


def test_a_returned_size_is_guarded():
    compiled = kiln.compile(lambda x: (x * 2, x.shape[0] + 1), backend="eager", dynamic=True)
    for n in (3, 4, 3):
        x = _randn(n, 2)
        out, size = compiled(x)
        assert size == n + 1 and type(size) is int
        _assert_close(out, x * 2)
    assert compiled.num_captures == 2


def test_symbolic_hits_of_repeated_sizes_take_the_guard_set():
    compiled = kiln.compile(lambda x: x * 2 + 1, backend="eager", dynamic=True)
    compiled(_randn(3, 2))  # captures
    assert not compiled.guarded_entries
    x = _randn(5, 2)
    _assert_close(compiled(x), x * 2 + 1)  # a symbolic hit: remembered for these sizes
    assert len(compiled.guarded_entries) == 1 and compiled.guarded_entries[0].guards.check((x,))
    _assert_close(compiled(x), x * 2 + 1)
    assert compiled.num_captures == 1
