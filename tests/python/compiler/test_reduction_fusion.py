"""kiln.compile's "default" backend fuses reductions over the trailing dims
with their pointwise prologue and epilogue (passes/fuse_reductions,
codegen/RowKernel, codegen/llvm/RowLowering): kernel counts for softmax,
log_softmax, layer_norm, rms_norm (forward, forward+backward) and a GELU MLP
block; values and gradients against eager in float32 and bfloat16 over rows
of length 1, rows that are not a multiple of the vector width, and no rows.

Tolerances: the fused kernels reduce a row exactly as eager's sum.dim,
mean.dim, amax and amin do (test_row_reductions_equal_eager below checks
that bit for bit), but eager's composite kernels (softmax, layer_norm) add
in their own order (float accumulators), and the decomposed graph computes
some steps differently (layer_norm's rsqrt is 1 / sqrt), so float32 agrees
to a few ulp (rtol 1e-5, atol 1e-6); bfloat16 results round once per value
(rtol and atol 1e-2)."""

import numpy as np
import pytest

import kiln
import kiln.nn.functional as F
from kiln.compiler._backends import compiled_graphs, kernel_counts

RNG = np.random.default_rng(2024)
TOL = {kiln.float32: dict(rtol=1e-5, atol=1e-6), kiln.bfloat16: dict(rtol=1e-2, atol=1e-2)}


def rand(*shape, dtype=kiln.float32):
    return kiln.from_numpy(RNG.standard_normal(shape).astype(np.float32)).to(dtype)


def assert_close(got, want, dtype):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), **TOL[dtype])


def norm_params(n, dtype, bias=True):
    w = rand(n, dtype=dtype).requires_grad_()
    b = rand(n, dtype=dtype).requires_grad_() if bias else None
    return w, b


def cases(n, dtype):
    w, b = norm_params(n, dtype)
    (rw, _) = norm_params(n, dtype, bias=False)
    return {
        "softmax": (lambda x: F.softmax(x, -1), []),
        "log_softmax": (lambda x: F.log_softmax(x, -1), []),
        "layer_norm": (lambda x: F.layer_norm(x, (n,), w, b), [w, b]),
        "rms_norm": (lambda x: F.rms_norm(x, (n,), rw), [rw]),
    }


OPS = ["softmax", "log_softmax", "layer_norm", "rms_norm"]
SHAPES = [(6, 40), (3, 13), (5, 1), (2, 3, 19)]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape", SHAPES)
def test_forward_is_one_kernel_and_equals_eager(op, shape):
    fn, _ = cases(shape[-1], kiln.float32)[op]
    compiled = kiln.compile(fn)
    x = rand(*shape)
    with kiln.no_grad():
        compiled(x)
        got = compiled(x)
        want = fn(x)
    assert kernel_counts(compiled) == [1]
    (graph,) = compiled_graphs(compiled)
    assert graph.eager_ops == []
    assert_close(got, want, kiln.float32)


# The backward kernels: each input gradient is one row kernel (softmax's and
# log_softmax's backward, the norms' _norm_backward_input, decomposed); the
# norms' weight and bias gradients reduce over the rows: layer_norm's two (float32/float64) are one
# column kernel in eager's norm order (Note [Norm parameter gradients as column groups]); rms_norm's
# weight gradient alone has nothing to fuse with and stays eager's, as do bfloat16's and a norm over one
# element (its mean and rstd have g's shape, so cannot be told from per-element values).
BACKWARD = {
    "softmax": (1, []),
    "log_softmax": (1, []),
    "layer_norm": (2, []),
    "rms_norm": (1, ["kiln::_norm_backward_weight"]),
}
BACKWARD_BFLOAT16 = dict(BACKWARD, layer_norm=(1, ["kiln::_norm_backward_weight", "kiln::_norm_backward_bias"]))


