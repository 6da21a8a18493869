"""torch.histogram and torch.histogramdd (and Tensor.histogram): equal-width or given
bin edges, weights and density, with torch's checks and messages."""

from __future__ import annotations

import builtins
import math
from collections import namedtuple

from kiln import _C
from kiln._arguments import _invalid_combination_listing, _require_tensor, checked_signature
from kiln._messages import _format_double, _scalar_name, _type_word
from kiln._no_derivative import _no_derivative
from kiln.autograd.grad_mode import no_grad

_F = _C._functions

_RESULT_TYPES = {}
for _name in ("histogram", "histogramdd"):
    for _suffix in ("", "_out"):
        _cls = namedtuple(_name + _suffix, ("hist", "bin_edges"))
        _cls.__module__ = "kiln.return_types"
        _RESULT_TYPES[_name + _suffix] = _cls


def _outer_edges(points, range):
    """The leftmost and rightmost edges of each of the N dims (torch's select_outer_bin_edges)."""
    n = points.shape[1]
    low, high = [0.0] * n, [1.0] * n
    if range is not None:
        range = list(range)
        if len(range) != 2 * n:
            raise RuntimeError(f"kiln.histogramdd: for a {n}-dimensional histogram range should have {2 * n} "
                               f"elements, but got {len(range)}")
        low, high = [float(v) for v in range[0::2]], [float(v) for v in range[1::2]]
    elif points.numel() > 0:
        if not points.dtype.is_floating_point or points.dtype in (_C.float16, _C.bfloat16):
            raise NotImplementedError(f"\"histogramdd\" not implemented for '{_scalar_name(points.dtype)}'")
        low = [float(v) for v in points.amin(0).tolist()]
        high = [float(v) for v in points.amax(0).tolist()]
    for d in builtins.range(n):
        if not (math.isfinite(low[d]) and math.isfinite(high[d])):
            raise RuntimeError(f"kiln.histogramdd: dimension {d}'s range [{_format_double(low[d])}, "
                               f"{_format_double(high[d])}] is not finite")
        if not low[d] <= high[d]:
            raise RuntimeError(f"kiln.histogramdd: min should not exceed max, but got min {_format_double(low[d])} "
                               f"max {_format_double(high[d])} for dimension {d}")
        if low[d] == high[d]:
            low[d], high[d] = low[d] - 0.5, high[d] + 0.5
    return low, high


def _check_bin_counts(counts):
    for d, count in enumerate(counts):
        if count <= 0:
            raise RuntimeError(f"kiln.histogram(): bins must be > 0, but got {count} for dimension {d}")


def _edges_from_counts(points, counts, range, check_counts):
    """Equal-width edges; histogram checks the counts first, histogramdd only once binning."""
    if check_counts:
        _check_bin_counts(counts)
    low, high = _outer_edges(points, range)
    if len(counts) != points.shape[1]:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    return [_F.linspace(low[d], high[d], counts[d] + 1, dtype=points.dtype) for d in builtins.range(len(counts))]


def _check_inputs(points, edges, weight, shape):
    """torch's histogramdd_check_inputs, on the (M, N) points of an input of this shape and its weight."""
    n = points.shape[1]
    if len(edges) != n:
        raise RuntimeError(f"kiln.histogramdd: expected {n} sequences of bin edges for a {n}-dimensional histogram "
                           f"but got {len(edges)}")
    for d, e in enumerate(edges):
        if e.dtype != points.dtype:
            raise RuntimeError(f"kiln.histogramdd: input tensor and bins tensors should have the same dtype, but got "
                               f"input with dtype {_type_word(points.dtype)} and bins for dimension {d} with dtype "
                               f"{_type_word(e.dtype)}")
        if e.dim() != 1:
            raise RuntimeError(f"kiln.histogramdd: bins tensor should have one dimension, but got {e.dim()} dimensions "
                               f"in the bins tensor for dimension {d}")
        if e.numel() == 0:
            raise RuntimeError(f"kiln.histogramdd: bins tensor should have at least 1 element, but got 0 elements in "
                               f"the bins tensor for dimension {d}")
    if weight is not None:
        if weight.dtype != points.dtype:
            raise RuntimeError(f"kiln.histogramdd: if weight tensor is provided, input tensor and weight tensor should "
                               f"have the same dtype, but got input({_type_word(points.dtype)}), and "
                               f"weight({_type_word(weight.dtype)})")
        if tuple(weight.shape) != tuple(shape[:-1]):
            raise RuntimeError(f"kiln.histogramdd: if weight tensor is provided it should have the same shape as the "
                               f"input tensor excluding its innermost dimension, but got input with shape "
                               f"{list(shape)} and weight with shape {list(weight.shape)}")


