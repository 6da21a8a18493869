"""Attention in kiln.nn.functional (re-exported there): scaled_dot_product_attention
(the fused CPU op where it applies, else composed from matmul and softmax) and
multi_head_attention_forward, composed in Python as torch composes it.

See Note [Functional calls the C++ op where one exists] in kiln/nn/functional.py.
"""

from __future__ import annotations

import math
from typing import Optional

from kiln import _C
from kiln._arguments import _require_tensor, checked_signature
from kiln.nn._activations import softmax
from kiln.nn._dropout import dropout
from kiln.nn._linear import linear
from kiln.nn._ops import native, reduce_mean

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


_FUSED = "_scaled_dot_product_flash_attention_for_cpu"
# With dropout: the same loop, the keep-mask drawn from the default generator as
# the composite's dropout draws it (Note [Dropout in fused attention],
# eager/kernels/cpu/nn/Attention.cpp).
_FUSED_DROPOUT = "_scaled_dot_product_flash_attention_dropout_for_cpu"


def _fused_mask(query, attn_mask):
    """The mask as the fused op takes it for this query's rank (a [N, L, S]
    mask of 3-d inputs gains the heads dim), or False when the fused op does
    not apply: the composite then computes (and differentiates) the mask."""
    if attn_mask is None:
        return None
    if attn_mask.requires_grad:
        return False
    if query.dim() == 3:
        if attn_mask.dim() > 3:
            return False
        return attn_mask.unsqueeze(1) if attn_mask.dim() == 3 else attn_mask
    return attn_mask


def _grouped_kv_check(query, key, value):
    """enable_gqa: RuntimeError, as torch, when key/value heads do not divide the query's."""
    q_heads, kv_heads = query.shape[-3], key.shape[-3]
    if kv_heads == 0 or q_heads % kv_heads != 0 or value.shape[-3] != kv_heads:
        raise RuntimeError(f"Number of heads in key and value must divide the number of heads in query, got query "
                           f"{list(query.shape)}, key {list(key.shape)} and value {list(value.shape)}")


def _grouped_kv(query, key, value):
    """enable_gqa for the composite: key and value heads repeated to the query's."""
    _grouped_kv_check(query, key, value)
    repeats = query.shape[-3] // key.shape[-3]
    return key.repeat_interleave(repeats, -3), value.repeat_interleave(repeats, -3)


def _broadcast_batch(query, key, value, grouped: bool):
    """q, k, v with their batch dims (all but the last two; with `grouped`,
    the heads dim of a 4-d call is left to the op) broadcast to a common shape,
    as torch's matmuls broadcast them; a broadcast input becomes a stride-0
    view, which the fused op reads in place. Dims that do not broadcast raise
    RuntimeError in torch's words (the op would take fewer key/value heads as
    grouped-query attention)."""
    tail = 3 if grouped else 2  # the dims the op takes as they are
    shapes = [tuple(t.shape[:-tail]) for t in (query, key, value)]
    if shapes[0] == shapes[1] == shapes[2]:
        return query, key, value
    common = []
    for d, dims in enumerate(zip(*shapes)):
        sizes = {n for n in dims if n != 1}
        if len(sizes) > 1:
            a = next(n for n in dims if n != 1)
            b = next(n for n in dims if n not in (1, a))
            raise RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b ({b}) at non-singleton "
                               f"dimension {d}")
        common.append(sizes.pop() if sizes else 1)
    return tuple(t.expand(*common, *t.shape[-tail:]) for t in (query, key, value))


