"""layer_norm and rms_norm as whole nodes in row kernels: native_layer_norm (any of weight and bias),
_fused_rms_norm and their _norm_backward_input join row groups whole, with the pointwise ops around them,
and the row kernel folds in the order of eager's norm kernels with their FMA contractions (Note [Norms as
row groups], passes/fuse_reductions.h; Note [Row folds in eager's norm order], codegen/llvm/RowLowering.cpp),
rows that are not a whole number of eager's vectors included (their partial last vector as eager's).
Training steps keep composites whole (python/kiln/compiler/_backends.py); plain graphs keep such norms
whole too where the host has FMA. Equal to eager bit for bit on hosts with FMA (AVX2 / AVX-512);
elsewhere the nodes stay eager steps (or, in plain graphs, are decomposed).
Also: a cat of reshaped contiguous copies (attention's q/k/v gradients) reads the strided pieces
(Note [A cat of reshaped copies], passes/cat_strided_pieces.h)."""

import sys
from pathlib import Path

import numpy as np
import pytest

import kiln
from kiln import _C
from kiln.compiler._backends import compiled_graphs

FMA_HOST = _C._cpu_capability() in ("avx2", "avx512")
_IR = {kiln.float32: "f32", kiln.float64: "f64"}


def _spread(*shape, dtype, seed):
    rng = np.random.default_rng(seed)
    return kiln.from_numpy((rng.standard_normal(shape) * 3 + 0.5).astype(np.float64)).to(dtype)


def _same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a.numpy().reshape(-1).view(np.uint8),
                                                                       b.numpy().reshape(-1).view(np.uint8))


def _norm_graph(rows, cols, dtype, affine=True, *, rms=False, weight=None, bias=None):
    """A residual add into layer_norm (rms_norm), its input gradient and the gradient's residual add, as in a
    GPT block's training step. `weight` / `bias` default to `affine`."""
    weight = affine if weight is None else weight
    bias = (affine and not rms) if bias is None else bias
    t = _IR[dtype]
    el = f"{t}[{rows}, {cols}]{{{cols}, 1}}"
    st = f"{t}[{rows}, 1]{{1, 1}}"
    par = f"{t}[{cols}]{{1}}"
    params = (f", %w : {par}" if weight else "") + (f", %b : {par}" if bias else "")
    w_arg = "weight=%w" if weight else "weight=None"
    if rms:
        forward = (f"%y : {el}, %s : {st} = kiln::_fused_rms_norm(%h, normalized_shape=[{cols}], {w_arg}, "
                   f"eps=None)")
        mean, outputs = "mean=None", "%y, %s, %o"
    else:
        b_arg = "bias=%b" if bias else "bias=None"
        forward = (f"%y : {el}, %m : {st}, %s : {st} = kiln::native_layer_norm(%h, normalized_shape=[{cols}], "
                   f"{w_arg}, {b_arg}, eps=1e-05)")
        mean, outputs = "mean=%m", "%y, %m, %s, %o"
    return _C._ir.parse(f"""graph(%x : {el}, %r : {el}, %g : {el}{params}):
  %h : {el} = kiln::add.Tensor(%x, %r, alpha=1)
  {forward}
  %dx : {el} = kiln::_norm_backward_input(%g, %h, normalized_shape=[{cols}], {mean}, rstd=%s, {w_arg})
  %o : {el} = kiln::add.Tensor(%dx, %g, alpha=1)
  return ({outputs})
""")


def _check_norm_graph(graph, rows, cols, dtype, n_params, forward_op):
    inputs = [_spread(rows, cols, dtype=dtype, seed=s) for s in (1, 2, 3)]
    inputs += [_spread(cols, dtype=dtype, seed=4 + i) for i in range(n_params)]
    want = _C._ir.run(graph, [t.clone() for t in inputs])  # the interpreter: eager's kernels
    compiled = _C._runtime.compile(graph, runs_without_autograd=True, decompose=False)
    got = compiled.run([t.clone() for t in inputs])
    for a, b in zip(got, want):
        assert _same_bits(a, b)
    if not FMA_HOST:
        assert compiled.kernel_count == 0
        return
    assert compiled.eager_ops == []
    assert sorted(op for ops in compiled.kernel_ops for op in ops) == sorted(
        ["kiln::add.Tensor", forward_op, "kiln::_norm_backward_input", "kiln::add.Tensor"])
    assert all("norm order" in k for k in compiled.kernels)


# rows of a whole number of eager's vectors (AVX2: 8 floats, 4 doubles; AVX-512: 16, 8) and of a partial last one
SHAPES = [(512, 128, kiln.float32), (37, 48, kiln.float32), (9, 40, kiln.float64), (64, 256, kiln.float64),
          (7, 13, kiln.float32), (5, 36, kiln.float32), (11, 77, kiln.float32), (2, 3, kiln.float32),
          (6, 10, kiln.float64)]


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("rows,cols,dtype", SHAPES)
def test_layer_norm_and_its_input_gradient_fuse_and_equal_eager(rows, cols, dtype, affine):
    _check_norm_graph(_norm_graph(rows, cols, dtype, affine), rows, cols, dtype, 2 if affine else 0,
                      "kiln::native_layer_norm")


