"""Randomly drawn cases of the neural-network and product ops against torch
(the Draw and the runner: random_cases.py).

Each (op, seed) pair draws its own shapes (zero sizes included), dtype,
contiguity and arguments from a seeded generator, runs kiln and torch on the
same values and compares results, dtypes and gradients, or, where torch
raises, the exception type. The seeds are fixed, so a failure reproduces; the
draw covers the corners hand-written tables miss (it found the empty-batch
nll_loss backward that read past an empty gradient, and unfold's block count
for a window wider than its input).
"""

import pytest
import torch

import kiln
from random_cases import Draw, check_gradients, run_case

SEEDS = range(6)


# Every random choice is drawn before the lambdas, which run twice (torch, then kiln).
def _norms(d):
    dim, groups = d.int(-2, 2), int(d.rng.choice([1, d.C])) if d.C else 1
    return {
        "softmax": (lambda L, F, x: F.softmax(x, dim), [d.tensor(d.B, d.C, d.H)]),
        "log_softmax to float64": (lambda L, F, x: F.log_softmax(x, 1, dtype=L.float64), [d.tensor(d.B, d.C, d.H)]),
        "layer_norm": (lambda L, F, x, w, b: F.layer_norm(x, (d.H,), w, b),
                       [d.tensor(d.B, d.C, d.H), d.tensor(d.H), d.tensor(d.H)]),
        "layer_norm 2 dims, no bias": (lambda L, F, x, w: F.layer_norm(x, (d.C, d.H), w, None, 1e-3),
                                       [d.tensor(d.B, d.C, d.H), d.tensor(d.C, d.H)]),
        "rms_norm": (lambda L, F, x, w: F.rms_norm(x, (d.H,), w), [d.tensor(d.B, d.C, d.H), d.tensor(d.H)]),
        "group_norm": (lambda L, F, x, w, b: F.group_norm(x, groups, w, b),
                       # non-empty groups: torch's weight gradient of an empty group is nan, kiln's the empty sum 0
                       [d.tensor(d.B + 1, d.C, d.H + 1, d.W + 1), d.tensor(d.C), d.tensor(d.C)]),
        "batch_norm train": (lambda L, F, x, w, b: F.batch_norm(x, L.zeros(d.C, dtype=x.dtype),
                                                               L.ones(d.C, dtype=x.dtype), w, b, True, 0.3),
                             [d.tensor(d.B + 2, d.C, d.H), d.tensor(d.C), d.tensor(d.C)]),
        "batch_norm eval": (lambda L, F, x, m, v: F.batch_norm(x, m, v.abs() + 0.1, None, None, False),
                            [d.tensor(d.B, d.C, d.H, d.W), d.tensor(d.C, grad=False), d.tensor(d.C, grad=False)]),
    }


def _losses(d):
    return {
        "cross_entropy ignore_index, label_smoothing": (
            lambda L, F, x, t: F.cross_entropy(x, t, ignore_index=0, label_smoothing=0.1),
            [d.tensor(d.B, d.C + 1, d.H), d.index(d.B, d.H, high=d.C + 1)]),
        "cross_entropy class weight, sum": (
            lambda L, F, x, t, w: F.cross_entropy(x, t, weight=w.abs(), reduction="sum"),
            [d.tensor(d.B, d.C + 1), d.index(d.B, high=d.C + 1), d.tensor(d.C + 1, grad=False)]),
        "cross_entropy probabilities": (
            lambda L, F, x, t: F.cross_entropy(x, t.softmax(1), label_smoothing=0.2),
            [d.tensor(d.B, d.C, d.H), d.tensor(d.B, d.C, d.H, grad=False)]),
        "nll_loss none": (lambda L, F, x, t: F.nll_loss(x, t, reduction="none"),
                          [d.tensor(d.B, d.C, d.H), d.index(d.B, d.H, high=d.C)]),
        "smooth_l1_loss": (lambda L, F, x, y: F.smooth_l1_loss(x, y, beta=0.5), [d.tensor(d.B, d.C), d.tensor(d.B, d.C)]),
        "kl_div log_target": (lambda L, F, x, y: F.kl_div(x, y, reduction="batchmean", log_target=True),
                              [d.tensor(d.B + 1, d.C), d.tensor(d.B + 1, d.C)]),
        "bce_with_logits pos_weight": (
            lambda L, F, x, y, w: F.binary_cross_entropy_with_logits(x, y.sigmoid(), pos_weight=w),
            [d.tensor(d.B, d.C), d.tensor(d.B, d.C, grad=False), d.tensor(d.C, grad=False)]),
        "binary_cross_entropy": (lambda L, F, x, y: F.binary_cross_entropy(x.sigmoid(), y.sigmoid()),
                                 [d.tensor(d.B, d.C), d.tensor(d.B, d.C, grad=False)]),
        "embedding padding_idx": (lambda L, F, i, w: F.embedding(i, w, padding_idx=1),
                                  [d.index(d.B, d.H, high=d.C + 2), d.tensor(d.C + 2, d.W)]),
    }