def _bin_points(points, edges, weight, density):
    """The (K_0-1, ..., K_{N-1}-1) histogram of the (M, N) points: each coordinate lands in the
    last edge not above it (an upper-bound search, as torch), the last bin keeps its right edge."""
    _check_bin_counts([e.numel() - 1 for e in edges])
    if not points.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{_scalar_name(points.dtype)}'")
    counts = [e.numel() - 1 for e in edges]
    if not counts:
        return _F.zeros((), dtype=points.dtype)  # torch counts nothing in a 0-dimensional space
    size = 1
    for c in counts:
        size *= c
    inside = _F.ones(points.shape[0], dtype=_C.bool)
    flat = _F.zeros(points.shape[0], dtype=_C.int64)
    for d, e in enumerate(edges):
        column = points[:, d].contiguous()
        inside = inside & (column >= e[0]) & (column <= e[-1])
        position = _F.searchsorted(e.contiguous(), column, right=True) - 1
        position = _F.where(position >= counts[d], position - 1, position).clamp(0, counts[d] - 1)
        flat = flat * counts[d] + position
    taken = flat[inside]
    contributions = weight[inside] if weight is not None else _F.ones(taken.shape[0], dtype=points.dtype)
    hist = _F.zeros(size, dtype=points.dtype).index_put_((taken,), contributions, accumulate=True)
    hist = hist.reshape(counts)
    if density:
        hist = hist / hist.sum()
        for d, e in enumerate(edges):
            shape = [1] * len(edges)
            shape[d] = counts[d]
            hist = hist / e.diff().reshape(shape)
    return hist


def _bins_type_error(op, input, bins, extra):
    got = ", ".join([type(input).__name__, type(bins).__name__] + [f"{k}={type(v).__name__}" for k, v in extra])
    return TypeError(f"{op}() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                     f" * (Tensor input, Tensor bins, *, Tensor weight = None, bool density = False, tuple of Tensors "
                     f"out = None)\n * (Tensor input, int bins = 100, *, tuple of floats range = None, Tensor weight = "
                     f"None, bool density = False, tuple of Tensors out = None)\n")


@checked_signature("histogram(Tensor input, Any bins, *, Any range, Tensor? weight, bool density, Tensor[]? out)")
def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):
    """torch.histogram: the histogram of the flattened ``input`` over ``bins`` equal-width bins
    (edges a linspace over ``range`` or the data's [min, max]) or over the 1-D edge tensor ``bins``;
    each bin holds its left edge, the last one its right edge too. Returns (hist, bin_edges).
    Not differentiable (as in torch, backward raises)."""
    _require_tensor(input, "histogram", "input", 1)
    if weight is not None:
        _require_tensor(weight, "histogram", "weight", position=None)
    points = input.reshape(input.numel(), 1)
    flat_weight = weight.reshape(weight.numel()) if weight is not None else None
    if isinstance(bins, _C.TensorBase):
        if range is not None:
            raise _bins_type_error("histogram", input, bins, [("range", range)])
        edges = [bins]
    elif isinstance(bins, int) and not isinstance(bins, bool):
        edges = None
    else:
        raise _bins_type_error("histogram", input, bins, [])
    with no_grad():
        if edges is None:
            edges = _edges_from_counts(points, [bins], range, True)
        _check_inputs(points, edges, flat_weight, points.shape)
        hist = _bin_points(points, edges, flat_weight, density)
        bin_edges = edges[0].clone() if isinstance(bins, _C.TensorBase) else edges[0]
    hist, bin_edges = _no_derivative(["histogram", "histogram"], [hist, bin_edges],
                                     [input, weight, bins if isinstance(bins, _C.TensorBase) else None])
    if out is not None:
        hist_out, edges_out = out
        _C._functions._copy_to_out(hist, hist_out)
        _C._functions._copy_to_out(bin_edges, edges_out)
        return _RESULT_TYPES["histogram_out"](hist_out, edges_out)
    return _RESULT_TYPES["histogram"](hist, bin_edges)