@pytest.mark.parametrize("weight,bias", [(True, False), (False, True)])
@pytest.mark.parametrize("rows,cols,dtype", SHAPES[:2] + SHAPES[4:6] + SHAPES[8:9])
def test_layer_norm_with_only_a_weight_or_only_a_bias_fuses_and_equals_eager(rows, cols, dtype, weight, bias):
    # eager contracts (x - mean) rstd + b into one fma, and rounds (x - mean) rstd w before nothing is added
    graph = _norm_graph(rows, cols, dtype, weight=weight, bias=bias)
    _check_norm_graph(graph, rows, cols, dtype, 1, "kiln::native_layer_norm")


@pytest.mark.parametrize("weight", [True, False])
@pytest.mark.parametrize("rows,cols,dtype", SHAPES)
def test_rms_norm_and_its_input_gradient_fuse_and_equal_eager(rows, cols, dtype, weight):
    graph = _norm_graph(rows, cols, dtype, rms=True, weight=weight)
    _check_norm_graph(graph, rows, cols, dtype, 1 if weight else 0, "kiln::_fused_rms_norm")


def test_partial_vector_rows_with_extreme_values_equal_eager():
    # the partial last vector's padding lanes must add nothing, whatever the row holds
    rows, cols = 6, 21
    graph = _norm_graph(rows, cols, kiln.float32)
    inputs = [_spread(rows, cols, dtype=kiln.float32, seed=s) for s in (1, 2, 3)]
    inputs[0][0, 20] = float("inf")
    inputs[0][1, :] = 0.0
    inputs[0][2, 17] = float("nan")
    inputs[0][3, :] = 1e30
    inputs[2][4, 19] = -0.0
    inputs += [_spread(cols, dtype=kiln.float32, seed=4), _spread(cols, dtype=kiln.float32, seed=5)]
    want = _C._ir.run(graph, [t.clone() for t in inputs])
    got = _C._runtime.compile(graph, runs_without_autograd=True, decompose=False).run([t.clone() for t in inputs])
    for a, b in zip(got, want):
        assert _same_bits(a, b)


def _gpt_step_graphs():
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
    from compile_gpt_block_step import _block_step

    kiln.manual_seed(0)
    _, eager_step, _ = _block_step(kiln, 2, 16, 32, 2)
    kiln.manual_seed(0)
    model, compiled_step, fn = _block_step(kiln, 2, 16, 32, 2, lambda f: kiln.compile(f, backend="default"))
    return eager_step, compiled_step, fn, model


def test_gpt_block_step_keeps_eager_values_with_norms_and_qkv_gradients_fused():
    eager_step, compiled_step, fn, model = _gpt_step_graphs()
    for _ in range(6):
        a, b = eager_step(), compiled_step()
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-4, atol=1e-5)
    (graph,) = compiled_graphs(fn)
    # the q/k/v gradient copies are gone, and so is the cat that read the strided pieces: the attention
    # backward writes into its buffer (Note [Attention gradients into their cat], runtime/AttentionGradsIntoCat.h)
    assert "kiln::clone" not in graph.eager_ops and "kiln::cat" not in graph.eager_ops
    if FMA_HOST:  # both layer_norms and ln_2's input gradient run in row kernels (32 columns: whole vectors)
        assert "kiln::native_layer_norm" not in graph.eager_ops
        assert "kiln::_norm_backward_input" not in graph.eager_ops
        assert sum(ops.count("kiln::native_layer_norm") for ops in graph.kernel_ops) == 2
        assert sum(ops.count("kiln::_norm_backward_input") for ops in graph.kernel_ops) == 1
        # ln_2 with its prologue: c_proj's bias add and the residual add
        assert ["kiln::add.Tensor", "kiln::add.Tensor", "kiln::native_layer_norm"] in graph.kernel_ops
        assert ["kiln::_norm_backward_input", "kiln::add.Tensor"] in graph.kernel_ops


def test_cat_of_reshaped_copies_reads_the_pieces_and_equals_eager():
    qkv = [_spread(2, 3, 5, 4, dtype=kiln.float32, seed=s) for s in (1, 2, 3)]

    def fn(q, k, v):
        return kiln.cat([t.transpose(1, 2).contiguous().view(2, 5, 12) for t in (q, k, v)], dim=2) * 2

    compiled = kiln.compile(fn)
    compiled(*qkv)
    assert _same_bits(compiled(*qkv), fn(*qkv))
    (graph,) = compiled_graphs(compiled)
    assert "kiln::clone" not in graph.eager_ops and "kiln::contiguous" not in graph.eager_ops
    assert graph.eager_ops.count("kiln::cat") == 1


