"""The fused CPU scaled_dot_product_attention (eager/ops/attention.yaml) against
torch: values and gradients over shapes (L != S, Dv != D, blocks of several
query and key tiles), causal (top-left aligned, also when L != S), bool and
additive masks broadcast to [B, H, L, S], fully masked rows, dtypes,
non-contiguous and broadcast inputs, 3-d inputs, empty batches, enable_gqa,
the op's logsumexp, float64 gradchecks, the thread count, the routing (dropout to
its fused op, a mask needing grad to the composite) and the error cases."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import kiln
import kiln.nn.functional as KF
from nn_compare import as_torch, close, pair
from torch_compare import assert_same_error

FUSED = "ScaledDotProductFlashAttentionForCpuBackward0"
TOL = {"float32": {"rtol": 1e-4, "atol": 1e-5}, "float64": {}}


def qkv(B, H, L, S, D, Dv, dtype="float32", seed=0, requires_grad=True):
    shapes = [(B, H, L, D), (B, H, S, D), (B, H, S, Dv)]
    return [pair(s, dtype, requires_grad=requires_grad, seed=seed + i) for i, s in enumerate(shapes)]


def run_both(ins, kwargs, tkwargs=None, dtype="float32", backward=True, seed=9):
    ks, ts = [p[0] for p in ins], [p[1] for p in ins]
    ko = KF.scaled_dot_product_attention(*ks, **kwargs)
    to = TF.scaled_dot_product_attention(*ts, **(tkwargs if tkwargs is not None else kwargs))
    close(ko, to, **TOL.get(dtype, {"rtol": 2e-2, "atol": 2e-2}))
    if backward:
        g = np.random.default_rng(seed).standard_normal(tuple(to.shape))
        tg = torch.tensor(g, dtype=to.dtype)
        ko.backward(kiln.tensor(tg.double().numpy(), dtype=ko.dtype))
        to.backward(tg)
        for k, t in zip(ks, ts):
            close(k.grad, t.grad, **TOL.get(dtype, {"rtol": 2e-2, "atol": 2e-2}))
    return ko, to


# (B, H, L, S, D, Dv)
SHAPES = [
    (2, 3, 5, 5, 8, 8),
    (1, 2, 7, 13, 4, 4),          # L < S
    (2, 1, 13, 6, 4, 4),          # L > S
    (1, 2, 6, 9, 8, 5),           # Dv != D
    (1, 1, 1, 1, 3, 2),           # one query, one key
    (1, 2, 70, 600, 16, 16),      # several query blocks, two forward key blocks (a partial one), three backward
    (1, 1, 200, 520, 8, 12),      # 64-row query blocks, key blocks of 512 + 8 forward, 256 + 256 + 8 backward
]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_values_and_grads_match_torch(shape, causal, dtype):
    ko, _ = run_both(qkv(*shape, dtype=dtype), {"is_causal": causal}, dtype=dtype)
    assert ko.grad_fn.name() == FUSED


@pytest.mark.parametrize("scale", [0.3, 2.0])
def test_scale(scale):
    run_both(qkv(2, 2, 9, 11, 4, 4), {"scale": scale, "is_causal": True})


# (mask shape, bool)
MASKS = [
    ((5, 7), True),
    ((5, 7), False),
    ((2, 1, 5, 7), True),
    ((3, 5, 7), False),
    ((2, 3, 1, 7), True),       # one row per (batch, head), broadcast over the queries
    ((5, 1), False),            # broadcast over the keys (stride 0 along S)
    ((2, 3, 5, 7), False),
]


@pytest.mark.parametrize("mask_shape,is_bool", MASKS)
def test_masks(mask_shape, is_bool):
    rng = np.random.default_rng(5)
    if is_bool:
        values = rng.random(mask_shape) < 0.7
        values[..., 0] = True  # no fully masked row here (see the next test)
        km, tm = kiln.tensor(values), torch.tensor(values)
    else:
        values = rng.standard_normal(mask_shape)
        km, tm = kiln.tensor(values, dtype=kiln.float32), torch.tensor(values, dtype=torch.float32)
    ko, _ = run_both(qkv(2, 3, 5, 7, 4, 6), {"attn_mask": km}, {"attn_mask": tm})
    assert ko.grad_fn.name() == FUSED


@pytest.mark.parametrize("is_bool", [True, False])
def test_fully_masked_rows_give_zeros_as_torch(is_bool):
    keep = np.ones((6, 9), dtype=bool)
    keep[2] = False
    keep[5] = False
    if is_bool:
        km, tm = kiln.tensor(keep), torch.tensor(keep)
    else:
        add = np.where(keep, 0.0, -np.inf)
        km, tm = kiln.tensor(add, dtype=kiln.float32), torch.tensor(add, dtype=torch.float32)
    ko, to = run_both(qkv(1, 2, 6, 9, 4, 4), {"attn_mask": km}, {"attn_mask": tm})
    assert np.all(ko.detach().numpy()[:, :, 2] == 0) and not np.isnan(ko.detach().numpy()).any()


def test_logsumexp_matches_torchs_flash_op():
    (kq, tq), (kk, tk), (kv, tv) = qkv(2, 3, 40, 300, 8, 8, requires_grad=False)
    keep = np.random.default_rng(1).random((40, 300)) < 0.5
    keep[3] = False
    ko, kl = kiln._C._functions._scaled_dot_product_flash_attention_for_cpu(kq, kk, kv, attn_mask=kiln.tensor(keep))
    additive = torch.tensor(np.where(keep, 0.0, -np.inf), dtype=torch.float32)  # aten's op takes the query's dtype
    to, tl = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(tq, tk, tv, attn_mask=additive)
    close(ko, to, **TOL["float32"])
    close(kl, tl, **TOL["float32"])
    # [B, H, L, Dv] in [B, L, H, Dv] memory: out.transpose(1, 2) is contiguous.
    assert ko.transpose(1, 2).is_contiguous()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_reduced_precision_computes_in_float32(dtype):
    ins = qkv(2, 2, 9, 12, 8, 8, dtype=dtype)
    ko, _ = run_both(ins, {"is_causal": True}, dtype=dtype)
    assert ko.dtype == getattr(kiln, dtype)
    # Rounded once from the float32 result of the same rounded inputs.
    k32 = [kiln.tensor(as_torch(p[0]).float().detach().numpy()) for p in ins]
    ref = KF.scaled_dot_product_attention(*k32, is_causal=True)
    close(ko, torch.tensor(ref.detach().numpy()).to(getattr(torch, dtype)), rtol=0, atol=0)


def test_transposed_projection_inputs_are_read_in_place():
    # q, k, v as [B, L, H, D] projections viewed as [B, H, L, D].
    B, L, H, D = 2, 11, 3, 8
    ins = [pair((B, L, H, D), seed=i, requires_grad=True) for i in range(3)]
    ks = [k.transpose(1, 2) for k, _ in ins]
    ts = [t.transpose(1, 2) for _, t in ins]
    assert not ks[0].is_contiguous()
    ko = KF.scaled_dot_product_attention(*ks, is_causal=True)
    to = TF.scaled_dot_product_attention(*ts, is_causal=True)
    close(ko, to, **TOL["float32"])
    ko.sum().backward()
    to.sum().backward()
    for (k, t) in ins:
        close(k.grad, t.grad, **TOL["float32"])


def test_key_with_non_unit_last_stride_and_broadcast_heads():
    (kq, tq) = pair((2, 3, 6, 4), seed=0, requires_grad=True)
    (kk, tk) = pair((2, 1, 7, 4), seed=1, requires_grad=True, noncontiguous=True)  # last dim stride != 1
    (kv, tv) = pair((2, 1, 7, 5), seed=2, requires_grad=True)
    ko = KF.scaled_dot_product_attention(kq, kk.expand(2, 3, 7, 4), kv.expand(2, 3, 7, 5))
    to = TF.scaled_dot_product_attention(tq, tk.expand(2, 3, 7, 4), tv.expand(2, 3, 7, 5))
    close(ko, to, **TOL["float32"])
    ko.sum().backward()
    to.sum().backward()
    for k, t in [(kq, tq), (kk, tk), (kv, tv)]:
        close(k.grad, t.grad, **TOL["float32"])


@pytest.mark.parametrize("mask_shape", [None, (6, 7), (2, 6, 7)])
def test_three_dim_inputs(mask_shape):
    ins = [pair(s, seed=i, requires_grad=True) for i, s in enumerate([(2, 6, 4), (2, 7, 4), (2, 7, 3)])]
    kw, tw = {}, {}
    if mask_shape is not None:
        keep = np.random.default_rng(3).random(mask_shape) < 0.6
        keep[..., 0] = True
        kw, tw = {"attn_mask": kiln.tensor(keep)}, {"attn_mask": torch.tensor(keep)}
    ko, _ = run_both(ins, kw, tw)
    assert ko.grad_fn is not None


@pytest.mark.parametrize("B,L,S", [(0, 5, 7), (2, 0, 7)])
def test_empty(B, L, S):
    ins = qkv(B, 2, L, S, 4, 4)
    ko = KF.scaled_dot_product_attention(*[p[0] for p in ins])
    to = TF.scaled_dot_product_attention(*[p[1] for p in ins])
    close(ko, to)
    ko.sum().backward()
    assert tuple(ins[0][0].grad.shape) == (B, 2, L, 4) and tuple(ins[1][0].grad.shape) == (B, 2, S, 4)


@pytest.mark.parametrize("kv_heads", [1, 2, 3])
@pytest.mark.parametrize("causal", [False, True])
def test_enable_gqa_matches_torch(kv_heads, causal):
    # The fused op reads key/value head h // group in place; grad_key/grad_value sum over the group.
    ins = [pair(s, seed=i, requires_grad=True) for i, s in enumerate([(2, 6, 5, 4), (2, kv_heads, 7, 4),
                                                                      (2, kv_heads, 7, 3)])]
    ko, _ = run_both(ins, {"enable_gqa": True, "is_causal": causal})
    assert ko.grad_fn.name() == FUSED
    assert tuple(ins[1][0].grad.shape) == (2, kv_heads, 7, 4)


def test_enable_gqa_errors():
    bad = [pair(s, seed=i) for i, s in enumerate([(2, 6, 5, 4), (2, 4, 7, 4), (2, 4, 7, 4)])]
    with pytest.raises(RuntimeError, match="must divide the number of heads"):
        KF.scaled_dot_product_attention(*[p[0] for p in bad], enable_gqa=True)
    with pytest.raises(RuntimeError, match="must divide the number of heads"):
        TF.scaled_dot_product_attention(*[p[1] for p in bad], enable_gqa=True)


@pytest.mark.parametrize("causal", [False, True])
def test_gradcheck_float64(causal):
    ks = [p[0] for p in qkv(1, 2, 4, 5, 3, 2, dtype="float64")]
    if causal:
        assert kiln.autograd.gradcheck(lambda q, k, v: KF.scaled_dot_product_attention(q, k, v, is_causal=True), ks)
    else:
        keep = kiln.tensor(np.array([[1, 1, 0, 1, 0], [0, 0, 0, 0, 0], [1, 0, 1, 1, 1], [0, 1, 0, 0, 1]], dtype=bool))
        assert kiln.autograd.gradcheck(lambda q, k, v: KF.scaled_dot_product_attention(q, k, v, keep), ks)


def test_fused_backward_is_not_twice_differentiable_as_in_torch():
    ks = [p[0] for p in qkv(1, 1, 3, 4, 2, 2, dtype="float64")]
    ts = [p[1] for p in qkv(1, 1, 3, 4, 2, 2, dtype="float64")]
    kg = kiln.autograd.grad(KF.scaled_dot_product_attention(*ks).sum(), ks, create_graph=True)
    to, _ = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(*ts)
    tg = torch.autograd.grad(to.sum(), ts, create_graph=True)
    error = assert_same_error(lambda: kg[0].sum().backward(), lambda: tg[0].sum().backward(), message=False)
    assert "_scaled_dot_product_flash_attention_for_cpu_backward" in str(error)
    assert "not implemented" in str(error)


def test_results_do_not_depend_on_the_thread_count():
    ks = [p[0] for p in qkv(2, 3, 100, 300, 16, 16)]
    previous = kiln.get_num_threads()
    outs = []
    try:
        for n in (1, 2):
            kiln.set_num_threads(n)
            for k in ks:
                k.grad = None
            o = KF.scaled_dot_product_attention(*ks, is_causal=True)
            o.sum().backward()
            outs.append([o.detach().numpy().copy()] + [k.grad.numpy().copy() for k in ks])
    finally:
        kiln.set_num_threads(previous)
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)


# --- routing to the composite -------------------------------------------------------

def test_dropout_uses_the_fused_dropout_op():
    # Its masks and gradients: test_nn_attention_dropout.py.
    ks = [p[0] for p in qkv(2, 2, 5, 6, 4, 4)]
    kiln.manual_seed(0)
    o = KF.scaled_dot_product_attention(*ks, dropout_p=0.5)
    assert o.grad_fn.name() == "ScaledDotProductFlashAttentionDropoutForCpuBackward0"
    full = KF.scaled_dot_product_attention(*ks)
    assert tuple(o.shape) == tuple(full.shape)
    assert not np.allclose(o.detach().numpy(), full.detach().numpy())
    o.sum().backward()
    assert ks[0].grad is not None
    # p = 1 drops every weight: zeros, as torch.
    (kq, tq), (kk, tk), (kv, tv) = qkv(1, 1, 3, 4, 2, 2, requires_grad=False)
    close(KF.scaled_dot_product_attention(kq, kk, kv, dropout_p=1.0),
          TF.scaled_dot_product_attention(tq, tk, tv, dropout_p=1.0))


@pytest.mark.parametrize("route", ["mask_grad", "five_dims", "dropout"])
def test_composite_gives_zeros_for_fully_masked_rows_as_torch(route):
    keep = np.ones((4, 5), dtype=bool)
    keep[1] = False
    additive = np.where(keep, 0.0, -np.inf)
    shape = (2, 1, 1, 4, 3) if route == "five_dims" else (1, 4, 3)
    ins = [pair(shape[:-2] + (n, 3), seed=i, requires_grad=True) for i, n in enumerate((4, 5, 5))]
    mk = kiln.tensor(additive, dtype=kiln.float32, requires_grad=route == "mask_grad")
    mt = torch.tensor(additive, dtype=torch.float32, requires_grad=route == "mask_grad")
    if route == "dropout":
        kiln.manual_seed(0)
        ko = KF.scaled_dot_product_attention(*[p[0] for p in ins], attn_mask=mk, dropout_p=0.5)
        assert ko.grad_fn.name() == "SqueezeBackward1"  # of the 3-d input's heads dim
        assert ko.grad_fn.next_functions[0][0].name() == "ScaledDotProductFlashAttentionDropoutForCpuBackward0"
        assert np.all(ko.detach().numpy()[:, 1] == 0)
        return
    ko, _ = run_both(ins, {"attn_mask": mk}, {"attn_mask": mt})
    assert ko.grad_fn.name() != FUSED
    assert not np.isnan(ins[0][0].grad.numpy()).any()
    if route == "mask_grad":
        close(mk.grad, mt.grad, **TOL["float32"])


def test_mask_requiring_grad_uses_the_composite():
    ins = qkv(1, 2, 4, 5, 3, 3)
    mk, mt = pair((4, 5), seed=7, requires_grad=True)
    ko, _ = run_both(ins, {"attn_mask": mk}, {"attn_mask": mt})
    assert ko.grad_fn.name() != FUSED
    close(mk.grad, mt.grad, **TOL["float32"])


# --- errors -------------------------------------------------------------------------

def test_error_head_dim_mismatch():
    (kq, tq), (kk, tk), (kv, tv) = qkv(1, 2, 3, 5, 4, 4, requires_grad=False)
    error = assert_same_error(lambda: KF.scaled_dot_product_attention(kq, kk[..., :3], kv),
                              lambda: TF.scaled_dot_product_attention(tq, tk[..., :3], tv), message=False)
    assert "[1, 2, 3, 4]" in str(error) and "[1, 2, 5, 3]" in str(error)


def test_error_dtype_mismatch():
    (kq, tq), (kk, tk), (kv, tv) = qkv(1, 2, 3, 5, 4, 4, requires_grad=False)
    assert_same_error(lambda: KF.scaled_dot_product_attention(kq, kk.double(), kv),
                      lambda: TF.scaled_dot_product_attention(tq, tk.double(), tv))
    assert_same_error(lambda: KF.scaled_dot_product_attention(kq, kk, kv.half()),
                      lambda: TF.scaled_dot_product_attention(tq, tk, tv.half()))


def test_error_integer_inputs():
    (kq, tq), (kk, tk), (kv, tv) = qkv(1, 2, 3, 5, 4, 4, requires_grad=False)
    error = assert_same_error(lambda: KF.scaled_dot_product_attention(kq.int(), kk.int(), kv.int()),
                              lambda: TF.scaled_dot_product_attention(tq.int(), tk.int(), tv.int()), message=False)
    assert "Int" in str(error)


def test_error_batch_and_sequence_mismatch():
    (kq, tq), (kk, tk), (kv, tv) = qkv(2, 2, 3, 5, 4, 4, requires_grad=False)
    # Batch dims broadcast as torch's matmuls broadcast them (stride-0 views, no copies).
    close(KF.scaled_dot_product_attention(kq, kk[:, :1], kv[:1]),
          TF.scaled_dot_product_attention(tq, tk[:, :1], tv[:1]), **TOL["float32"])
    (kq3, tq3), = [pair((2, 3, 3, 4), seed=4)]
    assert_same_error(lambda: KF.scaled_dot_product_attention(kq3, kk, kv),
                      lambda: TF.scaled_dot_product_attention(tq3, tk, tv))
    # Fewer key/value heads without enable_gqa: torch's broadcast error, not grouped-query attention.
    (kq4, tq4), = [pair((2, 4, 3, 4), seed=4)]
    assert_same_error(lambda: KF.scaled_dot_product_attention(kq4, kk, kv),
                      lambda: TF.scaled_dot_product_attention(tq4, tk, tv))
    # torch 2.13's CPU flash kernel does not check this one (it returns a result); kiln names the shapes.
    with pytest.raises(RuntimeError, match=r"key and value to have the same sequence length.*\[2, 2, 4, 4\]"):
        KF.scaled_dot_product_attention(kq, kk, kv[:, :, :4])


def test_error_mask_shape_and_dtype():
    (kq, tq), (kk, tk), (kv, tv) = qkv(1, 2, 3, 5, 4, 4, requires_grad=False)
    assert_same_error(lambda: KF.scaled_dot_product_attention(kq, kk, kv, attn_mask=kiln.zeros(3, 4)),
                      lambda: TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=torch.zeros(3, 4)))
    for dtype in ("int32", "int64", "float16", "float64"):
        assert_same_error(
            lambda: KF.scaled_dot_product_attention(kq, kk, kv, attn_mask=kiln.zeros(3, 5, dtype=getattr(kiln, dtype))),
            lambda: TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=torch.zeros(3, 5, dtype=getattr(torch, dtype))))


def test_error_op_direct_calls():
    (kq, tq), (kk, tk), (kv, tv) = qkv(1, 2, 3, 5, 4, 4, requires_grad=False)
    op = kiln._C._functions._scaled_dot_product_flash_attention_for_cpu
    with pytest.raises(RuntimeError, match="dropout_p must be 0"):
        op(kq, kk, kv, 0.1)
    with pytest.raises(RuntimeError, match="4 dims"):
        op(kq[0], kk[0], kv[0])
    out, lse = op(kq, kk, kv)
    backward = kiln._C._functions._scaled_dot_product_flash_attention_for_cpu_backward
    with pytest.raises(RuntimeError, match="logsumexp of size"):
        backward(out, kq, kk, kv, out, lse[:, :1], 0.0, False)
    with pytest.raises(RuntimeError, match="grad_out and out of size"):
        backward(out[:, :, :2], kq, kk, kv, out, lse, 0.0, False)