# torch.histogramdd's overloads as its parser lists them
_HISTOGRAMDD_OVERLOADS = tuple(
    f"(Tensor input, {bins} bins, tuple of floats range = None, Tensor weight = None, bool density = False)"
    for bins in ("int", "tuple of ints", "tuple of Tensors"))


def _bins_refused(input, bins, range, weight):
    """torch's parser's refusal of bins no overload takes (the call as histogramdd passes it on)."""
    keywords = {k: v for k, v in (("range", range), ("weight", weight)) if v is not None}
    return TypeError(_invalid_combination_listing("histogramdd", (input, bins), keywords, _HISTOGRAMDD_OVERLOADS))


@checked_signature("histogramdd(Tensor input, Any bins, float[]? range, Tensor? weight, bool density)")
def histogramdd(input, bins, range=None, weight=None, density=False):
    """torch.histogramdd: the N-dimensional histogram of the points in ``input``'s last dim (all
    other dims flattened); ``bins`` an int (for every dim), N ints or N 1-D edge tensors.
    Returns (hist, bin_edges) with bin_edges a tuple of N tensors. Not differentiable."""
    _require_tensor(input, "histogramdd", "input", 1)
    if weight is not None:
        _require_tensor(weight, "histogramdd", "weight", position=None)
    if isinstance(bins, _C.TensorBase):  # torch's parser takes a tensor for an int only when 0-dim and integral
        if bins.dim() != 0 or bins.is_floating_point() or bins.is_complex() or bins.dtype == _C.bool:
            raise _bins_refused(input, bins, range, weight)
        bins = int(bins)
    if isinstance(bins, bool) or not isinstance(bins, (int, list, tuple)):  # the kinds of torch's three overloads
        raise _bins_refused(input, bins, range, weight)
    from_tensors = not isinstance(bins, int) and any(isinstance(b, _C.TensorBase) for b in bins)
    for i, b in enumerate([] if isinstance(bins, int) else bins):
        is_count = isinstance(b, int) and not isinstance(b, bool)
        if from_tensors != isinstance(b, _C.TensorBase) or not from_tensors and not is_count:
            expected = "Tensor" if from_tensors else "int"
            raise TypeError(f"expected {expected} as element {i} in argument 1, but got {type(b).__name__}")
    if input.dim() == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    if input.dim() < 2:
        raise RuntimeError("kiln.histogramdd: input tensor should have at least 2 dimensions")
    n = input.shape[-1]
    points = input.reshape(math.prod(input.shape[:-1]), n)
    with no_grad():
        if from_tensors:
            edges = list(bins)
        else:
            counts = [bins] * n if isinstance(bins, int) else [int(b) for b in bins]
            edges = _edges_from_counts(points, counts, range, False)
        _check_inputs(points, edges, weight, input.shape)
        hist = _bin_points(points, edges, weight.reshape(-1) if weight is not None else None, density)
        bin_edges = [e.clone() for e in edges] if from_tensors else edges
    op = "_histogramdd_from_bin_tensors" if from_tensors else "_histogramdd_from_bin_cts"
    tensors = [input, weight] + (list(bins) if from_tensors else [])
    (hist,) = _no_derivative([op], [hist], tensors)
    bin_edges = _no_derivative(["_histogramdd_bin_edges"] * len(bin_edges), bin_edges, tensors)
    return _RESULT_TYPES["histogramdd"](hist, tuple(bin_edges))
