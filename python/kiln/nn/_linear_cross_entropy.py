"""F.linear_cross_entropy and nn.LinearCrossEntropyOptions (torch 2.13): the cross
entropy of a linear projection's logits, with torch's checks and words (the layer,
nn.LinearCrossEntropyLoss, is kiln/nn/modules/linear_cross_entropy.py).

torch's ``options`` pick a batch-chunked path that saves memory by never holding
all the logits at once; its result is the reference composite's,
cross_entropy(linear(input, weight, bias), target). kiln accepts the options
(and warns where torch would ignore them) and always computes the reference
composite, so values and gradients are the same and only peak memory differs.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Literal, Optional

from kiln import _C
from kiln._arguments import checked_signature
from kiln.nn._linear import linear
from kiln.nn._losses import cross_entropy


@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """torch.nn.LinearCrossEntropyOptions: how torch's chunked path splits the batch. kiln keeps the
    fields for compatibility; it computes the unchunked reference (see the module docstring)."""

    allow_retain_graph: bool = False
    batch_chunk_size: Optional[int] = None
    chunking_method: Optional[str] = "auto"
    acc_policy: Literal["accurate", "balanced", "compact", "auto"] = "auto"
    acc_dtype: Optional[object] = None


LinearCrossEntropyOptions.__module__ = "kiln.nn"


def _check(input, linear_weight, target, linear_bias, ignore_index):
    """torch's argument checks, in its order; returns the logits' shape and the extra class dims."""
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.dim()}")
    batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions (in_features), "
                           f"got {input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(classes, *out_features)}, got {tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} requires"
                           f" batched input, (N, {in_features}), got unbatched input with shape {tuple(input.shape)}")
    logits_shape = (*batches, classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    return logits_shape, out_features, classes


def _warn_ignored_options(options, out_features, reduction, label_smoothing, target, linear_bias):
    if options is None:
        return
    if out_features or reduction not in {"mean", "sum", "none"} or label_smoothing != 0.0 or target.dtype != _C.int64:
        warnings.warn(
            "linear_cross_entropy: ``options`` ignored; chunked path needs reduction in {'mean','sum','none'}, "
            "label_smoothing == 0, target.dtype == int64, out_features == (). Got "
            f"reduction={reduction!r}, label_smoothing={label_smoothing}, target.dtype={target.dtype}, "
            f"out_features={tuple(out_features)}, tracing=False, linear_bias.shape="
            f"{tuple(linear_bias.shape) if linear_bias is not None else None}.", stacklevel=3)


@checked_signature("linear_cross_entropy(Tensor input, Any linear_weight, Tensor target)")
def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction: str = "mean",
                         ignore_index: Optional[int] = None, label_smoothing: float = 0.0, options=None):
    """cross_entropy(linear(input, linear_weight, linear_bias), target, ...): ``linear_weight`` is
    [classes, *out_features, in_features] (extra dims make a K-dimensional loss); ``ignore_index``
    None means cross_entropy's -100."""
    logits_shape, out_features, classes = _check(input, linear_weight, target, linear_bias, ignore_index)
    _warn_ignored_options(options, out_features, reduction, label_smoothing, target, linear_bias)
    in_features = linear_weight.shape[-1]
    if out_features:
        rows = math.prod(out_features, start=classes)
        linear_weight = linear_weight.reshape(rows, in_features)
        if linear_bias is not None:
            linear_bias = linear_bias.reshape(rows)
    logits = linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction,
                         ignore_index=-100 if ignore_index is None else ignore_index, label_smoothing=label_smoothing)
