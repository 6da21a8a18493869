"""The attention backward of a compiled training step writes the q, k and v gradients straight into
the cat that stacks them for the fused qkv projection's gradient (Note [Attention gradients into their
cat], runtime/AttentionGradsIntoCat.h): no cat step, values and gradients equal eager's bit for bit;
where the pattern does not hold (a gradient read elsewhere) the cat stays; float16 inputs are never
taken (the op computes them in float32 and rounds)."""

import sys
from pathlib import Path

import numpy as np
import pytest

import kiln
from kiln import _C
from kiln.compiler._backends import compiled_graphs

F = kiln.nn.functional
BACKWARD = "kiln::_scaled_dot_product_flash_attention_for_cpu_backward"
# Where the step's layer_norms run in row kernels equal to eager's bit for bit (test_norm_row_groups.py).
FMA_HOST = _C._cpu_capability() in ("avx2", "avx512")


def _same_bits(a, b):
    a, b = a.detach(), b.detach()
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(
        a.to(kiln.float64).numpy(), b.to(kiln.float64).numpy(), equal_nan=True)


def _attention_step(batch, tokens, heads, head_dim, dtype, causal, scale, also_return_q_grad=False):
    """A fused qkv projection, attention, and a loss; the step computes the weight's gradient."""
    channels = heads * head_dim
    rng = np.random.default_rng(0)
    weight = kiln.from_numpy(rng.standard_normal((3 * channels, channels)).astype(np.float64) * 0.2).to(dtype)
    weight.requires_grad_()
    x = kiln.from_numpy(rng.standard_normal((batch, tokens, channels))).to(dtype)

    def step(x):
        weight.grad = None
        qkv = F.linear(x, weight)
        q, k, v = (t.view(batch, tokens, heads, head_dim).transpose(1, 2) for t in qkv.split(channels, dim=2))
        if also_return_q_grad:
            q.retain_grad()
        y = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
        loss = (y.transpose(1, 2).reshape(batch, tokens, channels) ** 2).sum()
        loss.backward()
        return (loss, weight.grad, q.grad) if also_return_q_grad else (loss, weight.grad)

    return step, x


@pytest.mark.parametrize("dtype", [kiln.float32, kiln.float64])
@pytest.mark.parametrize("causal,scale", [(True, None), (False, 0.3)])
@pytest.mark.parametrize("batch,tokens,heads,head_dim", [(2, 16, 2, 8), (1, 5, 3, 4)])
def test_attention_gradients_go_into_their_cat_and_equal_eager(batch, tokens, heads, head_dim, dtype, causal,
                                                               scale):
    step, x = _attention_step(batch, tokens, heads, head_dim, dtype, causal, scale)
    want = [t.clone() for t in step(x)]
    compiled = kiln.compile(step, backend="default")
    for _ in range(2):
        got = compiled(x)
        assert all(_same_bits(g, w) for g, w in zip(got, want))
    (graph,) = compiled_graphs(compiled)
    assert graph.eager_ops.count(BACKWARD) == 1
    assert "kiln::cat" not in graph.eager_ops


def test_a_gradient_read_elsewhere_keeps_the_cat():
    step, x = _attention_step(2, 8, 2, 4, kiln.float32, True, None, also_return_q_grad=True)
    want = [t.clone() for t in step(x)]
    compiled = kiln.compile(step, backend="default")
    for _ in range(2):
        got = compiled(x)
        assert all(_same_bits(g, w) for g, w in zip(got, want))
    (graph,) = compiled_graphs(compiled)
    assert graph.eager_ops.count("kiln::cat") == 1


def test_float16_attention_keeps_the_op_and_equals_eager():
    step, x = _attention_step(2, 8, 2, 4, kiln.float16, True, None)
    want = [t.clone() for t in step(x)]
    compiled = kiln.compile(step, backend="default")
    for _ in range(2):
        got = compiled(x)
        assert all(_same_bits(g, w) for g, w in zip(got, want))


def _same_or_close(a, b):
    if FMA_HOST:
        return _same_bits(a, b)
    return np.allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_gpt_block_step_equals_eager_with_the_gradients_into_their_cat():
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
    from compile_gpt_block_step import _block_step

    kiln.manual_seed(0)
    eager_model, eager_step, _ = _block_step(kiln, 2, 16, 32, 2)
    kiln.manual_seed(0)
    model, compiled_step, fn = _block_step(kiln, 2, 16, 32, 2, lambda f: kiln.compile(f, backend="default"))
    for _ in range(4):
        assert _same_or_close(compiled_step(), eager_step())
    for (name, p), (_, q) in zip(eager_model.named_parameters(), model.named_parameters()):
        assert _same_or_close(q, p), name
    (graph,) = compiled_graphs(fn)
    assert "kiln::cat" not in graph.eager_ops and graph.eager_ops.count(BACKWARD) == 1
    assert "kiln::unsqueeze" not in graph.eager_ops