def forward_backward(fn, x, g, params):
    for p in [x, *params]:
        p.grad = None
    y = fn(x)
    (y * g).sum().backward()
    return [y.detach()] + [p.grad.clone() for p in [x, *params]]


@pytest.mark.parametrize("dtype", [kiln.float32, kiln.bfloat16])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape", SHAPES + [(0, 16)])
def test_forward_backward_equals_eager(op, shape, dtype):
    fn, params = cases(shape[-1], dtype)[op]
    compiled = kiln.compile(fn)
    x = rand(*shape, dtype=dtype).requires_grad_()
    g = rand(*shape, dtype=dtype)
    forward_backward(compiled, x, g, params)
    got = forward_backward(compiled, x, g, params)
    want = forward_backward(fn, x, g, params)
    for a, b in zip(got, want):
        assert_close(a, b, dtype)
    if shape[0] == 0:
        return  # no rows: capture keeps the composite (its reduced dims are guarded as unknown)
    forward, backward = compiled_graphs(compiled)
    assert forward.kernel_count == 1 and forward.eager_ops == []
    kernels, eager = (BACKWARD_BFLOAT16 if dtype == kiln.bfloat16 or shape[-1] == 1 else BACKWARD)[op]
    assert backward.kernel_count == kernels and backward.eager_ops == eager


def test_row_kernel_ir_and_scratch_row():
    # softmax: amax, then the sum of exp(x - max) (kept in a scratch row), then the scaled stores.
    compiled = kiln.compile(lambda x: F.softmax(x, -1))
    with kiln.no_grad():
        compiled(rand(4, 8))
    (graph,) = compiled_graphs(compiled)
    (text,) = graph.kernels
    assert "(rows)" in text and "reduce_max" in text and "reduce_sum" in text
    assert "in0 : float32 (element)" in text and "out0 : float32 (element)" in text
    assert graph.kernel_ops == [["kiln::amax", "kiln::sub.Tensor", "kiln::exp", "kiln::sum.dim_IntList",
                                 "kiln::reciprocal", "kiln::mul.Tensor"]]


def test_user_written_reductions_fuse():
    def f(x, w):
        mean = x.mean(-1, keepdim=True)
        centered = x - mean
        return centered * w / (centered.abs().amax(-1, keepdim=True) + 1), x.sum(-1)

    compiled = kiln.compile(f)
    x, w = rand(7, 21), rand(21)
    with kiln.no_grad():
        compiled(x, w)
        got = compiled(x, w)
        want = f(x, w)
    assert kernel_counts(compiled) == [1]
    for a, b in zip(got, want):
        assert_close(a, b, kiln.float32)


def test_nan_and_inf_rows_propagate_as_eager():
    x = rand(4, 11)
    x[1, 3] = float("nan")
    x[2, 5] = float("inf")
    x[3, :] = float("-inf")
    for fn in (lambda t: F.softmax(t, -1), lambda t: t.amax(-1, keepdim=True) - t.amin(-1, keepdim=True)):
        compiled = kiln.compile(fn)
        with kiln.no_grad():
            compiled(x)
            got = compiled(x).numpy()
            want = fn(x).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7, equal_nan=True)