def _attention(d):
    causal = bool(d.int(0, 2))
    return {
        "sdpa causal or not, scale": (
            lambda L, F, q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=0.3),
            [d.tensor(d.B, 2, d.H, 4), d.tensor(d.B, 2, d.H, 4), d.tensor(d.B, 2, d.H, 5)]),
        "sdpa additive mask": (
            lambda L, F, q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
            [d.tensor(d.B, 2, d.H, 4), d.tensor(d.B, 2, d.W, 4), d.tensor(d.B, 2, d.W, 5),
             d.tensor(d.H, d.W, grad=False)]),
        "sdpa boolean mask": (
            lambda L, F, q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m > -0.5),
            [d.tensor(d.B, 2, d.H, 4), d.tensor(d.B, 2, d.W, 4), d.tensor(d.B, 2, d.W, 5),
             d.tensor(1, d.H, d.W, grad=False)]),
        "sdpa gqa": (lambda L, F, q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
                     [d.tensor(d.B, 4, d.H, 4), d.tensor(d.B, 2, d.W, 4), d.tensor(d.B, 2, d.W, 3)]),
    }


def _convolutions(d):
    s, p, dil = d.int(1, 3), d.int(0, 2), d.int(1, 3)
    c = max(d.C, 1)  # torch returns [N, 0, ...] for zero input channels, whatever the weight says
    return {
        "conv2d stride, padding, dilation, bias": (
            lambda L, F, x, w, b: F.conv2d(x, w, b, stride=s, padding=p, dilation=dil),
            [d.tensor(d.B, c, d.H + 2, d.W + 2), d.tensor(2, c, 2, 3), d.tensor(2)]),
        "conv2d same": (lambda L, F, x, w: F.conv2d(x, w, padding="same", dilation=dil),
                        [d.tensor(d.B, c, d.H, d.W), d.tensor(4, c, 3, 2)]),
        "conv2d groups": (lambda L, F, x, w: F.conv2d(x, w, groups=2, stride=s),
                          [d.tensor(d.B, 2 * c, d.H, d.W), d.tensor(4, c, 2, 2)]),
        "conv1d": (lambda L, F, x, w: F.conv1d(x, w, stride=s, padding=p, dilation=dil),
                   [d.tensor(d.B, c, d.W + 4), d.tensor(3, c, 3)]),
        "max_pool2d": (lambda L, F, x: F.max_pool2d(x, 2, stride=s, padding=p, ceil_mode=bool(p)),
                       [d.tensor(d.B, d.C, d.H, d.W)]),
        "max_pool2d indices": (lambda L, F, x: F.max_pool2d(x, (2, 3), dilation=dil, return_indices=True)[1],
                               [d.tensor(d.B, d.C, d.H + 2, d.W + 3)]),
        "avg_pool2d": (lambda L, F, x: F.avg_pool2d(x, 3, stride=s, padding=1, ceil_mode=True,
                                                     count_include_pad=bool(p)), [d.tensor(d.B, d.C, d.H, d.W)]),
        "adaptive_avg_pool2d": (lambda L, F, x: F.adaptive_avg_pool2d(x, (max(d.H - 1, 1), 2)),
                                [d.tensor(d.B, d.C, d.H, d.W)]),
        "unfold": (lambda L, F, x: F.unfold(x, (2, 3), dilation=dil, padding=p, stride=s),
                   [d.tensor(d.B + 1, d.C, d.H, d.W)]),
    }


