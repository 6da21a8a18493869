"""The loss functions of kiln.nn.functional (re-exported there), with torch's
signatures, legacy size_average/reduce arguments and reductions: the likelihood and
regression losses (nll, cross entropy, mse, l1, smooth l1, huber, binary cross entropy,
kl_div, Poisson and Gaussian NLL) and the margin / embedding losses (margin ranking, hinge,
soft margin, cosine embedding, triplet, multi-margin, multilabel margin), each as
aten/src/ATen/native/Loss.cpp defines it. ctc_loss is in _ctc.py.

Imports: kiln._C, kiln.nn._ops, _activations and _distances only.

See Note [Functional calls the C++ op where one exists] in kiln/nn/functional.py.
"""

from __future__ import annotations

import math
import warnings
from typing import Optional

from kiln import _C
from kiln._arguments import checked_signature
from kiln.nn._activations import log_softmax, logsigmoid
from kiln.nn._distances import pairwise_distance
from kiln.nn._ops import _scalar_name, native, reduce_mean, reduce_sum
from kiln.nn._ops import functions as _functions

__all__ = ["cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "margin_ranking_loss",
           "hinge_embedding_loss", "soft_margin_loss", "cosine_embedding_loss", "triplet_margin_loss",
           "triplet_margin_with_distance_loss", "poisson_nll_loss", "gaussian_nll_loss",
           "multilabel_soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss"]

_REDUCTION_ENUM = {"none": 0, "mean": 1, "sum": 2}


def _legacy_reduction(size_average, reduce, reduction: str) -> str:
    """torch's _Reduction.legacy_get_string: the old size_average/reduce flags win when given."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    result = ("mean" if size_average else "sum") if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{result}' instead.")
    return result


def _check_reduction(reduction: str) -> None:
    if reduction not in _REDUCTION_ENUM:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduce(loss, reduction: str):
    _check_reduction(reduction)
    if reduction == "none":
        return loss
    return reduce_mean(loss) if reduction == "mean" else reduce_sum(loss)


def _check_same_size(name: str, input, target) -> None:
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({_C.Size(target.shape)}) that is different to the input size "
                      f"({_C.Size(input.shape)}). This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", stacklevel=3)


def _class_dim(input) -> int:
    return 1 if input.dim() >= 2 else 0


@checked_signature("nll_loss(Tensor input, Tensor target)")
def nll_loss(input, target, weight=None, size_average: Optional[bool] = None, ignore_index: int = -100,
             reduce: Optional[bool] = None, reduction: str = "mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    return _functions.nll_loss(input, target, weight, _REDUCTION_ENUM[reduction], ignore_index)


def _per_class(label_smoothing: float, classes: int) -> float:
    """label_smoothing / classes with C++'s double division (torch's): zero classes give inf, not an exception."""
    return label_smoothing / classes if classes else float("inf")


@checked_signature("cross_entropy(Tensor input, Tensor target)")
def cross_entropy(input, target, weight=None, size_average: Optional[bool] = None, ignore_index: int = -100,
                  reduce: Optional[bool] = None, reduction: str = "mean", label_smoothing: float = 0.0):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    # The C++ op covers class indices without smoothing; the rest is the composite below.
    if label_smoothing == 0.0 and not target.dtype.is_floating_point:
        return _functions.cross_entropy_loss(input, target, weight, _REDUCTION_ENUM[reduction], ignore_index,
                                             label_smoothing)
    dim = _class_dim(input)
    classes = input.shape[dim]
    log_probs = log_softmax(input, dim)
    weight_shape = [1] * input.dim()
    weight_shape[dim] = classes
    if target.dtype.is_floating_point:  # class probabilities
        if tuple(target.shape) != tuple(input.shape):
            raise RuntimeError(f"Expected target size {list(input.shape)}, got {list(target.shape)}")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + _per_class(label_smoothing, classes)
        terms = log_probs * target
        if weight is not None:
            terms = terms * weight.reshape(weight_shape)
        loss = -reduce_sum(terms, dim, False)
        if reduction == "mean":
            return reduce_sum(loss) / (input.numel() // classes) if input.numel() else reduce_sum(loss) / 0.0
        return reduce_sum(loss) if reduction == "sum" else loss
    nll = nll_loss(log_probs, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing <= 0:
        return nll
    ignored = target == ignore_index
    terms = log_probs * weight.reshape(weight_shape) if weight is not None else log_probs
    smooth = (-reduce_sum(terms, dim, False)).masked_fill(ignored, 0.0)
    if reduction == "mean":
        if weight is not None:
            kept = target.masked_select(ignored.logical_not())
            smooth = reduce_sum(smooth) / reduce_sum(weight.index_select(0, kept))
        else:
            kept = _C._functions.ones(tuple(target.shape), dtype=input.dtype).masked_fill(ignored, 0.0)
            smooth = reduce_sum(smooth) / reduce_sum(kept)
    elif reduction == "sum":
        smooth = reduce_sum(smooth)
    return nll * (1 - label_smoothing) + smooth * _per_class(label_smoothing, classes)


@checked_signature("mse_loss(Tensor input, Tensor target)")
def mse_loss(input, target, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
             reduction: str = "mean", weight=None):
    _check_same_size("mse_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    diff = input - target
    loss = diff * diff
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@checked_signature("l1_loss(Tensor input, Tensor target)")
def l1_loss(input, target, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
            reduction: str = "mean", weight=None):
    _check_same_size("l1_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = _functions.abs(input - target)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@checked_signature("smooth_l1_loss(Tensor input, Tensor target)")
def smooth_l1_loss(input, target, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                   reduction: str = "mean", beta: float = 1.0):
    _check_same_size("smooth_l1_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    diff = _functions.abs(input - target)
    if beta == 0:
        return _reduce(diff, reduction)
    loss = _C._functions.where(diff < beta, diff * diff * (0.5 / beta), diff - 0.5 * beta)
    return _reduce(loss, reduction)


@checked_signature("huber_loss(Tensor input, Tensor target)")
def huber_loss(input, target, reduction: str = "mean", delta: float = 1.0, weight=None):
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _check_same_size("huber_loss", input, target)
    diff = _functions.abs(input - target)
    loss = _C._functions.where(diff < delta, diff * diff * 0.5, (diff - 0.5 * delta) * delta)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _check_unit_interval(t, what: str) -> None:
    """torch's binary_cross_entropy check: every element in [0, 1] (NaN fails it)."""
    if t.numel() and not bool(((t >= 0) & (t <= 1)).all()):
        raise RuntimeError(f"all elements of {what} should be between 0 and 1")