def test_gelu_mlp_block_kernel_counts():
    kiln.manual_seed(0)
    norm = kiln.nn.LayerNorm(32)
    fc1, fc2 = kiln.nn.Linear(32, 64), kiln.nn.Linear(64, 32)
    params = list(norm.parameters()) + list(fc1.parameters()) + list(fc2.parameters())

    def block(x):
        return x + fc2(F.gelu(fc1(norm(x))))

    compiled = kiln.compile(block)
    x = rand(8, 32).requires_grad_()
    g = rand(8, 32)
    forward_backward(compiled, x, g, params)
    got = forward_backward(compiled, x, g, params)
    want = forward_backward(block, x, g, params)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)
    forward, backward = compiled_graphs(compiled)
    # forward: layer_norm (one row kernel), gelu after fc1, the residual add after fc2
    assert forward.kernel_count == 3
    assert forward.eager_ops == ["kiln::transpose.int", "kiln::mm", "kiln::transpose.int", "kiln::mm"]
    # backward: gelu_backward with fc1's bias gradient (its sum over the rows) as one column kernel; the
    # norm's weight and bias gradients as one column kernel in eager's norm order; the norm's input
    # gradient with the residual's gradient add as its epilogue (one row kernel, in eager's norm order where
    # the host has FMA: Note [Norms as row groups]); fc2's bias gradient (a sum with nothing before it to
    # fuse) stays an eager op
    assert backward.kernel_count == 3
    assert backward.kernel_ops[0] == ["kiln::gelu_backward", "kiln::sum.dim_IntList"]
    assert backward.kernel_ops[1] == ["kiln::_norm_backward_weight", "kiln::_norm_backward_bias"]
    assert backward.kernel_ops[2][-1] == "kiln::add.Tensor"
    assert "(columns)" in backward.kernels[0] and "norm order" in backward.kernels[1]
    assert "(rows)" in backward.kernels[2] or "(rows, norm order)" in backward.kernels[2]
    assert "kiln::_norm_backward_weight" not in backward.eager_ops and "kiln::gelu_backward" not in backward.eager_ops
    assert backward.eager_ops.count("kiln::sum.dim_IntList") == 1


# Row reductions equal eager's bit for bit (the compile fuzzer's programs 67, 88 and 118 differed). Two causes:
#  - a division by a value uniform along the row (a constant, a row's sum) was a multiplication by its
#    reciprocal, which rounds differently (fuzz program 118: x / 3 next to a mean); the row kernel now
#    divides, and softmax's decomposition itself multiplies by 1 / sum, as eager's softmax does;
#  - sum and mean added a row in another order than eager's sum.dim (fuzz programs 67 and 88: rows of 68
#    and 9); amax and amin picked between -0 and +0 in another order. A row now folds in the order of
#    eager's loops (codegen/llvm/RowLowering.cpp, Note [Row reductions in eager's order]).
def _spread(*shape, dtype=kiln.float32, seed=0):
    """Values of mixed magnitudes (so the order of additions shows in the last bits)."""
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(shape) * rng.choice([0.01, 1.0, 300.0], size=shape)
    return kiln.tensor(v).to(dtype)