@checked_signature("scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask, "
                   "float dropout_p, bool is_causal)")
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: Optional[float] = None, enable_gqa: bool = False):
    """torch.nn.functional.scaled_dot_product_attention. 3-d and 4-d CPU inputs
    with a mask that needs no gradient run the fused CPU op (eager/ops/attention.yaml;
    Note [Flash attention on the CPU] in eager/kernels/cpu/nn/Attention.cpp), its
    dropout form when dropout_p > 0 (the same mask the composite would draw);
    everything else the composite below (matmul, softmax, dropout)."""
    _require_tensor(value, "scaled_dot_product_attention", "value", 3)  # not declared: torch's function is Python
    fn = native("scaled_dot_product_attention")
    if fn is not None:
        return fn(query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if min(query.dim(), key.dim(), value.dim()) < 2:  # (..., L, E): the composite reads shape[-2]
        raise RuntimeError(f"scaled_dot_product_attention: query, key and value must have at least 2 dimensions, "
                           f"got {query.dim()}, {key.dim()} and {value.dim()}")
    fused = native(_FUSED) if dropout_p == 0.0 else native(_FUSED_DROPOUT)
    rank = query.dim()
    mask = False
    if (fused is not None and query.is_cpu and rank in (3, 4) and key.dim() == rank
            and value.dim() == rank and not (is_causal and attn_mask is not None)):
        mask = _fused_mask(query, attn_mask)
    gqa = enable_gqa and query.dim() >= 3 and key.dim() >= 3 and value.dim() >= 3 and \
        key.shape[-3] != query.shape[-3]
    if gqa and (mask is False or rank != 4):
        key, value = _grouped_kv(query, key, value)
        gqa = False
    elif gqa:
        _grouped_kv_check(query, key, value)  # the fused op reads head h's key/value at h / group
    if mask is not False:
        query, key, value = _broadcast_batch(query, key, value, gqa)
        if rank == 3:
            out = fused(query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1), dropout_p, is_causal,
                        attn_mask=mask, scale=scale)[0]
            return out.squeeze(1)
        return fused(query, key, value, dropout_p, is_causal, attn_mask=mask, scale=scale)[0]
    return _composite(query, key, value, attn_mask, dropout_p, is_causal, scale)


def _composite(query, key, value, attn_mask, dropout_p, is_causal, scale):
    """softmax(q k^T * scale + mask) v, with dropout on the weights, from kiln ops."""
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(f"scaled_dot_product_attention: query and key must have the same last dimension, got "
                           f"query {list(query.shape)} and key {list(key.shape)}")
    target_len, source_len = query.shape[-2], key.shape[-2]
    scale_factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    # Scaling the query, not the [L, S] scores, saves a pass over the larger tensor.
    scores = (query * scale_factor).matmul(key.transpose(-2, -1))
    # scores is this function's own temporary: the masks apply in place (no copy of [L, S] scores).
    if is_causal:
        # -inf above the diagonal, added in place: a broadcast add is cheaper than a broadcast masked_fill.
        above_diagonal = _C._functions.ones((target_len, source_len), dtype=_C.bool).triu(1)
        causal = _C._functions.zeros((target_len, source_len), dtype=scores.dtype).masked_fill_(above_diagonal,
                                                                                               float("-inf"))
        scores = scores.add_(causal)
    if attn_mask is not None:
        if attn_mask.dtype == _C.bool:
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            scores = scores + attn_mask
    if attn_mask is not None:
        weights = _safe_softmax(scores, softmax)
    else:
        weights = softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return weights.matmul(value)


def _safe_softmax(scores, softmax):
    """softmax over the last dim with 0 (not NaN) for rows that are all -inf,
    as torch's math attention (_safe_softmax) and the fused op give; those rows
    take a zero gradient. Only a mask can make a whole row -inf (the causal
    triangle keeps the diagonal)."""
    masked_rows = (scores == float("-inf")).all(-1, keepdim=True)
    return softmax(scores.masked_fill(masked_rows, 0.0), -1).masked_fill(masked_rows, 0.0)


def _masked_where_true(mask, dtype):
    """A boolean mask (True: not allowed) becomes an additive mask of -inf and 0; a float mask stays."""
    if mask is None or mask.dtype != _C.bool:
        return mask
    return _C._functions.zeros(tuple(mask.shape), dtype=dtype).masked_fill(mask, float("-inf"))


def _pad_last(mask):
    """Appends one zero (keep) column to a mask, for bias_k/bias_v and add_zero_attn."""
    if mask is None:
        return None
    extra = _C._functions.zeros(tuple(mask.shape[:-1]) + (1,), dtype=mask.dtype)
    return _C._functions.cat([mask, extra], -1)


