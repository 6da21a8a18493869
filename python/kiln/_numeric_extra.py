"""Late numeric composites over kiln's ops, as torch has them: histogram / histogramdd
(and Tensor.histogram), mode (Tensor.mode), combinations, trapz, gradient and
kaiser_window. The random samplers (poisson, binomial, Tensor.cauchy_ /
geometric_ / log_normal_) and segment_reduce live in ``_numeric_extra2``.

``install`` adds each name to the kiln namespace (and, where torch has the
method, to Tensor) only where kiln does not have it yet."""

from __future__ import annotations

import builtins
import itertools
import math
from collections import namedtuple

from kiln import _C

_RESULT_TYPES = {}
for _name, _fields in (("histogram", ("hist", "bin_edges")), ("histogramdd", ("hist", "bin_edges")),
                       ("mode", ("values", "indices"))):
    for _suffix in ("", "_out"):
        _cls = namedtuple(_name + _suffix, _fields)
        _cls.__module__ = "kiln.return_types"
        _RESULT_TYPES[_name + _suffix] = _cls


def _kiln():
    import kiln

    return kiln


def _wrap_dim(dim, ndim, wrap_scalar=True):
    """dim in [0, ndim) as torch's maybe_wrap_dim (a 0-d tensor takes -1 and 0 if wrap_scalar)."""
    if ndim == 0 and not wrap_scalar:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def _type_word(dtype) -> str:
    """The C++ type name torch's messages print for a dtype ("float", "long int", ...)."""
    words = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
             "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
             "uint8": "unsigned char", "bool": "bool"}
    name = str(dtype).removeprefix("kiln.")
    return words.get(name, name)


def _scalar_name(dtype) -> str:
    """torch's ScalarType name ("Float", "Long", ...)."""
    from kiln._comparison import scalar_type_name

    return scalar_type_name(dtype)


def _no_derivative(names, outputs, inputs):
    """outputs marked as depending on inputs through an op without a derivative, as
    torch does for histogram: they require grad, and backward raises torch's error."""
    if not (_C.is_grad_enabled() and any(t is not None and t.requires_grad for t in inputs)):
        return outputs
    from kiln.autograd import Function

    results = []
    for name, output in zip(names, outputs):
        class NotImplementedBackward(Function):
            op = name

            @staticmethod
            def forward(ctx, value, *args):
                return value.clone()

            @staticmethod
            def backward(ctx, *grads):
                raise RuntimeError(f"derivative for aten::{NotImplementedBackward.op} is not implemented")

        results.append(NotImplementedBackward.apply(output, *[t for t in inputs if t is not None]))
    return results


# --- histogram / histogramdd --------------------------------------------------------------------------


def _format_double(value) -> str:
    """A double as C++'s ostream prints it (6 significant digits)."""
    return format(float(value), "g")


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
    kiln = _kiln()
    if check_counts:
        _check_bin_counts(counts)
    low, high = _outer_edges(points, range)
    if len(counts) != points.shape[1]:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    return [kiln.linspace(low[d], high[d], counts[d] + 1, dtype=points.dtype) for d in builtins.range(len(counts))]


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
    kiln = _kiln()
    _check_bin_counts([e.numel() - 1 for e in edges])
    if not points.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{_scalar_name(points.dtype)}'")
    counts = [e.numel() - 1 for e in edges]
    if not counts:
        return kiln.zeros((), dtype=points.dtype)  # torch counts nothing in a 0-dimensional space
    size = 1
    for c in counts:
        size *= c
    inside = kiln.ones(points.shape[0], dtype=kiln.bool)
    flat = kiln.zeros(points.shape[0], dtype=kiln.int64)
    for d, e in enumerate(edges):
        column = points[:, d].contiguous()
        inside = inside & (column >= e[0]) & (column <= e[-1])
        position = kiln.searchsorted(e.contiguous(), column, right=True) - 1
        position = kiln.where(position >= counts[d], position - 1, position).clamp(0, counts[d] - 1)
        flat = flat * counts[d] + position
    taken = flat[inside]
    contributions = weight[inside] if weight is not None else kiln.ones(taken.shape[0], dtype=points.dtype)
    hist = kiln.zeros(size, dtype=points.dtype).index_put_((taken,), contributions, accumulate=True)
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


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):
    """torch.histogram: the histogram of the flattened ``input`` over ``bins`` equal-width bins
    (edges a linspace over ``range`` or the data's [min, max]) or over the 1-D edge tensor ``bins``;
    each bin holds its left edge, the last one its right edge too. Returns (hist, bin_edges).
    Not differentiable (as in torch, backward raises)."""
    kiln = _kiln()
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
    with kiln.no_grad():
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