@checked_signature("binary_cross_entropy(Tensor input, Tensor target)")
def binary_cross_entropy(input, target, weight=None, size_average: Optional[bool] = None,
                         reduce: Optional[bool] = None, reduction: str = "mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({_C.Size(target.shape)}) that is different to the input size "
                         f"({_C.Size(input.shape)}) is deprecated. Please ensure they have the same size.")
    _check_unit_interval(input, "input")
    _check_unit_interval(target, "target")
    fn = native("binary_cross_entropy")
    if fn is not None:
        return fn(input, target, weight, _REDUCTION_ENUM[reduction])
    log_p = _functions.log(input).clamp_min(-100.0)
    log_q = _functions.log(1 - input).clamp_min(-100.0)
    loss = -(target * log_p + (1 - target) * log_q)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@checked_signature("binary_cross_entropy_with_logits(Tensor input, Tensor target)")
def binary_cross_entropy_with_logits(input, target, weight=None, size_average: Optional[bool] = None,
                                     reduce: Optional[bool] = None, reduction: str = "mean", pos_weight=None):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({_C.Size(target.shape)}) must be the same as input size "
                         f"({_C.Size(input.shape)})")
    fn = native("binary_cross_entropy_with_logits")
    if fn is not None:
        return fn(input, target, weight, pos_weight, _REDUCTION_ENUM[reduction])
    # log(1 + exp(-|x|)) + max(-x, 0) is log(1 + exp(-x)) without overflow.
    softplus_neg = _functions.log1p(_functions.exp(-_functions.abs(input))) + _functions.relu(-input)
    if pos_weight is not None:
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * input + log_weight * softplus_neg
    else:
        loss = (1 - target) * input + softplus_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@checked_signature("kl_div(Tensor input, Tensor target)")
def kl_div(input, target, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
           reduction: str = "mean", log_target: bool = False):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.")
    if log_target:
        loss = _functions.exp(target) * (target - input)
    else:
        loss = _functions.xlogy(target, target) - target * input
    if reduction == "batchmean":
        return reduce_sum(loss) / input.shape[0] if input.dim() else reduce_sum(loss)
    return _reduce(loss, reduction)