@checked_signature("multi_head_attention_forward(Tensor query, Tensor key)")
def multi_head_attention_forward(query, key, value, embed_dim_to_check: int, num_heads: int, in_proj_weight,
                                 in_proj_bias, bias_k, bias_v, add_zero_attn: bool, dropout_p: float,
                                 out_proj_weight, out_proj_bias, training: bool = True, key_padding_mask=None,
                                 need_weights: bool = True, attn_mask=None, use_separate_proj_weight: bool = False,
                                 q_proj_weight=None, k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights: bool = True, is_causal: bool = False):
    if static_k is not None or static_v is not None:
        raise NotImplementedError("kiln.nn.functional.multi_head_attention_forward: static_k/static_v are not "
                                  "supported yet")
    _require_tensor(value, "multi_head_attention_forward", "value", 3)  # not declared: torch's function is Python
    batched = query.dim() == 3
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    target_len, batch, embed_dim = query.shape
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the causal hint replaces the mask
    else:
        is_causal = False

    # Input projections.
    if not use_separate_proj_weight:
        biases = in_proj_bias.chunk(3) if in_proj_bias is not None else (None, None, None)
        if query is key and key is value:
            q, k, v = linear(query, in_proj_weight, in_proj_bias).chunk(3, -1)
        else:
            w_q, w_k, w_v = in_proj_weight.chunk(3)
            q, k, v = linear(query, w_q, biases[0]), linear(key, w_k, biases[1]), linear(value, w_v, biases[2])
    else:
        biases = in_proj_bias.chunk(3) if in_proj_bias is not None else (None, None, None)
        q = linear(query, q_proj_weight, biases[0])
        k = linear(key, k_proj_weight, biases[1])
        v = linear(value, v_proj_weight, biases[2])

    # nn.MultiheadAttention's boolean masks are True where attention is NOT allowed.
    attn_mask = _masked_where_true(attn_mask, q.dtype)
    if attn_mask is not None and attn_mask.dim() == 2:
        attn_mask = attn_mask.unsqueeze(0)
    key_padding_mask = _masked_where_true(key_padding_mask, q.dtype)
    if bias_k is not None and bias_v is not None:
        k = _C._functions.cat([k, bias_k.expand(1, batch, embed_dim)])
        v = _C._functions.cat([v, bias_v.expand(1, batch, embed_dim)])
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)

    q = q.reshape(target_len, batch * num_heads, head_dim).transpose(0, 1)
    k = k.reshape(k.shape[0], batch * num_heads, head_dim).transpose(0, 1)
    v = v.reshape(v.shape[0], batch * num_heads, head_dim).transpose(0, 1)
    if add_zero_attn:
        zeros = _C._functions.zeros((batch * num_heads, 1, head_dim), dtype=q.dtype)
        k, v = _C._functions.cat([k, zeros], 1), _C._functions.cat([v, zeros], 1)
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
    source_len = k.shape[1]
    if key_padding_mask is not None:
        padding = key_padding_mask.reshape(batch, 1, 1, source_len).expand(batch, num_heads, 1, source_len)
        padding = padding.reshape(batch * num_heads, 1, source_len)
        attn_mask = padding if attn_mask is None else attn_mask + padding
    if not training:
        dropout_p = 0.0

    if need_weights:
        scores = (q * math.sqrt(1.0 / head_dim)).matmul(k.transpose(-2, -1))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = softmax(scores, -1)
        if dropout_p > 0.0:
            weights = dropout(weights, dropout_p, True)
        out = weights.matmul(v).transpose(0, 1).reshape(target_len * batch, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias).reshape(target_len, batch, embed_dim)
        weights = weights.reshape(batch, num_heads, target_len, source_len)
        if average_attn_weights:
            weights = reduce_mean(weights, 1)
        if not batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights

    if attn_mask is not None:
        attn_mask = attn_mask.reshape(batch, num_heads, -1, source_len) if attn_mask.shape[0] != 1 \
            else attn_mask.unsqueeze(0)
    q = q.reshape(batch, num_heads, target_len, head_dim)
    k = k.reshape(batch, num_heads, source_len, head_dim)
    v = v.reshape(batch, num_heads, source_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(batch * target_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(target_len, batch, embed_dim)
    if not batched:
        out = out.squeeze(1)
    return out, None