def _shapes(d):
    align, p = bool(d.int(0, 2)), float(d.rng.choice([1.0, 2.0, 0.5, 3.0, float("inf")]))
    return {
        "pad reflect": (lambda L, F, x: F.pad(x, (1, 2, 0, 1), mode="reflect"), [d.tensor(d.B + 1, d.C, d.H, d.W)]),
        "pad replicate": (lambda L, F, x: F.pad(x, (1, 2, 2, 1), mode="replicate"),
                          [d.tensor(d.B + 1, d.C, d.H, d.W)]),
        "pad circular": (lambda L, F, x: F.pad(x, (1, 2), mode="circular"), [d.tensor(d.B + 1, d.C, d.W)]),
        "pad constant, negative": (lambda L, F, x: F.pad(x, (1, -1, 2, 0), value=2.5), [d.tensor(d.B, d.C, d.H, d.W)]),
        "interpolate nearest": (lambda L, F, x: F.interpolate(x, scale_factor=1.7, mode="nearest"),
                                [d.tensor(d.B + 1, d.C, d.H, d.W)]),
        "interpolate bilinear": (lambda L, F, x: F.interpolate(x, size=(d.H + 3, max(d.W - 1, 1)), mode="bilinear",
                                                               align_corners=align),
                                 [d.tensor(d.B + 1, d.C, d.H, d.W)]),
        "topk": (lambda L, F, x: L.topk(x, min(2, d.H), dim=-1, largest=align), [d.tensor(d.B, d.C, d.H)]),
        "sort stable": (lambda L, F, x: L.sort(x, dim=1, descending=align, stable=True), [d.tensor(d.B, d.C, d.H)]),
        "argsort of ties": (lambda L, F, x: L.argsort(x.round(), dim=-1, stable=True),
                            [d.tensor(d.B, d.C, d.H, grad=False)]),
        "cdist": (lambda L, F, a, b: L.cdist(a, b, p=p),
                  [d.tensor(d.B, d.H, d.C), d.tensor(d.B, d.W, d.C)]),
    }


def _products(d):
    return {
        "matmul broadcast batch": (lambda L, F, a, b: L.matmul(a, b), [d.tensor(d.B, 1, d.H, d.C), d.tensor(3, d.C, d.W)]),
        "matmul 1-d @ 3-d": (lambda L, F, a, b: a @ b, [d.tensor(d.C), d.tensor(d.B, d.C, d.W)]),
        "linear": (lambda L, F, x, w, b: F.linear(x, w, b), [d.tensor(d.B, d.H, d.C), d.tensor(d.W, d.C), d.tensor(d.W)]),
        "baddbmm": (lambda L, F, s, a, b: L.baddbmm(s, a, b, beta=0.5, alpha=2),
                    [d.tensor(1, d.H, d.W), d.tensor(d.B, d.H, d.C), d.tensor(d.B, d.C, d.W)]),
        "addbmm": (lambda L, F, s, a, b: L.addbmm(s, a, b),
                   [d.tensor(d.H, d.W), d.tensor(d.B, d.H, d.C), d.tensor(d.B, d.C, d.W)]),
        "einsum attention scores": (lambda L, F, q, k: L.einsum("bhqd,bhkd->bhqk", q, k),
                                    [d.tensor(d.B, 2, d.H, d.C), d.tensor(d.B, 2, d.W, d.C)]),
        "einsum bilinear": (lambda L, F, x, a, y: L.einsum("bi,oij,bj->bo", x, a, y),
                            [d.tensor(d.B, d.C), d.tensor(3, d.C, d.H), d.tensor(d.B, d.H)]),
    }