# --- margin and embedding losses ---------------------------------------------------------------
@checked_signature("margin_ranking_loss(Tensor input1, Tensor input2, Tensor target)")
def margin_ranking_loss(input1, input2, target, margin: float = 0.0, size_average=None, reduce=None,
                        reduction: str = "mean"):
    """max(0, -target * (input1 - input2) + margin)."""
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {list(input1.shape)}, input2: {list(input2.shape)}, target: {list(target.shape)} ")
    return _reduce(_functions.clamp_min(-target * (input1 - input2) + margin, 0), reduction)


@checked_signature("hinge_embedding_loss(Tensor input, Tensor target)")
def hinge_embedding_loss(input, target, margin: float = 1.0, size_average=None, reduce=None, reduction: str = "mean"):
    """x where target is 1, max(0, margin - x) where it is -1 (summed where both apply)."""
    kiln = _functions
    zeros = input * 0
    margin_part = kiln.where(target == 1, zeros, kiln.clamp_min(margin - input, 0))
    self_part = kiln.where(target == -1, zeros, input)
    return _reduce(margin_part + self_part, reduction)


@checked_signature("soft_margin_loss(Tensor input, Tensor target)")
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """log(1 + exp(-target * input))."""
    return _reduce(_functions.log1p(_functions.exp(-input * target)), reduction)  # input first: torch's error names


@checked_signature("cosine_embedding_loss(Tensor input1, Tensor input2, Tensor target)")
def cosine_embedding_loss(input1, input2, target, margin: float = 0.0, size_average=None, reduce=None,
                          reduction: str = "mean"):
    """1 - cos(x1, x2) for target 1, max(0, cos(x1, x2) - margin) for target -1."""
    kiln = _functions
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


@checked_signature("triplet_margin_loss(Tensor anchor, Tensor positive, Tensor negative)")
def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average=None, reduce=None, reduction: str = "mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with d the pairwise p-norm distance."""
    if margin <= 0:  # F's check; torch.triplet_margin_loss (aten) takes any margin (triplet_margin_loss_any_margin)
        raise ValueError(f"margin must be greater than 0, got {margin}")
    return triplet_margin_loss_any_margin(anchor, positive, negative, margin, p, eps, swap, reduction)


def triplet_margin_loss_any_margin(anchor, positive, negative, margin: float, p: float, eps: float, swap: bool,
                                   reduction: str):
    """torch.triplet_margin_loss's computation, with no check on the margin."""
    if not anchor.dim() == positive.dim() == negative.dim():
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.dim()}D, positive {positive.dim()}D, and negative "
                           f"{negative.dim()}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _functions.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(_functions.clamp_min(margin + d_pos - d_neg, 0), reduction)


@checked_signature("poisson_nll_loss(Tensor input, Tensor target)")
def poisson_nll_loss(input, target, log_input: bool = True, full: bool = False, size_average=None, eps: float = 1e-8,
                     reduce=None, reduction: str = "mean"):
    """exp(input) - target * input (log_input), or input - target * log(input + eps); plus Stirling's term if full."""
    kiln = _functions
    loss = kiln.exp(input) - target * input if log_input else input - target * kiln.log(input + eps)
    if full:
        stirling = target * kiln.log(target) - target + 0.5 * kiln.log(2 * math.pi * target)
        loss = loss + stirling.masked_fill(target <= 1, 0)  # not stirling * 0: 0 * log(0) is NaN
    return _reduce(loss, reduction)


