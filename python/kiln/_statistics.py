"""Order statistics and counting ops PyTorch has as kernels and kiln composes
from sort, gather, cumulative ops and scatter: median, nanmedian, kthvalue,
quantile, nanquantile, mode, cummax, cummin, logcumsumexp, unique,
unique_consecutive, bincount and histc.

Note [Order statistics through a stable sort]
---------------------------------------------
median/kthvalue sort along the dim (stable, NaN last) and gather one
position: the (n-1)//2-th for median, or the first NaN's when the slice has
one (median propagates NaN), or the (m-1)//2-th of the m non-NaN values for
nanmedian. Values always equal PyTorch's; the index of a value that occurs
more than once is the one the stable sort puts there, which may differ from
PyTorch's (its documentation leaves it unspecified). The scans (cummax,
cummin, logcumsumexp) combine each position with the one 1, 2, 4, ... places
before it (log2(n) passes of whole-tensor ops), an associative combine: for
cummax the later of two equal values wins and the first NaN sticks, as in
PyTorch."""

from __future__ import annotations

import math

from collections import namedtuple

from kiln import _C
from kiln._arguments import _require_tensor, checked_signature
from kiln._comparison import scalar_type_name
from kiln._creation import tensor
from kiln._indexing import nonzero
from kiln._messages import _scalar_name

_F = _C._functions


def _refuse_meta(op: str, input) -> None:
    """unique, unique_consecutive and bincount size their results by the input's values, which a
    meta tensor does not have: NotImplementedError as for the ops tagged dynamic_output_shape
    (Note [Meta kernels], tools/opgen/README.md). A non-tensor is refused first, as torch's parser does
    (unique's kernel is torch's _unique2)."""
    _require_tensor(input, "_unique2" if op == "unique" else op, "input", 1)
    if input.is_meta:
        raise NotImplementedError(
            f"{op}: attempted to run this operator with Meta tensors, but its output's shape depends on the "
            "input's data (tag dynamic_output_shape), so it has no meta implementation")

median_type = namedtuple("median", ["values", "indices"])
nanmedian_type = namedtuple("nanmedian", ["values", "indices"])
kthvalue_type = namedtuple("kthvalue", ["values", "indices"])
cummax_type = namedtuple("cummax", ["values", "indices"])
cummin_type = namedtuple("cummin", ["values", "indices"])
mode_type = namedtuple("mode", ["values", "indices"])
mode_out_type = namedtuple("mode_out", ["values", "indices"])
for _cls, _name in ((median_type, "median"), (nanmedian_type, "nanmedian"), (kthvalue_type, "kthvalue"),
                    (cummax_type, "cummax"), (cummin_type, "cummin"), (mode_type, "mode"), (mode_out_type, "mode_out")):
    _cls.__name__ = _cls.__qualname__ = _name
    _cls.__module__ = "kiln.return_types"


def _wrap_dim(dim, ndim):
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def _select_sorted(input, dim, keepdim, position_of, result_type):
    """Sorts along dim and gathers the position position_of(n, nan_count) (a keepdim-shaped tensor)."""
    x = input if input.dim() > 0 else input.reshape(1)
    dim = _wrap_dim(dim, input.dim())
    n = x.shape[dim]
    if n == 0:
        raise IndexError(f"median(): Expected reduction dim {dim} to have non-zero size.")
    values, indices = _F.sort(x, dim=dim, stable=True)
    nan_count = _F.isnan(x).sum(dim, keepdim=True) if x.dtype.is_floating_point else _F.zeros_like(
        x.narrow(dim, 0, 1), dtype=_C.int64)
    position = position_of(n, nan_count).clamp(0, n - 1)
    picked_values = values.gather(dim, position)
    picked_indices = indices.gather(dim, position)
    if not keepdim or input.dim() == 0:
        picked_values, picked_indices = picked_values.squeeze(dim), picked_indices.squeeze(dim)
    if input.dim() == 0:
        picked_values, picked_indices = picked_values.reshape(()), picked_indices.reshape(())
    return result_type(picked_values, picked_indices)


def _median_position(n, nan_count):
    return _F.where(nan_count > 0, n - nan_count, _F.zeros_like(nan_count) + (n - 1) // 2)


def _nanmedian_position(n, nan_count):
    return (n - nan_count - 1).div(2, rounding_mode="floor")


@checked_signature("median(Tensor input)")
def median(input, dim=None, keepdim=False):
    """The lower median (NaN when there is a NaN): of all elements, or (values, indices) along ``dim``."""
    if dim is None:
        if input.numel() == 0:
            return _F.full((), float("nan"), dtype=input.dtype)
        return _select_sorted(input.reshape(-1), 0, False, _median_position, median_type).values
    return _select_sorted(input, dim, keepdim, _median_position, median_type)


@checked_signature("nanmedian(Tensor input)")
def nanmedian(input, dim=None, keepdim=False):
    """The lower median of the non-NaN elements: of all, or (values, indices) along ``dim``."""
    if dim is None:
        if input.numel() == 0:
            return _F.full((), float("nan"), dtype=input.dtype)
        return _select_sorted(input.reshape(-1), 0, False, _nanmedian_position, nanmedian_type).values
    return _select_sorted(input, dim, keepdim, _nanmedian_position, nanmedian_type)


def _byte_span(t):
    """[first, last) byte addresses t's elements occupy (empty for an empty tensor)."""
    if t.numel() == 0:
        return 0, 0
    start = t.data_ptr()
    extent = sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))
    return start, start + (extent + 1) * t.element_size()