def histogramdd(input, bins, range=None, weight=None, density=False):
    """torch.histogramdd: the N-dimensional histogram of the points in ``input``'s last dim (all
    other dims flattened); ``bins`` an int (for every dim), N ints or N 1-D edge tensors.
    Returns (hist, bin_edges) with bin_edges a tuple of N tensors. Not differentiable."""
    kiln = _kiln()
    if input.dim() == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    if input.dim() < 2:
        raise RuntimeError("kiln.histogramdd: input tensor should have at least 2 dimensions")
    n = input.shape[-1]
    points = input.reshape(math.prod(input.shape[:-1]), n)
    from_tensors = not isinstance(bins, int) and any(isinstance(b, _C.TensorBase) for b in bins)
    for i, b in enumerate([] if isinstance(bins, int) else bins):
        if from_tensors != isinstance(b, _C.TensorBase) or not from_tensors and not isinstance(b, int):
            expected = "Tensor" if from_tensors else "int"
            raise TypeError(f"expected {expected} as element {i} in argument 1, but got {type(b).__name__}")
    with kiln.no_grad():
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


# --- mode -----------------------------------------------------------------------------------------------


def _check_mode_out(out, input):
    values_out, indices_out = out
    for tensor, dtype, label in ((values_out, input.dtype, "values"), (indices_out, _C.int64, "indices")):
        if tensor.dtype != dtype:
            raise RuntimeError(f"expected scalar type '{_scalar_name(dtype)}' but got '{_scalar_name(tensor.dtype)}' "
                               f"for {label} output")


def mode(input, dim=-1, keepdim=False, *, out=None):
    """torch.mode: the most frequent value along ``dim`` (the smallest of equally frequent ones)
    and an index where it occurs, the same index torch's CPU kernel reports (the _mode op runs
    its std::sort; Note [mode's index] in eager/kernels/cpu/sort/Mode.cpp, which also says how rows
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
        return _RESULT_TYPES["mode_out"](out[0], out[1])
    return _RESULT_TYPES["mode"](values, indices)


# --- combinations ----------------------------------------------------------------------------------------


def combinations(input, r=2, with_replacement=False):
    """torch.combinations: the length-``r`` combinations of the 1-D ``input``'s elements as the
    rows of a (C, r) tensor, in itertools order (with_replacement: with repeats)."""
    kiln = _kiln()
    if not isinstance(r, int) or isinstance(r, bool):
        raise TypeError(f"combinations(): argument 'r' (position 2) must be int, not {type(r).__name__}")
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return kiln.empty(0, dtype=input.dtype)
    n = input.shape[0]
    if r == 2:
        pairs = kiln.triu_indices(n, n, 0 if with_replacement else 1)
        index = pairs.t().contiguous()
    else:
        chosen = (itertools.combinations_with_replacement if with_replacement else itertools.combinations)(
            builtins.range(n), r)
        index = kiln.tensor([i for combo in chosen for i in combo], dtype=kiln.int64).reshape(-1, r)
    return input.index_select(0, index.reshape(-1)).reshape(index.shape[0], r)


# --- trapz -------------------------------------------------------------------------------------------------


def _trapz_type_error(y, x, dx):
    got = ", ".join([type(y).__name__] + ([type(x).__name__] if x is not None else [])
                    + ([f"dx={type(dx).__name__}"] if dx is not None else []))
    return TypeError(f"trapz() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                     f" * (Tensor y, *, float dx = 1, int dim = -1)\n * (Tensor y, Tensor x, *, int dim = -1)\n")


def _slice_along(t, dim, start, stop):
    return t[(slice(None),) * dim + (slice(start, stop),)]


def _empty_integral(y, dim):
    kiln = _kiln()
    return kiln.zeros(tuple(s for i, s in enumerate(y.shape) if i != dim), dtype=y.dtype)


def _trapezoid_x(y, x, dim):
    """torch's trapezoid(y, x, dim): x 1-D (one point per sample) or broadcasting against y."""
    dim = _wrap_dim(dim, y.dim(), wrap_scalar=False)
    if y.shape[dim] == 0:
        return _empty_integral(y, dim)
    if y.dtype == _C.bool or x.dtype == _C.bool:
        raise RuntimeError("trapezoid: received a bool input for `x` or `y`, but bool is not supported")
    if x.dim() == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError("trapezoid: There must be one `x` value for each sample point")
        shape = [1] * y.dim()
        shape[dim] = x.shape[0]
        x = x.view(shape)
    elif x.dim() < y.dim():
        x = x.view((1,) * (y.dim() - x.dim()) + tuple(x.shape))
    dx = _slice_along(x, dim, 1, None) - _slice_along(x, dim, 0, -1)
    n = y.shape[dim]
    return ((y.narrow(dim, 0, n - 1) + y.narrow(dim, 1, n - 1)) * dx).sum(dim) / 2.0