@checked_signature("gaussian_nll_loss(Tensor input, Tensor target)")
def gaussian_nll_loss(input, target, var, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
    """0.5 * (log(max(var, eps)) + (input - target)^2 / max(var, eps)) (+ 0.5 log(2 pi) if full)."""
    kiln = _functions
    if isinstance(var, float):  # torch takes a float variance for every element
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * kiln.ones_like(input)
    elif not isinstance(var, _C.TensorBase):
        raise TypeError(f"gaussian_nll_loss(): argument 'var' must be Tensor or float, not {type(var).__name__}")
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
    raise ValueError(f"{reduction} is not valid")  # gaussian_nll_loss's own wording in torch


@checked_signature("multilabel_soft_margin_loss(Tensor input, Tensor target)")
def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
    """-mean over classes of target log sigmoid(x) + (1 - target) log sigmoid(-x)."""
    if input.dim() == 0:  # the classes are the last dim
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(input.dim() - 1) / input.shape[-1]
    return _reduce(loss, reduction)


def _check_multi_margin(input, target, weight=None) -> None:
    """torch's multi_margin_loss checks and words, in its order: a non-empty vector or [batch, classes]
    matrix, one target per sample, one weight per class, int64 targets, each a class index."""
    nd, shape = input.dim(), list(input.shape)
    if not ((nd == 2 and shape[1] != 0) or (nd == 1 and shape[0] != 0) or nd == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: {shape}")
    batch = shape[0] if nd == 2 else 1
    classes = shape[-1] if nd else 1
    if target.dim() > 1 or target.numel() != batch:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{batch}], but got {list(target.shape)}. "
                           f"Input has shape {shape}.")
    if weight is not None and (weight.dim() > 1 or weight.numel() != classes):
        raise RuntimeError(f"inconsistent weight size, expected {classes} but got {list(weight.shape)}")
    if target.dtype != _C.int64:
        raise RuntimeError(f"expected scalar type Long but found {_scalar_name(target.dtype)}")
    if target.numel() and not bool(((target >= 0) & (target < classes)).all()):
        raise RuntimeError("target out of range")


@checked_signature("multi_margin_loss(Tensor input, Tensor target)")
def multi_margin_loss(input, target, p: int = 1, margin: float = 1.0, weight=None, size_average=None, reduce=None,
                      reduction: str = "mean"):
    """sum over i != y of max(0, margin - x[y] + x[i])^p / C, per sample (y the target class)."""
    kiln = _functions
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    _check_multi_margin(input, target, weight)
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


@checked_signature("triplet_margin_with_distance_loss(Tensor anchor, Tensor positive, Tensor negative)")
def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean"):
    """F.triplet_margin_with_distance_loss: max(margin + d(a, p) - d(a, n), 0), d pairwise_distance by default."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a_dim, p_dim, n_dim = anchor.dim(), positive.dim(), negative.dim()
    if not (a_dim == p_dim and p_dim == n_dim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and negative {n_dim}D inputs")
    distance = distance_function if distance_function is not None else pairwise_distance
    dist_pos = distance(anchor, positive)
    dist_neg = distance(anchor, negative)
    if swap:
        dist_neg = _functions.minimum(dist_neg, distance(positive, negative))
    loss = (dist_pos + margin - dist_neg).clamp_min(0)
    if reduction == "sum":
        return loss.sum()
    return loss.mean() if reduction == "mean" else loss


@checked_signature("multilabel_margin_loss(Tensor input, Tensor target)")
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """sum over the target classes j (up to the first -1) and the other classes i of
    max(0, 1 - (x[j] - x[i])), divided by the class count."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if input.dim() > 2 or (input.dim() == 2 and input.shape[1] == 0) or (input.dim() == 1 and input.numel() == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    if target.dtype != _C.int64:
        raise RuntimeError(f"expected scalar type Long but found {_scalar_name(target.dtype)}")
    x = input.reshape(-1, input.shape[-1] if input.dim() else 1)
    y = target.reshape(tuple(x.shape))
    classes = x.shape[1]
    if x.numel() and (bool((y < -1).any()) or bool((y >= classes).any())):
        raise RuntimeError("argument #2 'target' is out of range")
    valid = (y >= 0).to(_C.int64).cumprod(1)                          # the targets before the first -1
    labels = y.clamp_min(0)
    is_target = _functions.zeros(tuple(x.shape), dtype=_C.int64).scatter_add(1, labels, valid) > 0
    picked = x.gather(1, labels)                                      # [N, T]
    margins = _functions.clamp_min(1 - picked.unsqueeze(2) + x.unsqueeze(1), 0)  # [N, T, C]
    keep = (valid > 0).unsqueeze(2) & ~is_target.unsqueeze(1)
    loss = _functions.where(keep, margins, margins * 0).sum((1, 2)) / classes
    if input.dim() < 2:
        loss = loss.reshape(())
        return loss if reduction == "none" else _reduce(loss, reduction)
    return _reduce(loss, reduction)