def _check_out_not_overlapping(out, input) -> None:
    """torch's refusal of an out= tensor that shares memory with an input."""
    first, last = _byte_span(out)
    other_first, other_last = _byte_span(input)
    if first < other_last and other_first < last:
        raise RuntimeError("unsupported operation: some elements of the input tensor and the written-to tensor refer "
                           "to a single memory location. Please clone() the tensor before performing the operation.")


@checked_signature("kthvalue(Tensor input, int k, int dim, bool keepdim)")
def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    """The k-th smallest element along ``dim`` (1-based), as (values, indices); out=(values, indices)."""
    if out is not None:
        for written in out:
            _check_out_not_overlapping(written, input)
    x_dim = _wrap_dim(dim, input.dim())
    n = input.shape[x_dim] if input.dim() else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {x_dim}")
    result = _select_sorted(input, dim, keepdim, lambda n_, nan_count: _F.zeros_like(nan_count) + (k - 1),
                            kthvalue_type)
    if out is None:
        return result
    values, indices = out
    _C._functions._copy_to_out(result.values, values)
    _C._functions._copy_to_out(result.indices, indices)
    return kthvalue_type(values, indices)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan, name):
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    scalar_q = not isinstance(q, _C.TensorBase)
    q_tensor = tensor([float(q)], dtype=input.dtype) if scalar_q else q.reshape(-1).to(input.dtype)
    if isinstance(q, _C.TensorBase) and q.dim() > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
    if bool(((q_tensor < 0) | (q_tensor > 1)).any()):
        if scalar_q:
            raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {q}")
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    if input.numel() == 0 and dim is None:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else _wrap_dim(dim, input.dim())
    if x.dim() == 0:
        x = x.reshape(1)
    sorted_x = _F.sort(x, d)[0].movedim(d, -1)  # NaN last
    n = sorted_x.shape[-1]
    nan_count = _F.isnan(sorted_x).sum(-1, keepdim=True)
    valid = (n - nan_count) if ignore_nan else _F.full_like(nan_count, n)
    rank = q_tensor * (valid - 1).to(input.dtype)  # [..., len(q)]
    if interpolation == "lower":
        rank = rank.floor()
    elif interpolation == "higher":
        rank = rank.ceil()
    elif interpolation == "nearest":
        rank = rank.round()
    low = rank.floor().clamp(0, max(n - 1, 0)).to(_C.int64)
    high = rank.ceil().clamp(0, max(n - 1, 0)).to(_C.int64)
    lower, upper = sorted_x.gather(-1, low), sorted_x.gather(-1, high)
    if interpolation == "midpoint":
        result = lower + (upper - lower) * 0.5
    else:
        result = _F.lerp(lower, upper, rank - low.to(input.dtype))
    nan_fill = (nan_count > 0) if not ignore_nan else (valid == 0)
    result = _F.where(nan_fill.expand_as(result), _F.full_like(result, float("nan")), result)
    result = result.movedim(-1, 0)  # q first, as PyTorch
    if dim is not None and keepdim and input.dim() > 0:  # a 0-d input has no dim to keep
        result = result.unsqueeze(d + 1)
    elif dim is None and keepdim:
        result = result.reshape([result.shape[0]] + [1] * input.dim())
    return result[0] if scalar_q else result