def _trapezoid_dx(y, dx, dim):
    """torch's trapezoid(y, dx, dim) for a real scalar spacing."""
    dim = _wrap_dim(dim, y.dim(), wrap_scalar=False)
    if y.shape[dim] == 0:
        return _empty_integral(y, dim)
    if y.dtype == _C.bool:
        raise RuntimeError("trapezoid: received a bool input for `y`, but bool is not supported")
    return (y.sum(dim) - (y.select(dim, 0) + y.select(dim, -1)) * 0.5) * float(dx)


def trapz(y, x=None, *, dx=None, dim=-1):
    """torch.trapz, trapezoid's legacy alias: trapz(y, x, *, dim=-1) with sample points x, or
    trapz(y, *, dx=1, dim=-1) with a uniform spacing."""
    if x is not None and (dx is not None or not isinstance(x, _C.TensorBase)) or not isinstance(
            dx, (type(None), int, float)):
        raise _trapz_type_error(y, x, dx)
    if isinstance(x, _C.TensorBase):
        return _trapezoid_x(y, x, dim)
    return _trapezoid_dx(y, 1.0 if dx is None else dx, dim)


# --- gradient --------------------------------------------------------------------------------------------


def _is_number(value):
    return isinstance(value, (int, float)) or (isinstance(value, _C.TensorBase) and value.dim() == 0)


def _gradient_arguments(input, spacing, dim):
    """(dims, spacing list, coordinates?) from gradient's overloads, with torch's argument checks."""
    if isinstance(spacing, _C.TensorBase) and spacing.dim() > 0:
        raise TypeError("gradient() received an invalid combination of arguments - got (Tensor, spacing=Tensor), but "
                        "expected spacing as a Number, a tuple of Scalars or a tuple of Tensors")
    if spacing is None or _is_number(spacing):
        spacing_list = None
    elif isinstance(spacing, (list, tuple)):
        spacing_list = list(spacing)
        if any(isinstance(s, _C.TensorBase) for s in spacing_list):
            for i, s in enumerate(spacing_list):
                if not isinstance(s, _C.TensorBase):
                    raise TypeError(f"expected Tensor as element {i} in argument 1, but got {type(s).__name__}")
        elif not all(_is_number(s) for s in spacing_list):
            raise TypeError("gradient(): argument 'spacing' must be a Number, a tuple of Scalars or a tuple of "
                            "Tensors")
    else:
        raise TypeError(f"gradient(): argument 'spacing' must be a Number, a tuple of Scalars or a tuple of Tensors, "
                        f"not {type(spacing).__name__}")
    dims = None if dim is None else [dim] if isinstance(dim, int) else list(dim)
    return dims, spacing_list