def _more_layers(d):
    s, p, dil = d.int(1, 3), d.int(0, 2), d.int(1, 3)
    offsets = ([0] + sorted(d.rng.integers(0, d.B * d.H + 1, d.B - 1).tolist())) if d.B else []
    if offsets:
        offsets[-1] = d.B * d.H  # torch's float32 and float64 paths disagree on a smaller last offset
    bag_mode, last = str(d.rng.choice(["sum", "mean", "max"])), bool(d.int(0, 2))
    return {
        "conv_transpose2d": (lambda L, F, x, w, b: F.conv_transpose2d(x, w, b, stride=s, padding=p, dilation=dil),
                             [d.tensor(d.B, d.C, d.H, d.W), d.tensor(d.C, 2, 3, 2), d.tensor(2)]),
        "conv_transpose1d groups": (lambda L, F, x, w: F.conv_transpose1d(x, w, groups=2, stride=2, output_padding=1),
                                    [d.tensor(d.B, 2 * d.C, d.W), d.tensor(2 * d.C, 2, 3)]),
        "max_pool1d": (lambda L, F, x: F.max_pool1d(x, 3, stride=s, padding=1, ceil_mode=bool(p)),
                       [d.tensor(d.B, d.C, d.W + 2)]),
        "avg_pool1d": (lambda L, F, x: F.avg_pool1d(x, 3, stride=s, padding=1, ceil_mode=bool(p),
                                                     count_include_pad=bool(dil - 1)), [d.tensor(d.B, d.C, d.W + 2)]),
        "adaptive_max_pool2d": (lambda L, F, x: F.adaptive_max_pool2d(x, (s + 1, dil)), [d.tensor(d.B, d.C, d.H, d.W)]),
        "interpolate bicubic": (lambda L, F, x: F.interpolate(x, size=(d.H + 2, d.W + 1), mode="bicubic",
                                                              align_corners=bool(p)), [d.tensor(d.B + 1, d.C, d.H, d.W)]),
        # channels >= 1: torch's area backward refuses an empty channel dim that its forward accepted
        "interpolate area": (lambda L, F, x: F.interpolate(x, size=(d.H + 1, d.W + 1), mode="area"),
                             [d.tensor(d.B + 1, d.C + 1, d.H + 2, d.W + 2)]),
        "embedding_bag": (lambda L, F, i, w, o: F.embedding_bag(i, w, o, mode=bag_mode, include_last_offset=last),
                          [d.index(d.B * d.H, high=d.C + 1), d.tensor(d.C + 1, d.W),
                           (kiln.tensor(offsets, dtype=kiln.int64), torch.tensor(offsets, dtype=torch.int64))]),
        "cosine_similarity broadcast": (lambda L, F, a, b: F.cosine_similarity(a, b, dim=1),
                                        [d.tensor(d.B, d.C, d.H), d.tensor(d.B, 1, d.H)]),
        "normalize": (lambda L, F, x: F.normalize(x, p=float(s + dil), dim=-1), [d.tensor(d.B, d.C, d.H)]),
        "triplet_margin_loss": (lambda L, F, a, b, c: F.triplet_margin_loss(a, b, c, swap=bool(p)),
                                [d.tensor(d.B, d.C), d.tensor(d.B, d.C), d.tensor(d.B, d.C)]),
        "multi_margin_loss": (lambda L, F, x, t: F.multi_margin_loss(x, t, p=s, margin=0.5),
                              [d.tensor(d.B, d.C), d.index(d.B, high=d.C)]),
        "grid_sample": (lambda L, F, x, g: F.grid_sample(x, g.tanh() * 1.2, mode=("bilinear", "nearest")[p],
                                                         padding_mode=("zeros", "border", "reflection")[dil],
                                                         align_corners=bool(s - 1)),
                        [d.tensor(d.B, d.C, d.H, d.W), d.tensor(d.B, d.H + 1, d.W, 2)]),
        "ctc_loss": (lambda L, F, lp, t: F.ctc_loss(lp.log_softmax(2), t, [d.W + 3] * d.B, [min(d.H, d.W)] * d.B,
                                                    reduction=("mean", "sum")[p], zero_infinity=True),
                     # targets are classes 1.., never the blank 0
                     [d.tensor(d.W + 3, d.B, d.C + 2), tuple(t + 1 for t in d.index(d.B, d.H, high=d.C + 1))]),
    }


GROUPS = [_norms, _losses, _attention, _convolutions, _shapes, _products, _more_layers]
NAMES = [(group, name) for group in GROUPS for name in group(Draw(0, ""))]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("group,name", NAMES, ids=[name for _, name in NAMES])
def test_random_case_matches_torch(group, name, seed):
    d = Draw(seed, name)
    ran = run_case(d, group, name)
    if ran is not None:
        check_gradients(d, name, ran)


# torch refuses these in float16 and bfloat16 ("not implemented for 'Half'"); kiln computes them in float32.
REDUCED_NAMES = [(group, name) for group, name in NAMES if name not in ("cdist", "multi_margin_loss", "ctc_loss")]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("group,name", REDUCED_NAMES, ids=[name for _, name in REDUCED_NAMES])
def test_random_case_in_reduced_precision_matches_torch(group, name, seed):
    """The same draws in float16 and bfloat16, forward only (torch computes these in float32 too)."""
    run_case(Draw(seed, name, dtypes=("float16", "bfloat16"), grads=False), group, name)
