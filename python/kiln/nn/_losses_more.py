"""More of torch.nn.functional's losses, composed from kiln's ops (their
gradients are those ops'): margin_ranking_loss, hinge_embedding_loss,
soft_margin_loss, cosine_embedding_loss, triplet_margin_loss,
poisson_nll_loss, gaussian_nll_loss, multilabel_soft_margin_loss and
multi_margin_loss, each as aten/src/ATen/native/Loss.cpp defines it.
Re-exported by kiln.nn.functional."""

from __future__ import annotations

import math

from kiln import _C
from kiln.nn._losses import _reduce


def _f():
    return _C._functions


def margin_ranking_loss(input1, input2, target, margin: float = 0.0, size_average=None, reduce=None,
                        reduction: str = "mean"):
    """max(0, -target * (input1 - input2) + margin)."""
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {list(input1.shape)}, input2: {list(input2.shape)}, target: {list(target.shape)} ")
    return _reduce(_f().clamp_min(-target * (input1 - input2) + margin, 0), reduction)


def hinge_embedding_loss(input, target, margin: float = 1.0, size_average=None, reduce=None, reduction: str = "mean"):
    """x where target is 1, max(0, margin - x) where it is -1 (summed where both apply)."""
    kiln = _f()
    zeros = input * 0
    margin_part = kiln.where(target == 1, zeros, kiln.clamp_min(margin - input, 0))
    self_part = kiln.where(target == -1, zeros, input)
    return _reduce(margin_part + self_part, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """log(1 + exp(-target * input))."""
    return _reduce(_f().log1p(_f().exp(-target * input)), reduction)


def cosine_embedding_loss(input1, input2, target, margin: float = 0.0, size_average=None, reduce=None,
                          reduction: str = "mean"):
    """1 - cos(x1, x2) for target 1, max(0, cos(x1, x2) - margin) for target -1."""
    kiln = _f()
    if input1.dim() != input2.dim() or input1.dim() not in (1, 2):
        raise RuntimeError(f"cosine_embedding_loss : 1D or 2D input tensors are expected but got input1 of "
                           f"{input1.dim()}D and input2 of {input2.dim()}D")
    eps = 1e-12
    dim = input1.dim() - 1
    prod_sum = (input1 * input2).sum(dim)
    mag_square1 = (input1 * input1).sum(dim) + eps
    mag_square2 = (input2 * input2).sum(dim) + eps
    cos = prod_sum / kiln.sqrt(mag_square1 * mag_square2)
    zeros = cos * 0
    pos = 1 - cos
    neg = kiln.clamp_min(cos - margin, 0)
    loss = kiln.where(target == 1, pos, zeros) + kiln.where(target == -1, neg, zeros)
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average=None, reduce=None, reduction: str = "mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with d the pairwise p-norm distance."""
    from kiln.nn import functional as F

    if not anchor.dim() == positive.dim() == negative.dim():
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.dim()}D, positive {positive.dim()}D, and negative "
                           f"{negative.dim()}D inputs")
    d_pos = F.pairwise_distance(anchor, positive, p, eps)
    d_neg = F.pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _f().minimum(d_neg, F.pairwise_distance(positive, negative, p, eps))
    return _reduce(_f().clamp_min(margin + d_pos - d_neg, 0), reduction)


def poisson_nll_loss(input, target, log_input: bool = True, full: bool = False, size_average=None, eps: float = 1e-8,
                     reduce=None, reduction: str = "mean"):
    """exp(input) - target * input (log_input), or input - target * log(input + eps); plus Stirling's term if full."""
    kiln = _f()
    loss = kiln.exp(input) - target * input if log_input else input - target * kiln.log(input + eps)
    if full:
        stirling = target * kiln.log(target) - target + 0.5 * kiln.log(2 * math.pi * target)
        loss = loss + kiln.where(target > 1, stirling, stirling * 0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
    """0.5 * (log(max(var, eps)) + (input - target)^2 / max(var, eps)) (+ 0.5 log(2 pi) if full)."""
    kiln = _f()
    if var.dim() == input.dim() - 1 and tuple(var.shape) == tuple(input.shape[:-1]):
        var = var.unsqueeze(-1)
    elif tuple(var.shape) != tuple(input.shape) and not (var.dim() == input.dim() and var.shape[-1] == 1):
        if var.numel() != 1:
            raise ValueError("var is of incorrect size")
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    var = kiln.clamp_min(var.detach(), eps) - var.detach() + var  # clamp without blocking var's gradient, as torch
    loss = 0.5 * (kiln.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
    """-mean over classes of target log sigmoid(x) + (1 - target) log sigmoid(-x)."""
    from kiln.nn import functional as F

    loss = -(target * F.logsigmoid(input) + (1 - target) * F.logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(input.dim() - 1) / input.shape[-1]
    return _reduce(loss, reduction)


def _check_multi_margin(input, target) -> None:
    """torch's multi_margin_loss checks and words: a non-empty vector or [batch, classes] matrix, one target per
    sample, each a class index."""
    nd, shape = input.dim(), list(input.shape)
    if not ((nd == 2 and shape[1] != 0) or (nd == 1 and shape[0] != 0) or nd == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: {shape}")
    batch = shape[0] if nd == 2 else 1
    classes = shape[-1] if nd else 1
    if target.dim() > 1 or target.numel() != batch:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{batch}], but got {list(target.shape)}. "
                           f"Input has shape {shape}.")
    if target.numel() and not bool(((target >= 0) & (target < classes)).all()):
        raise RuntimeError("target out of range")


def multi_margin_loss(input, target, p: int = 1, margin: float = 1.0, weight=None, size_average=None, reduce=None,
                      reduction: str = "mean"):
    """sum over i != y of max(0, margin - x[y] + x[i])^p / C, per sample (y the target class)."""
    kiln = _f()
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    _check_multi_margin(input, target)
    x = input if input.dim() == 2 else input.reshape(1, -1)
    y = target.reshape(-1, 1)
    picked = x.gather(1, y)
    margins = kiln.clamp_min(margin - picked + x, 0)
    if p == 2:
        margins = margins * margins
    if weight is not None:
        margins = margins * weight.index_select(0, target.reshape(-1)).unsqueeze(1)
    margins = margins.scatter(1, y, 0.0)
    loss = margins.sum(1) / x.shape[1]
    if input.dim() < 2:
        loss = loss.reshape(())
    return _reduce(loss, reduction)