def _check_gradient(input, spacing_size, dims, edge_order):
    """torch's pre_check_gradient."""
    if input.dtype == _C.uint8:
        raise RuntimeError("kiln.gradient does not support uint8 input.")
    if spacing_size is not None and dims is None and spacing_size != input.dim():
        raise RuntimeError(f"kiln.gradient expected spacing to be unspecified, a scalar, or a list of length equal to "
                           f"'self.dim() = {input.dim()}', since dim argument was not given, but got a list of length "
                           f"{spacing_size}")
    if spacing_size is not None and dims is not None and spacing_size != len(dims):
        raise RuntimeError(f"kiln.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                           f"arguments to have the same length, but got a spacing argument of length {spacing_size} "
                           f"and a dim argument of length {len(dims)}.")
    if edge_order not in (1, 2):
        raise RuntimeError("kiln.gradient only supports edge_order=1 and edge_order=2.")
    checked = []
    for d in dims if dims is not None else builtins.range(input.dim()):
        d = _wrap_dim(d, input.dim(), wrap_scalar=False)
        if dims is not None and d in checked:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        checked.append(d)
    for d in checked:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("kiln.gradient expected each dimension size to be at least edge_order+1")
    return checked


def _gradient_uniform(f, d, h, edge_order):
    """One dim of torch's gradient for a scalar spacing h (central differences inside)."""
    kiln = _kiln()
    center = (_slice_along(f, d, 2, None) - _slice_along(f, d, 0, -2)) / h
    if edge_order == 1:
        first = (_slice_along(f, d, 1, 2) - _slice_along(f, d, 0, 1)) / h
        last = (_slice_along(f, d, -1, None) - _slice_along(f, d, -2, -1)) / h
    else:
        first = (_slice_along(f, d, 0, 1) * -1.5 + _slice_along(f, d, 1, 2) * 2 - _slice_along(f, d, 2, 3) * 0.5) / h
        last = (_slice_along(f, d, -3, -2) * 0.5 + _slice_along(f, d, -2, -1) * -2
                + _slice_along(f, d, -1, None) * 1.5) / h
    return kiln.cat([first, center / 2, last], d)


def _gradient_coordinates(f, d, coordinates, edge_order):
    """One dim of torch's gradient for sample coordinates along it (non-uniform differences)."""
    kiln = _kiln()
    if coordinates.dim() != 1:
        raise RuntimeError(f"kiln.gradient expected each element of spacing to have one dimension, but got an element "
                           f"with {coordinates.dim()} dimensions!")
    shape = [1] * f.dim()
    shape[d] = -1
    step = coordinates.diff(1, 0)
    dx1, dx2 = step[:-1], step[1:]
    a = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
    b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
    c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
    center = a * _slice_along(f, d, 0, -2) + b * _slice_along(f, d, 1, -1) + c * _slice_along(f, d, 2, None)
    if edge_order == 1:
        first = (_slice_along(f, d, 1, 2) - _slice_along(f, d, 0, 1)) / step[0]
        last = (_slice_along(f, d, -1, None) - _slice_along(f, d, -2, -1)) / step[-1]
    else:
        h0, h1 = step[0], step[1]
        first = (-(2.0 * h0 + h1) / (h0 * (h0 + h1)) * _slice_along(f, d, 0, 1)
                 + (h0 + h1) / (h0 * h1) * _slice_along(f, d, 1, 2)
                 + (-h0) / (h1 * (h0 + h1)) * _slice_along(f, d, 2, 3))
        g1, g2 = step[-1], step[-2]
        last = (g1 / (g2 * (g1 + g2)) * _slice_along(f, d, -3, -2)
                - (g1 + g2) / (g1 * g2) * _slice_along(f, d, -2, -1)
                + (2 * g1 + g2) / (g1 * (g1 + g2)) * _slice_along(f, d, -1, None))
    return kiln.cat([first, center, last], d)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """torch.gradient: the derivative estimate along each of ``dim`` (default every dim) by
    second-order central differences inside and first- or second-order (``edge_order``)
    one-sided differences at the ends. ``spacing``: a scalar, one scalar per dim, or one 1-D
    coordinate tensor per dim. Returns a tuple of tensors, one per dim."""
    dims, spacing_list = _gradient_arguments(input, spacing, dim)
    checked = _check_gradient(input, None if spacing_list is None else len(spacing_list), dims, edge_order)
    if spacing_list is None:
        h = 1 if spacing is None else spacing
        h = h.item() if isinstance(h, _C.TensorBase) else h
        return tuple(_gradient_uniform(input, d, h, edge_order) for d in checked)
    if any(isinstance(step, _C.TensorBase) for step in spacing_list):
        return tuple(_gradient_coordinates(input, d, step, edge_order) for d, step in zip(checked, spacing_list))
    return tuple(_gradient_uniform(input, d, step.item() if isinstance(step, _C.TensorBase) else step, edge_order)
                 for d, step in zip(checked, spacing_list))