@checked_signature("quantile(Tensor input, Any q, int? dim, bool keepdim, *, str interpolation, Tensor? out)")
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The q-th quantiles (q a number or a 1-D tensor in [0, 1]) of ``input`` or along ``dim``."""
    result = _quantile(input, q, dim, keepdim, interpolation, False, "quantile")
    if out is not None:
        return _C._functions._copy_to_out(result, out)
    return result


@checked_signature("nanquantile(Tensor input, Any q, int? dim, bool keepdim, *, str interpolation, Tensor? out)")
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """quantile of the non-NaN values (NaN where a slice has none)."""
    result = _quantile(input, q, dim, keepdim, interpolation, True, "nanquantile")
    if out is not None:
        return _C._functions._copy_to_out(result, out)
    return result


def _shifted(t, dim, k, fill):
    """t moved k places along dim (position i holds t[i - k]); the first k hold `fill`."""
    n = t.shape[dim]
    head = _F.full_like(t.narrow(dim, 0, k), fill) if not isinstance(fill, _C.TensorBase) else fill
    return _F.cat([head, t.narrow(dim, 0, n - k)], dim)


def _scan_extreme(input, dim, is_max, result_type):
    x = input if input.dim() > 0 else input.reshape(1)
    dim = _wrap_dim(dim, input.dim())
    values = x.clone()
    n = x.shape[dim] if x.dim() else 1
    shape = [1] * x.dim()
    shape[dim] = n
    indices = _F.arange(n).reshape(shape).expand(x.shape).contiguous()
    floating = x.dtype.is_floating_point
    k = 1
    while k < n:
        earlier_v = values.narrow(dim, 0, n - k)
        earlier_i = indices.narrow(dim, 0, n - k)
        later_v = values.narrow(dim, k, n - k)
        later_i = indices.narrow(dim, k, n - k)
        later_wins = (later_v >= earlier_v) if is_max else (later_v <= earlier_v)
        if floating:  # NaN is the greatest (and least) of all; of two NaNs the later wins, as of equals
            later_wins = _F.isnan(later_v) | (later_wins & _F.logical_not(_F.isnan(earlier_v)))
        new_v = _F.where(later_wins, later_v, earlier_v)
        new_i = _F.where(later_wins, later_i, earlier_i)
        values = _F.cat([values.narrow(dim, 0, k), new_v], dim)
        indices = _F.cat([indices.narrow(dim, 0, k), new_i], dim)
        k *= 2
    if input.dim() == 0:
        values, indices = values.reshape(()), indices.reshape(())
    return result_type(values, indices)


@checked_signature("cummax(Tensor input, int dim)")
def cummax(input, dim):
    """Running maximum along ``dim`` and where it was taken (ties: the later; NaN sticks)."""
    return _scan_extreme(input, dim, True, cummax_type)


@checked_signature("cummin(Tensor input, int dim)")
def cummin(input, dim):
    """Running minimum along ``dim`` and where it was taken (ties: the later; NaN sticks)."""
    return _scan_extreme(input, dim, False, cummin_type)


@checked_signature("logcumsumexp(Tensor input, int dim)")
def logcumsumexp(input, dim):
    """log(cumsum(exp(input))) along ``dim``, computed stably (log-add-exp of partial results)."""
    x = input if input.dtype.is_floating_point else input.to(_C.get_default_dtype())
    if x.dim() == 0:
        return x.clone()
    dim = _wrap_dim(dim, x.dim())
    n = x.shape[dim]
    result = x
    k = 1
    while k < n:
        combined = _F.logaddexp(result.narrow(dim, k, n - k), result.narrow(dim, 0, n - k))
        result = _F.cat([result.narrow(dim, 0, k), combined], dim)
        k *= 2
    return result


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """``input`` with runs of equal consecutive elements (or slices along ``dim``) collapsed."""
    _refuse_meta("unique_consecutive", input)
    x = input.reshape(-1) if dim is None else input.movedim(dim, 0)
    n = x.shape[0]
    if n == 0:
        values = x if dim is None else input
        outs = [values]
        if return_inverse:
            outs.append(_F.zeros(input.shape if dim is None else (0,), dtype=_C.int64))
        if return_counts:
            outs.append(_F.zeros(0, dtype=_C.int64))
        return outs[0] if len(outs) == 1 else tuple(outs)
    flat = x.reshape(n, -1)
    starts = _F.ones(n, dtype=_C.bool)
    if n > 1:
        differs = (flat[1:] != flat[:-1]).any(1) if flat.shape[1] else _F.zeros(n - 1, dtype=_C.bool)
        starts[1:] = differs
    group = starts.to(_C.int64).cumsum(0) - 1
    positions = nonzero(starts).reshape(-1)
    values = x.index_select(0, positions)
    if dim is not None:
        values = values.movedim(0, dim)
    outs = [values]
    if return_inverse:
        outs.append(group.reshape(input.shape) if dim is None else group)
    if return_counts:
        ends = _F.cat([positions[1:], tensor([n])])
        outs.append(ends - positions)
    return outs[0] if len(outs) == 1 else tuple(outs)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct elements (or slices along ``dim``) in ascending order, with optional inverse and counts."""
    _refuse_meta("unique", input)
    if dim is None:
        flat = input.reshape(-1)
        order = _F.sort(flat, stable=True)[1]
        ordered = flat.index_select(0, order)
    else:
        d = _wrap_dim(dim, input.dim())
        moved = input.movedim(d, 0)
        rows = moved.reshape(moved.shape[0], math.prod(moved.shape[1:]))  # -1 is ambiguous with no rows
        # lexicographic order of the slices: stable sorts from the last column to the first
        order = _F.arange(rows.shape[0])
        for column in range(rows.shape[1] - 1, -1, -1):
            keys = rows[:, column].index_select(0, order)
            order = order.index_select(0, _F.sort(keys, stable=True)[1])
        ordered = moved.index_select(0, order).movedim(0, d)
    result = unique_consecutive(ordered, return_inverse=True, return_counts=True, dim=dim)
    values, group, counts = result
    outs = [values]
    if return_inverse:
        inverse = _F.empty(order.shape[0], dtype=_C.int64)
        if order.shape[0]:
            inverse[order] = group.reshape(-1)
        outs.append(inverse.reshape(input.shape) if dim is None else inverse)
    if return_counts:
        outs.append(counts)
    return outs[0] if len(outs) == 1 else tuple(outs)


