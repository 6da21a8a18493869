"""The loss functions of kiln.nn.functional (re-exported there), with torch's
signatures, legacy size_average/reduce arguments and reductions.

See Note [Functional calls the C++ op where one exists] in kiln/nn/functional.py.
"""

from __future__ import annotations

import warnings
from typing import Optional

from kiln import _C
from kiln.nn._ops import native, ops, reduce_mean, reduce_sum

__all__ = ["cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div"]

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


def _check_nll_shapes(input, target) -> None:
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if input.dim() == 1:
        if target.dim() != 0:
            raise RuntimeError(f"0D or 1D target tensor expected, multi-target not supported")
        return
    if input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0]}).")
    if input.dim() > 2 and tuple(input.shape[2:]) != tuple(target.shape[1:]):
        raise RuntimeError(f"Expected target size {list(input.shape[:1]) + list(input.shape[2:])}, "
                           f"got {list(target.shape)}")


def nll_loss(input, target, weight=None, size_average: Optional[bool] = None, ignore_index: int = -100,
             reduce: Optional[bool] = None, reduction: str = "mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    fn = native("nll_loss_nd", "nll_loss")
    if fn is not None:
        return fn(input, target, weight, _REDUCTION_ENUM[reduction], ignore_index)
    _check_nll_shapes(input, target)
    dim = _class_dim(input)
    ignored = target == ignore_index
    safe_target = target.masked_fill(ignored, 0)
    picked = input.gather(dim, safe_target.unsqueeze(dim)).squeeze(dim) * -1.0  # exactly the negation
    if weight is not None:
        weights = weight.index_select(0, safe_target.reshape(-1)).reshape(tuple(safe_target.shape))
        weights = weights.masked_fill(ignored, 0.0)
    else:
        weights = _C._functions.ones(tuple(target.shape), dtype=input.dtype).masked_fill(ignored, 0.0)
    loss = picked * weights
    if reduction == "none":
        return loss
    if reduction == "sum":
        return reduce_sum(loss)
    return reduce_sum(loss) / reduce_sum(weights)


def _per_class(label_smoothing: float, classes: int) -> float:
    """label_smoothing / classes with C++'s double division (torch's): zero classes give inf, not an exception."""
    return label_smoothing / classes if classes else float("inf")


def cross_entropy(input, target, weight=None, size_average: Optional[bool] = None, ignore_index: int = -100,
                  reduce: Optional[bool] = None, reduction: str = "mean", label_smoothing: float = 0.0):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    fn = native("cross_entropy_loss")
    # The C++ op covers class indices without smoothing; the rest is the composite below.
    if fn is not None and label_smoothing == 0.0 and not target.dtype.is_floating_point:
        return fn(input, target, weight, _REDUCTION_ENUM[reduction], ignore_index, label_smoothing)
    from kiln.nn.functional import log_softmax

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


def mse_loss(input, target, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
             reduction: str = "mean", weight=None):
    _check_same_size("mse_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    diff = input - target
    loss = diff * diff
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def l1_loss(input, target, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
            reduction: str = "mean", weight=None):
    _check_same_size("l1_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = ops.abs(input - target)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def smooth_l1_loss(input, target, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                   reduction: str = "mean", beta: float = 1.0):
    _check_same_size("smooth_l1_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    diff = ops.abs(input - target)
    if beta == 0:
        return _reduce(diff, reduction)
    loss = _C._functions.where(diff < beta, diff * diff * (0.5 / beta), diff - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction: str = "mean", delta: float = 1.0, weight=None):
    _check_same_size("huber_loss", input, target)
    diff = ops.abs(input - target)
    loss = _C._functions.where(diff < delta, diff * diff * 0.5, (diff - 0.5 * delta) * delta)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _check_unit_interval(t, what: str) -> None:
    """torch's binary_cross_entropy check: every element in [0, 1] (NaN fails it)."""
    if t.numel() and not bool(((t >= 0) & (t <= 1)).all()):
        raise RuntimeError(f"all elements of {what} should be between 0 and 1")


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
    log_p = ops.log(input).clamp_min(-100.0)
    log_q = ops.log(1 - input).clamp_min(-100.0)
    loss = -(target * log_p + (1 - target) * log_q)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


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
    softplus_neg = ops.log1p(ops.exp(-ops.abs(input))) + ops.relu(-input)
    if pos_weight is not None:
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * input + log_weight * softplus_neg
    else:
        loss = (1 - target) * input + softplus_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input, target, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
           reduction: str = "mean", log_target: bool = False):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.")
    if log_target:
        loss = ops.exp(target) * (target - input)
    else:
        loss = ops.xlogy(target, target) - target * input
    if reduction == "batchmean":
        return reduce_sum(loss) / input.shape[0] if input.dim() else reduce_sum(loss)
    return _reduce(loss, reduction)
