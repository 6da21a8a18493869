"""Dropout inside the fused CPU scaled_dot_product_attention
(_scaled_dot_product_flash_attention_dropout_for_cpu, Note [Dropout in fused
attention] in eager/kernels/cpu/nn/Attention.cpp). torch draws its mask from
another stream, so these tests check what must hold whatever the stream: the
fraction kept and the 1/(1-p) scaling (read back through an identity value),
gradients against torch's composite run with the mask the fused forward used
(the forward and backward agree), the same mask and generator advance as
kiln's composite after the same seed, determinism across thread counts, the
p = 0 and p = 1 paths, and the errors."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import kiln
import kiln.nn.functional as KF
from kiln.nn._attention import _composite
from nn_compare import close, pair
from torch_compare import assert_same_error

FUSED = "ScaledDotProductFlashAttentionForCpuBackward0"
FUSED_DROPOUT = "ScaledDotProductFlashAttentionDropoutForCpuBackward0"
OP = "_scaled_dot_product_flash_attention_dropout_for_cpu"


def qkv(B, H, L, S, D, Dv, dtype="float32", seed=0, requires_grad=True, Hkv=None):
    shapes = [(B, H, L, D), (B, Hkv or H, S, D), (B, Hkv or H, S, Dv)]
    return [pair(s, dtype, requires_grad=requires_grad, seed=seed + i) for i, s in enumerate(shapes)]


def recovered_mask(kq, kk, p, seed, causal=False, attn_mask=None, enable_gqa=False):
    """The fused op's keep-mask for these q, k under `seed`, read back through
    value = identity: out[..., i, j] = weight[i, j] * keep / (1 - p)."""
    S = kk.shape[-2]
    eye = kiln.tensor(np.broadcast_to(np.eye(S, dtype=kq.detach().numpy().dtype), tuple(kk.shape[:-2]) + (S, S)).copy())
    kiln.manual_seed(seed)
    out = KF.scaled_dot_product_attention(kq.detach(), kk.detach(), eye, attn_mask=attn_mask, dropout_p=p,
                                          is_causal=causal, enable_gqa=enable_gqa)
    return out.numpy() != 0, out.numpy()


def torch_with_mask(tq, tk, tv, keep, p, causal=False, scale=None, attn_mask=None):
    """softmax(q k^T scale + mask) * keep / (1 - p) @ v in torch, differentiable."""
    if tk.shape[-3] != tq.shape[-3]:
        g = tq.shape[-3] // tk.shape[-3]
        tk, tv = tk.repeat_interleave(g, -3), tv.repeat_interleave(g, -3)
    scale = 1 / np.sqrt(tq.shape[-1]) if scale is None else scale
    s = tq @ tk.transpose(-2, -1) * scale
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))
    if attn_mask is not None:
        s = s + attn_mask
    w = torch.softmax(s, -1)
    return (w * torch.tensor(keep, dtype=w.dtype) / (1 - p)) @ tv


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_fraction_kept_and_scale(p):
    (kq, tq), (kk, tk), _ = qkv(2, 3, 96, 128, 16, 16, requires_grad=False)
    keep, out = recovered_mask(kq, kk, p, seed=3)
    n = keep.size
    kept = keep.mean()
    assert abs(kept - (1 - p)) < 4 * np.sqrt(p * (1 - p) / n), kept
    weights = torch.softmax(tq @ tk.transpose(-2, -1) / 4.0, -1).numpy()
    np.testing.assert_allclose(out[keep], weights[keep] / (1 - p), rtol=1e-5, atol=1e-7)
    # Different rows, heads and batches draw different masks.
    assert not np.array_equal(keep[0, 0], keep[0, 1]) and not np.array_equal(keep[0], keep[1])


# (B, H, L, S, D, Dv, Hkv): several query and key blocks, a partial block, L != S, Dv != D, grouped heads,
# B * H small (the backward splits the keys into chunks).
SHAPES = [
    (2, 2, 5, 6, 4, 4, None),
    (1, 2, 70, 600, 16, 12, None),
    (1, 1, 200, 520, 8, 8, None),
    (2, 4, 33, 40, 8, 8, 2),
]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradients_match_torch_with_the_same_mask(shape, causal, dtype):
    *dims, Hkv = shape
    p = 0.3
    (kq, tq), (kk, tk), (kv, tv) = qkv(*dims, dtype=dtype, Hkv=Hkv)
    gqa = Hkv is not None
    keep, _ = recovered_mask(kq, kk, p, seed=11, causal=causal, enable_gqa=gqa)
    kiln.manual_seed(11)
    ko = KF.scaled_dot_product_attention(kq, kk, kv, dropout_p=p, is_causal=causal, enable_gqa=gqa)
    assert ko.grad_fn.name() == FUSED_DROPOUT
    to = torch_with_mask(tq, tk, tv, keep, p, causal)
    tol = {"rtol": 1e-4, "atol": 1e-5} if dtype == "float32" else {"rtol": 1e-10, "atol": 1e-12}
    close(ko, to, **tol)
    g = np.random.default_rng(5).standard_normal(tuple(to.shape))
    ko.backward(kiln.tensor(g, dtype=ko.dtype))
    to.backward(torch.tensor(g, dtype=to.dtype))
    for k, t in zip((kq, kk, kv), (tq, tk, tv)):
        close(k.grad, t.grad, **tol)


def test_mask_and_3d_inputs_with_dropout():
    p = 0.25
    (kq, tq), (kk, tk), (kv, tv) = [pair(s, requires_grad=True, seed=i) for i, s in
                                    enumerate(((3, 7, 8), (3, 9, 8), (3, 9, 8)))]
    additive = np.where(np.random.default_rng(1).random((7, 9)) < 0.3, -np.inf, 0.0).astype(np.float32)
    additive[:, 0] = 0.0
    km, tm = kiln.tensor(additive), torch.tensor(additive)
    keep, _ = recovered_mask(kq.unsqueeze(1), kk.unsqueeze(1), p, seed=2, attn_mask=km)
    kiln.manual_seed(2)
    ko = KF.scaled_dot_product_attention(kq, kk, kv, attn_mask=km, dropout_p=p)
    to = torch_with_mask(tq.unsqueeze(1), tk.unsqueeze(1), tv.unsqueeze(1), keep, p, attn_mask=tm).squeeze(1)
    close(ko, to, rtol=1e-4, atol=1e-5)
    ko.sum().backward()
    to.sum().backward()
    for k, t in zip((kq, kk, kv), (tq, tk, tv)):
        close(k.grad, t.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("causal", [False, True])
def test_same_mask_and_generator_advance_as_kilns_composite(causal):
    ks = [p[0] for p in qkv(2, 3, 70, 90, 8, 8, dtype="float64")]
    kiln.manual_seed(21)
    fused = KF.scaled_dot_product_attention(*ks, dropout_p=0.4, is_causal=causal)
    after_fused = kiln.get_rng_state()
    fused_grads = kiln.autograd.grad(fused.sum(), ks)
    kiln.manual_seed(21)
    comp = _composite(*ks, None, 0.4, causal, None)
    assert comp.grad_fn.name() != FUSED_DROPOUT
    np.testing.assert_array_equal(after_fused.numpy(), kiln.get_rng_state().numpy())
    np.testing.assert_allclose(fused.detach().numpy(), comp.detach().numpy(), rtol=1e-10, atol=1e-12)
    for a, b in zip(fused_grads, kiln.autograd.grad(comp.sum(), ks)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)
    # The next call draws a new mask.
    again = KF.scaled_dot_product_attention(*ks, dropout_p=0.4, is_causal=causal)
    assert not np.allclose(again.detach().numpy(), fused.detach().numpy())


def test_deterministic_for_a_seed_across_thread_counts():
    results = []
    previous = kiln.get_num_threads()
    try:
        for threads in (1, 2, 3):
            kiln.set_num_threads(threads)
            ks = [p[0] for p in qkv(1, 2, 300, 700, 16, 16, seed=4)]
            kiln.manual_seed(8)
            out = KF.scaled_dot_product_attention(*ks, dropout_p=0.2, is_causal=True)
            grads = kiln.autograd.grad(out.sum(), ks)
            results.append([out.detach().numpy()] + [g.numpy() for g in grads])
    finally:
        kiln.set_num_threads(previous)
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a, b)


def test_p_zero_and_eval_paths_are_unchanged():
    ins = qkv(2, 2, 9, 11, 8, 8)
    ks, ts = [p[0] for p in ins], [p[1] for p in ins]
    before = kiln.get_rng_state()
    ko = KF.scaled_dot_product_attention(*ks, dropout_p=0.0)
    assert ko.grad_fn.name() == FUSED
    np.testing.assert_array_equal(before.numpy(), kiln.get_rng_state().numpy())  # nothing drawn
    close(ko, TF.scaled_dot_product_attention(*ts, dropout_p=0.0), rtol=1e-4, atol=1e-5)
    # The dropout op with p = 0 equals the plain op, and draws nothing.
    ks = [k.detach() for k in ks]
    plain, lse = kiln._C._functions._scaled_dot_product_flash_attention_for_cpu(*ks)
    out, lse0, seed, offset = getattr(kiln._C._functions, OP)(*ks, 0.0)
    np.testing.assert_array_equal(out.detach().numpy(), plain.detach().numpy())
    np.testing.assert_array_equal(lse0.numpy(), lse.numpy())
    assert seed.dtype == kiln.int64 and offset.dtype == kiln.int64 and seed.shape == ()
    # multi_head_attention_forward with training=False sets dropout_p to 0: the plain fused op, torch's values.
    E, heads = 8, 2
    x, tx = pair((5, 3, E), seed=3)
    w, tw = pair((3 * E, E), seed=4)
    ow, tow = pair((E, E), seed=5)
    kargs = dict(embed_dim_to_check=E, num_heads=heads, in_proj_weight=w, in_proj_bias=None, bias_k=None, bias_v=None,
                 add_zero_attn=False, dropout_p=0.5, out_proj_weight=ow, out_proj_bias=None, training=False,
                 need_weights=False)
    targs = dict(kargs, in_proj_weight=tw, out_proj_weight=tow)
    before = kiln.get_rng_state()
    ko, _ = KF.multi_head_attention_forward(x, x, x, **kargs)
    to, _ = TF.multi_head_attention_forward(tx, tx, tx, **targs)
    close(ko, to, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(before.numpy(), kiln.get_rng_state().numpy())


def test_p_one_drops_everything():
    ins = qkv(1, 2, 6, 7, 4, 4)
    ks, ts = [p[0] for p in ins], [p[1] for p in ins]
    before = kiln.get_rng_state()
    ko = KF.scaled_dot_product_attention(*ks, dropout_p=1.0)
    to = TF.scaled_dot_product_attention(*ts, dropout_p=1.0)
    assert ko.grad_fn.name() == FUSED_DROPOUT
    close(ko, to)
    np.testing.assert_array_equal(before.numpy(), kiln.get_rng_state().numpy())
    ko.sum().backward()
    to.sum().backward()
    for k, t in zip(ks, ts):
        close(k.grad, t.grad)


def test_errors():
    (kq, tq), (kk, tk), (kv, tv) = qkv(1, 2, 3, 5, 4, 4, requires_grad=False)
    # torch's message for p < 0 comes from its flash kernel ("Currently do not support dropout > 0").
    for p in (-0.1, 1.5):
        assert_same_error(lambda: KF.scaled_dot_product_attention(kq, kk, kv, dropout_p=p),
                          lambda: TF.scaled_dot_product_attention(tq, tk, tv, dropout_p=p), message=p > 1)
    op = getattr(kiln._C._functions, OP)
    with pytest.raises(RuntimeError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        op(kq, kk, kv, 1.5)
    with pytest.raises(RuntimeError, match="4 dims"):
        op(kq[0], kk[0], kv[0], 0.1)
    out, lse, seed, offset = op(kq, kk, kv, 0.1)
    backward = getattr(kiln._C._functions, OP + "_backward")
    with pytest.raises(RuntimeError, match="philox_seed to be a one-element int64 tensor"):
        backward(out, kq, kk, kv, out, lse, 0.1, False, seed.double(), offset)
    with pytest.raises(RuntimeError, match="philox_offset to be a one-element int64 tensor"):
        backward(out, kq, kk, kv, out, lse, 0.1, False, seed, kiln.zeros(2, dtype=kiln.int64))
    with pytest.raises(RuntimeError, match="logsumexp of size"):
        backward(out, kq, kk, kv, out, lse[:, :1], 0.1, False, seed, offset)
    # The plain op still refuses dropout and names the dropout op.
    with pytest.raises(RuntimeError, match="dropout_p must be 0"):
        kiln._C._functions._scaled_dot_product_flash_attention_for_cpu(kq, kk, kv, 0.1)