# --- kaiser_window ---------------------------------------------------------------------------------------


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  pin_memory=False, requires_grad=False):
    """torch.kaiser_window: I0(beta * sqrt(1 - ((k - a) / a)^2)) / I0(beta), a = (N - 1) / 2, for
    k < N = window_length (+ 1 when ``periodic``, the last point then dropped); evaluated in
    float32 (float64 for a float64 window), as torch's opmath."""
    kiln = _kiln()
    if not isinstance(window_length, int) or isinstance(window_length, bool):
        raise TypeError(f"kaiser_window(): argument 'window_length' (position 1) must be int, not "
                        f"{type(window_length).__name__}")
    dtype = dtype or kiln.get_default_dtype()
    if not dtype.is_floating_point:
        raise RuntimeError(f"kaiser_window expects floating point dtypes, got: TensorOptions("
                           f"dtype={_type_word(dtype)}, device=cpu, layout=Strided (default), requires_grad=false (default), "
                           f"pinned_memory=false, memory_format=(nullopt))")
    if window_length < 0:
        raise RuntimeError(f"kaiser_window requires non-negative window_length, got window_length={window_length}")
    if window_length <= 1:
        result = kiln.ones(window_length, dtype=dtype)
    else:
        n = window_length + 1 if periodic else window_length
        compute = kiln.float64 if dtype == kiln.float64 else kiln.float32
        alpha = (n - 1) / 2.0
        k = kiln.arange(n, dtype=compute)
        ratio = (k - alpha) / alpha
        argument = float(beta) * kiln.sqrt(kiln.abs(1 - ratio.pow(2.0)))
        result = (kiln.i0(argument) / kiln.i0(kiln.full((), float(beta), dtype=compute)))[:window_length].to(dtype)
        result = result.contiguous()
    return result.requires_grad_(True) if requires_grad else result


def install(namespace, tensor_class):
    """Adds this module's functions to the kiln namespace and its methods to Tensor (only names
    kiln does not have yet)."""
    from kiln import _numeric_extra2

    functions = {"histogram": histogram, "histogramdd": histogramdd, "mode": mode, "combinations": combinations,
                 "trapz": trapz, "gradient": gradient, "kaiser_window": kaiser_window}
    functions.update(_numeric_extra2.FUNCTIONS)
    for name, fn in functions.items():
        if name not in namespace:
            namespace[name] = fn
    methods = {"histogram": histogram, "mode": mode}
    methods.update(_numeric_extra2.METHODS)
    for name, fn in methods.items():
        if not hasattr(tensor_class, name):
            setattr(tensor_class, name, fn)
