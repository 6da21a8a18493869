"""layer_norm inside whole training steps (python/kiln/compiler/_backends.py compiles those graphs
without decomposing composites): native_layer_norm and _norm_backward_input join row groups whole,
with the pointwise ops around them, and the row kernel folds in the order of eager's norm kernels
with their FMA contractions (Note [Norms as row groups], passes/fuse_reductions.h; Note [Row folds in
eager's norm order], codegen/llvm/RowLowering.cpp). Equal to eager bit for bit on hosts with FMA
(AVX2 / AVX-512) for rows of a whole number of eager's vectors; elsewhere the nodes stay eager steps.
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


def _norm_graph(rows, cols, dtype, affine=True):
    """A residual add into layer_norm, its input gradient and the gradient's residual add, as in a
    GPT block's training step."""
    t = _IR[dtype]
    el = f"{t}[{rows}, {cols}]{{{cols}, 1}}"
    st = f"{t}[{rows}, 1]{{1, 1}}"
    par = f"{t}[{cols}]{{1}}"
    params = f", %w : {par}, %b : {par}" if affine else ""
    fwd_params = "weight=%w, bias=%b" if affine else "weight=None, bias=None"
    bwd_weight = "weight=%w" if affine else "weight=None"
    return _C._ir.parse(f"""graph(%x : {el}, %r : {el}, %g : {el}{params}):
  %h : {el} = kiln::add.Tensor(%x, %r, alpha=1)
  %y : {el}, %m : {st}, %s : {st} = kiln::native_layer_norm(%h, normalized_shape=[{cols}], {fwd_params}, eps=1e-05)
  %dx : {el} = kiln::_norm_backward_input(%g, %h, normalized_shape=[{cols}], mean=%m, rstd=%s, {bwd_weight})
  %o : {el} = kiln::add.Tensor(%dx, %g, alpha=1)
  return (%y, %m, %s, %o)
""")


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("rows,cols,dtype", [(512, 128, kiln.float32), (37, 48, kiln.float32),
                                             (9, 40, kiln.float64), (64, 256, kiln.float64)])
def test_layer_norm_and_its_input_gradient_fuse_and_equal_eager(rows, cols, dtype, affine):
    graph = _norm_graph(rows, cols, dtype, affine)
    inputs = [_spread(rows, cols, dtype=dtype, seed=s) for s in (1, 2, 3)]
    if affine:
        inputs += [_spread(cols, dtype=dtype, seed=4), _spread(cols, dtype=dtype, seed=5)]
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
        ["kiln::add.Tensor", "kiln::native_layer_norm", "kiln::_norm_backward_input", "kiln::add.Tensor"])
    assert all("norm order" in k for k in compiled.kernels)


@pytest.mark.parametrize("cols", [13, 36])
def test_rows_of_a_partial_vector_stay_eager(cols):
    # eager's partial last chunk contracts differently: such rows are left to eager's kernels
    rows = 7
    graph = _norm_graph(rows, cols, kiln.float32)
    inputs = [_spread(rows, cols, dtype=kiln.float32, seed=s) for s in (1, 2, 3)]
    inputs += [_spread(cols, dtype=kiln.float32, seed=4), _spread(cols, dtype=kiln.float32, seed=5)]
    compiled = _C._runtime.compile(graph, runs_without_autograd=True, decompose=False)
    for a, b in zip(compiled.run([t.clone() for t in inputs]), _C._ir.run(graph, [t.clone() for t in inputs])):
        assert _same_bits(a, b)
    lanes = 16 if _C._cpu_capability() == "avx512" else 8
    if cols % lanes != 0:
        assert "kiln::native_layer_norm" in compiled.eager_ops and "kiln::_norm_backward_input" in compiled.eager_ops


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
