"""embedding_bag: sums, means or maxima of bags of embedding rows, composed
from embedding, index_add and (for max) a padded (bag, position) layout
reduced with max; gradients are those ops'. Re-exported by
kiln.nn.functional."""

from __future__ import annotations

from kiln import _C
from kiln._arguments import checked_signature
from kiln.nn._embedding import embedding


def _f():
    return _C._functions


def _check_offsets(starts, n: int) -> None:
    """torch's offsets checks: they start at 0, never decrease, and end within the input."""
    if starts.numel() == 0:
        return
    first, last = int(starts[0]), int(starts[-1])
    if first != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {first}\n[ kiln.LongTensor{{}} ]")  # torch prints the 0-d tensor
    if last > n:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got offsets[-1] of {last}")
    if starts.numel() > 1 and bool((starts[1:] < starts[:-1]).any()):
        raise RuntimeError(f"embedding_bag: offsets must not decrease, but got {starts.tolist()}")


@checked_signature("embedding_bag(Tensor input, Tensor weight)")
def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type: float = 2, scale_grad_by_freq: bool = False,
                  mode: str = "mean", sparse: bool = False, per_sample_weights=None,
                  include_last_offset: bool = False, padding_idx=None):
    """One row per bag: 2-D ``input`` (each row a bag) or 1-D ``input`` cut at ``offsets``;
    ``padding_idx`` entries are left out of every bag (and of mean's count); empty bags give zeros."""
    kiln = _f()
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, but got {mode}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  f"GitHub.")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        rows, length = input.shape
        offsets = kiln.arange(0, rows * length, max(length, 1))
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
        include_last_offset = False
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    num, dim = weight.shape
    n = input.numel()
    index = input.to(_C.int64)
    if n:
        bad = kiln.nonzero((index < 0) | (index >= num)).reshape(-1)
        if bad.numel():
            position = int(bad[0])
            raise RuntimeError(f"Index {position} of input takes value {int(index[position])} which is not in the "
                               f"valid range [0, {num})")
    starts = offsets.to(_C.int64)
    if include_last_offset and starts.numel() < 1:
        raise RuntimeError("include_last_offset: number of offset should be at least 1")
    _check_offsets(starts, n)
    bags = starts.numel() - 1 if include_last_offset else starts.numel()
    if include_last_offset:
        starts = starts[:-1]
    if bags == 0 or n == 0:
        # zeros that still hang off weight, so a backward pass reaches it (with zero gradients), as torch's
        return weight.narrow(0, 0, 0).sum(0).unsqueeze(0).expand(bags, dim).contiguous()
    positions = kiln.arange(n)
    bag_of = kiln.searchsorted(starts, positions, right=True) - 1
    valid = bag_of >= 0
    if include_last_offset:
        # The last bag ends at offsets[-1], as torch's float32 path (and its documentation) has it; torch's
        # float64 path runs the last bag to the end of the input instead. They agree when offsets[-1] == n.
        valid = valid & (positions < int(offsets[-1]))
    if padding_idx is not None:
        valid = valid & (index != (padding_idx % num))
    bag_of = bag_of.clamp_min(0)
    rows = embedding(index, weight, None, max_norm, norm_type, scale_grad_by_freq, sparse)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(1)
    keep = valid.unsqueeze(1)
    counts = kiln.zeros(bags, dtype=weight.dtype).index_add(0, bag_of, valid.to(weight.dtype))
    if mode in ("sum", "mean"):
        total = kiln.zeros(bags, dim, dtype=weight.dtype).index_add(0, bag_of, kiln.where(keep, rows, rows * 0))
        return total if mode == "sum" else total / counts.clamp_min(1).unsqueeze(1)
    # max: each bag's rows laid out as [bag, position in bag, dim], unused slots -inf
    within = positions - starts.index_select(0, bag_of)
    longest = int(within.max()) + 1
    padded = kiln.full((bags, longest, dim), float("-inf"), dtype=weight.dtype)
    padded = padded.index_put((bag_of, within), kiln.where(keep, rows, kiln.full_like(rows, float("-inf"))))
    best = padded.amax(1)
    return kiln.where((counts > 0).unsqueeze(1), best, kiln.zeros_like(best))