def _forward_backward(fn, x, g, params):
    for p in [x, *params]:
        p.grad = None
    y = fn(x)
    (y * g).sum().backward()
    return [y.detach()] + [p.grad.clone() for p in [x, *params]]


def _plain_case(name, n, dtype):
    w, b = _spread(n, dtype=dtype, seed=7).requires_grad_(), _spread(n, dtype=dtype, seed=8).requires_grad_()
    F = kiln.nn.functional
    return {
        "rms_norm": (lambda x: F.rms_norm(x, (n,), w), [w]),
        "rms_norm without weight": (lambda x: F.rms_norm(x, (n,), None, 1e-6), []),
        "layer_norm with only a weight": (lambda x: F.layer_norm(x, (n,), w, None), [w]),
        "layer_norm with only a bias": (lambda x: F.layer_norm(x, (n,), None, b), [b]),
        "layer_norm": (lambda x: F.layer_norm(x, (n,), w, b), [w, b]),
    }[name]


@pytest.mark.parametrize("dtype", [kiln.float32, kiln.float64])
@pytest.mark.parametrize("shape", [(6, 40), (3, 13), (2, 3, 19)])
@pytest.mark.parametrize("name", ["rms_norm", "rms_norm without weight", "layer_norm with only a weight",
                                  "layer_norm with only a bias", "layer_norm"])
def test_plain_graph_norms_are_whole_row_kernels_equal_to_eager(name, shape, dtype):
    fn, params = _plain_case(name, shape[-1], dtype)
    x = _spread(*shape, dtype=dtype, seed=1)
    with kiln.no_grad():
        compiled = kiln.compile(fn)
        compiled(x)
        assert _same_bits(compiled(x), fn(x))
    (graph,) = compiled_graphs(compiled)
    assert graph.kernel_count == 1 and graph.eager_ops == []
    norm_op = "kiln::_fused_rms_norm" if name.startswith("rms") else "kiln::native_layer_norm"
    assert (norm_op in graph.kernel_ops[0]) == FMA_HOST  # else decomposed into primitives
    x.requires_grad_()
    g = _spread(*shape, dtype=dtype, seed=2)
    compiled = kiln.compile(fn)
    _forward_backward(compiled, x, g, params)
    got = _forward_backward(compiled, x, g, params)
    want = _forward_backward(fn, x, g, params)
    if not FMA_HOST:
        return
    for a, b in zip(got, want):
        assert _same_bits(a, b)
    forward, backward = compiled_graphs(compiled)
    assert forward.kernel_count == 1 and forward.eager_ops == []
    assert sum(ops.count("kiln::_norm_backward_input") for ops in backward.kernel_ops) == 1
    # a lone parameter gradient has nothing to fuse with (Note [Column reduction groups]): eager's kernel
    assert set(backward.eager_ops) <= {"kiln::_norm_backward_weight", "kiln::_norm_backward_bias"}


def _rms_mlp_step(compile_step=None):
    kiln.manual_seed(0)
    nn = kiln.nn
    model = nn.Sequential(nn.Linear(24, 36), nn.RMSNorm(36), nn.GELU(), nn.Linear(36, 24), nn.RMSNorm(24, eps=1e-6))
    opt = kiln.optim.AdamW(model.parameters(), lr=1e-3)
    x, target = _spread(5, 24, dtype=kiln.float32, seed=1), _spread(5, 24, dtype=kiln.float32, seed=2)

    def step(x, target):
        loss = kiln.nn.functional.mse_loss(model(x), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    run = compile_step(step) if compile_step is not None else step
    return model, (lambda: run(x, target)), run


def test_training_step_with_rms_norm_fuses_it_and_keeps_eager_values():
    eager_model, eager_step, _ = _rms_mlp_step()
    compiled_model, compiled_step, fn = _rms_mlp_step(lambda f: kiln.compile(f, backend="default"))
    for _ in range(5):
        a, b = eager_step(), compiled_step()
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-5, atol=1e-6)
    for p, q in zip(eager_model.parameters(), compiled_model.parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-5, atol=1e-6)
    (graph,) = compiled_graphs(fn)
    if FMA_HOST:  # both rms_norms and both input gradients in row kernels (24 and 36 columns: a partial vector)
        assert "kiln::_fused_rms_norm" not in graph.eager_ops
        assert "kiln::_norm_backward_input" not in graph.eager_ops
        assert sum(ops.count("kiln::_fused_rms_norm") for ops in graph.kernel_ops) == 2
        # the first layer's input needs no gradient: only the second's input gradient and the first's
        assert sum(ops.count("kiln::_norm_backward_input") for ops in graph.kernel_ops) == 2