def _signed_zero_ties(n):
    """-1 everywhere but -0 at 0 and +0 at n // 2: the max is a zero, and which one depends on the order."""
    v = -np.ones((2, n))
    v[:, 0] = -0.0
    v[:, n // 2] = 0.0
    return kiln.tensor(v).float()


EAGER_ORDER_CASES = {
    # name: (fn, inputs, kernels)
    "divide by a constant beside a mean": (
        lambda a, b: (kiln.expm1(a / 3), (b * 0.5 + 1).mean(0, keepdim=True)), [_spread(4), _spread(4, seed=1)], 1),
    "divide by the row's sum": (lambda a: a / a.sum(-1, keepdim=True), [_spread(5, 37)], 1),
    "sum of a row shorter than a step": (lambda a: (a - kiln.rsqrt(a.abs())).sum(-1), [_spread(1, 9)], 1),
    "sum over two dims, a row of 68": (lambda a: (a * 2).sum((1, 2), keepdim=True), [_spread(7, 4, 17)], 1),
    "sum of rows past eager's 1024-element block": (lambda a: (a + 1).sum(-1), [_spread(3, 2500)], 1),
    "float64 mean": (lambda a: a.exp().mean(-1), [_spread(4, 45, dtype=kiln.float64) / 300], 1),
    "amax of -0 and +0": (lambda a: (a * 1).amax(-1), [_signed_zero_ties(64)], 1),
    "amin of -0 and +0": (lambda a: (-a).amin(-1), [-_signed_zero_ties(64)], 1),
    "amax of a short row of zeros": (lambda a: (a * 1).amax(-1), [_signed_zero_ties(6)], 1),
}


def _same_bits(got, want):
    g, w = got.numpy(), want.numpy()
    return g.dtype == w.dtype and g.shape == w.shape and bool(np.all(
        ((g == w) & (np.signbit(g) == np.signbit(w))) | (np.isnan(g) & np.isnan(w))))


@pytest.mark.parametrize("name", list(EAGER_ORDER_CASES))
def test_row_reductions_equal_eager(name):
    fn, inputs, kernels = EAGER_ORDER_CASES[name]
    compiled = kiln.compile(fn)
    with kiln.no_grad():
        compiled(*inputs)
        got = compiled(*inputs)
        want = fn(*inputs)
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    for g, w in zip(got, want):
        assert _same_bits(g, w), (g, w)
    assert kernel_counts(compiled) == [kernels]
    assert all(graph.eager_ops == [] for graph in compiled_graphs(compiled))


# Column kernels (passes/fuse_column_reductions.h): a sum or mean over the leading dims with its pointwise
# prologue, in the order of eager's across-rows loop, so equal to eager bit for bit (Note [Column reduction
# kernels], codegen/llvm/RowLowering.cpp). name: (fn, inputs, kernels, eager ops).
COLUMN_CASES = {
    "bias gradient of a pointwise prologue": (
        lambda a, w: (a * w + 1).sum(0), [_spread(37, 20), _spread(20, seed=1)], 1, []),
    "mean over two leading dims, keepdim": (
        lambda a: (a / 300).exp().mean((0, 1), keepdim=True), [_spread(3, 5, 13)], 1, []),
    "rows past eager's 1024-row block": (lambda a: (a - 1).sum(0), [_spread(2100, 9)], 1, []),
    "float64": (lambda a, w: (a * w).sum(0), [_spread(33, 7, dtype=kiln.float64), _spread(7, dtype=kiln.float64)],
                1, []),
    "a prologue value also returned": (lambda a: (lambda e: ((e * 2).sum(0), e))((a / 300).exp()), [_spread(9, 12)],
                                       1, []),
    "two kept dims, the weight over both": (
        lambda a, w: (a * w).sum(0), [_spread(6, 4, 5), _spread(4, 5, seed=2)], 1, []),
    # left alone: a sum with nothing to fuse stays eager's, and one kept element is eager's row reduction
    "a lone column sum": (lambda a: a.sum(0), [_spread(8, 16)], 0, ["kiln::sum.dim_IntList"]),
    "one kept element": (lambda a: (a * 2).sum(0), [_spread(8, 1)], 1, ["kiln::sum.dim_IntList"]),
}


@pytest.mark.parametrize("name", list(COLUMN_CASES))
def test_column_reductions_fuse_and_equal_eager(name):
    fn, inputs, kernels, eager_ops = COLUMN_CASES[name]
    compiled = kiln.compile(fn)
    with kiln.no_grad():
        compiled(*inputs)
        got = compiled(*inputs)
        want = fn(*inputs)
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    for g, w in zip(got, want):
        assert _same_bits(g, w), (g, w)
    assert kernel_counts(compiled) == [kernels]
    (graph,) = compiled_graphs(compiled)
    assert graph.eager_ops == eager_ops
    assert sum("(columns)" in k for k in graph.kernels) == (1 if not eager_ops else 0)


def test_linear_bias_gradient_fuses_with_its_activation_backward():
    """fc's bias gradient is the sum over the batch of gelu's gradient: one column kernel, which also
    stores that gradient for the weight's and the input's matmuls."""
    kiln.manual_seed(0)
    fc = kiln.nn.Linear(16, 24)

    def f(x):
        return F.gelu(fc(x))

    compiled = kiln.compile(f)
    x, g = rand(40, 16).requires_grad_(), rand(40, 24)
    params = list(fc.parameters())
    forward_backward(compiled, x, g, params)
    got = forward_backward(compiled, x, g, params)
    want = forward_backward(f, x, g, params)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    _, backward = compiled_graphs(compiled)
    assert backward.kernel_count == 1 and backward.kernel_ops == [["kiln::gelu_backward", "kiln::sum.dim_IntList"]]
    assert "(columns)" in backward.kernels[0]
    assert "kiln::gelu_backward" not in backward.eager_ops and "kiln::sum.dim_IntList" not in backward.eager_ops


# Norm parameter gradients (Note [Norm parameter gradients as column groups], passes/fuse_column_reductions.h):
# _norm_backward_weight with the bias gradient of the same g and g's pointwise prologue is one column
# kernel folding in eager's norm_backward_params order (chunks of rows, an fma a term), so equal to eager
# bit for bit given the same mean and rstd.
_norm_weight = kiln._C._functions._norm_backward_weight
_norm_bias = kiln._C._functions._norm_backward_bias


@pytest.mark.parametrize("dtype", [kiln.float32, kiln.float64])
@pytest.mark.parametrize("shape", [(512, 128), (37, 5), (3000, 64), (4, 16, 700), (2, 3)])
def test_norm_parameter_gradients_fuse_and_equal_eager(shape, dtype):
    c = shape[-1]
    x, g = _spread(*shape, dtype=dtype), _spread(*shape, dtype=dtype, seed=3)
    stat = shape[:-1] + (1,)
    mean, rstd = _spread(*stat, dtype=dtype, seed=4), _spread(*stat, dtype=dtype, seed=5).abs()

    def fn(g, x, mean, rstd):
        centered = _norm_weight(g * 2, x, [c], mean, rstd), _norm_bias(g * 2, [c])  # layer_norm's
        uncentered = _norm_weight(g - 1, x, [c], None, rstd)  # rms_norm's: no mean
        alone = _norm_weight(g, x, [c], mean, rstd)  # no prologue, no bias: eager's
        return (*centered, uncentered, alone)

    compiled = kiln.compile(fn)
    with kiln.no_grad():
        compiled(g, x, mean, rstd)
        got = compiled(g, x, mean, rstd)
        want = fn(g, x, mean, rstd)
    for a, b in zip(got, want):
        assert _same_bits(a, b)
    (graph,) = compiled_graphs(compiled)
    assert graph.kernel_count == 2 and graph.eager_ops == ["kiln::_norm_backward_weight"]
    assert sorted(graph.kernel_ops) == sorted([
        ["kiln::mul.Scalar", "kiln::_norm_backward_weight", "kiln::_norm_backward_bias"],
        ["kiln::sub.Scalar", "kiln::_norm_backward_weight"]])
    assert all("norm order" in k for k in graph.kernels)


def test_norm_bias_gradient_read_before_the_weight_gradient_stays_apart():
    """The group runs where its last member stands: a bias gradient read before the weight gradient
    is computed does not join it."""
    x, g = _spread(16, 8), _spread(16, 8, seed=1)
    mean, rstd = _spread(16, 1, seed=2), _spread(16, 1, seed=3).abs()

    def fn(g, x, mean, rstd):
        h = g * 2
        db = _norm_bias(h, [8])
        early = db * 3  # read before the weight gradient
        dw = _norm_weight(h, x, [8], mean, rstd)
        return dw, early

    compiled = kiln.compile(fn)
    with kiln.no_grad():
        compiled(g, x, mean, rstd)
        got = compiled(g, x, mean, rstd)
        want = fn(g, x, mean, rstd)
    for a, b in zip(got, want):
        assert _same_bits(a, b)
    (graph,) = compiled_graphs(compiled)
    assert all("kiln::_norm_backward_bias" not in ops or "kiln::_norm_backward_weight" not in ops
               for ops in graph.kernel_ops)