@checked_signature("bincount(Tensor input, Tensor? weights, int minlength)")
def bincount(input, weights=None, minlength=0):
    """Counts of each non-negative integer in the 1-D ``input`` (or the sums of ``weights`` per value)."""
    _require_tensor(input, "bincount", "input", 1)
    if weights is not None:
        _require_tensor(weights, "bincount", "weights", position=None)
    _refuse_meta("bincount", input)
    if input.dim() != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if input.dtype.is_floating_point:
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{_type_name(input.dtype)}'")
    if input.dtype == _C.bool:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is not None and (weights.dim() != 1 or weights.shape[0] != input.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    if input.numel() and int(input.min()) < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    length = max(int(input.max()) + 1 if input.numel() else 0, minlength)
    if weights is None:
        result = _F.zeros(length, dtype=_C.int64)
        return result.index_put_((input.to(_C.int64),), _F.ones(input.shape[0], dtype=_C.int64),
                                 accumulate=True)
    dtype = weights.dtype if weights.dtype.is_floating_point else _C.float64
    result = _F.zeros(length, dtype=dtype)
    return result.index_put_((input.to(_C.int64),), weights.to(dtype), accumulate=True)


@checked_signature("histc(Tensor input, int bins, Scalar min, Scalar max, *, Tensor? out)")
def histc(input, bins=100, min=0, max=0, *, out=None):
    """A histogram of ``bins`` equal-width bins over [min, max] (the data's range when both are 0)."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{_type_name(input.dtype)}'")
    if bins <= 0:
        raise RuntimeError(f"kiln.histogram(): bins must be > 0, but got {bins} for dimension 0")
    low, high = float(min), float(max)
    if low == high and input.numel():
        low, high = float(input.min()), float(input.max())
    if low == high:
        low, high = low - 1, high + 1
    if low > high:
        raise RuntimeError("kiln.histc: max must be larger than min")
    x = input.reshape(-1).to(_C.float64)
    inside = (x >= low) & (x <= high)
    x = x[inside]
    position = ((x - low) * (bins / (high - low))).floor().to(_C.int64).clamp(0, bins - 1)
    result = _F.zeros(bins, dtype=_C.float64).index_put_((position,), _F.ones(position.shape[0],
                                                                                    dtype=_C.float64),
                                                             accumulate=True).to(input.dtype)
    if out is not None:
        return _C._functions._copy_to_out(result, out)
    return result


def _type_name(dtype):
    return scalar_type_name(dtype)


def _check_mode_out(out, input):
    for i, t in enumerate(out):
        if not isinstance(t, _C.TensorBase):
            raise TypeError(f"expected Tensor as element {i} in argument 3, but got {type(t).__name__}")
    values_out, indices_out = out
    for value, dtype, label in ((values_out, input.dtype, "values"), (indices_out, _C.int64, "indices")):
        if value.dtype != dtype:
            raise RuntimeError(f"expected scalar type '{_scalar_name(dtype)}' but got '{_scalar_name(value.dtype)}' "
                               f"for {label} output")


@checked_signature("mode(Tensor input, int dim, bool keepdim)")
def mode(input, dim=-1, keepdim=False, *, out=None):
    """torch.mode: the most frequent value along ``dim`` (the smallest of equally frequent ones)
    and an index where it occurs, the same index torch's CPU kernel reports (the _mode op runs
    its std::sort; Note [mode's index] in eager/kernels/cpu/Mode.cpp, which also says how rows
    with NaN differ)."""
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"mode(): argument 'dim' must be int, not {type(dim).__name__}")
    d = _wrap_dim(dim, input.dim())
    if out is not None:
        _check_mode_out(out, input)
    values, indices = _C._functions._mode(input, d, keepdim)  # it raises torch's IndexError for an empty dim
    if out is not None:
        _C._functions._copy_to_out(values, out[0])
        _C._functions._copy_to_out(indices, out[1])
        return mode_out_type(out[0], out[1])
    return mode_type(values, indices)
