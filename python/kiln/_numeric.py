"""Numerical composites PyTorch builds from other ops: diff, gradient, trapezoid,
trapz, cumulative_trapezoid, cross (and linalg.cross), nanmean, cov, corrcoef,
dist, float_power and vander. Written over kiln's ops, so their gradients
are those ops' gradients."""

from __future__ import annotations

import builtins
import warnings

from kiln import _C
from kiln._comparison import scalar_type_name
from kiln._arguments import _require_tensor, _wrap_dim, checked_signature
from kiln._norms import vector_norm
from kiln._shape import broadcast_tensors

_F = _C._functions


def _f():
    return _C._functions


@checked_signature("diff(Tensor input, int n, int dim, Tensor? prepend, Tensor? append)")
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along ``dim`` (logical xor for bool), after ``prepend``/``append``."""
    _require_tensor(input, "diff", "input", 1)
    for name, extra in (("prepend", prepend), ("append", append)):
        if extra is not None:
            _require_tensor(extra, "diff", name, position=None)
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    for name, extra in (("prepend", prepend), ("append", append)):
        if extra is not None and extra.dim() != input.dim():
            raise RuntimeError(f"diff expects prepend or append to be the same dimension as input")
    if n == 0:  # as torch: a copy of the input, prepend and append left out
        return input.clone()
    parts = [t for t in (prepend, input, append) if t is not None]
    x = _F.cat(parts, dim) if len(parts) > 1 else input
    for _ in range(n):
        length = x.shape[dim]
        if length == 0:
            break
        later, earlier = x.narrow(dim, 1, length - 1), x.narrow(dim, 0, length - 1)
        x = _F.logical_xor(later, earlier) if x.dtype == _C.bool else later - earlier
    return x


def _float_of(y):
    return y if y.dtype.is_floating_point else y.to(_C.get_default_dtype())


def _spacing(x, y, dim):
    """The gaps between the sample points x along y's dim (a 1-D x laid along that dim)."""
    spacing = diff(x, dim=dim if x.dim() == y.dim() else -1)
    if x.dim() == 1 and y.dim() > 1:
        shape = [1] * y.dim()
        shape[dim] = -1
        spacing = spacing.reshape(shape)
    return spacing


@checked_signature("trapezoid(Tensor y, Tensor? x, *, Scalar dx, int dim)", overloaded=True)
def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoid rule along ``dim``: spacing ``dx`` (default 1) or sample points ``x``, with torch's
    checks (the shared core is trapz's, below)."""
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments")
    if isinstance(x, _C.TensorBase):
        return _trapezoid_x(y, x, dim)
    if x is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments - got (Tensor, "
                        f"{type(x).__name__}), but expected a Tensor x or a keyword dx")
    return _trapezoid_dx(y, 1.0 if dx is None else dx, dim)


@checked_signature("cumulative_trapezoid(Tensor y, Tensor? x, *, Scalar dx, int dim)", overloaded=True)
def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoid rule along ``dim`` (one element shorter than y along it)."""
    if x is not None and dx is not None:
        raise TypeError("cumulative_trapezoid() received an invalid combination of arguments")
    step = dx if dx is not None else x
    if step is not None and not isinstance(step, (_C.TensorBase, int, float)):
        raise TypeError(f"cumulative_trapezoid() received an invalid combination of arguments - got (Tensor, "
                        f"{type(step).__name__}), but expected a Tensor x or a number dx")
    if y.dim() == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    y = _float_of(y) if not isinstance(x, _C.TensorBase) else y
    dim = _wrap_dim(dim, y.dim())
    length = y.shape[dim]
    if length == 0:
        return y.narrow(dim, 0, 0)
    pairs = y.narrow(dim, 1, length - 1) + y.narrow(dim, 0, length - 1)
    if isinstance(x, _C.TensorBase):
        return (_spacing(x, y, dim) * pairs / 2).cumsum(dim)
    step = 1 if dx is None and x is None else (dx if dx is not None else x)
    return (pairs * (step / 2)).cumsum(dim)


def _cross(input, other, dim):
    if input.dim() != other.dim():
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if input.dtype != other.dtype:  # torch's kernel takes one dtype, it does not promote
        raise RuntimeError(f"expected scalar type {scalar_type_name(input.dtype)} but found "
                           f"{scalar_type_name(other.dtype)}")
    if input.dtype == _C.bool:
        raise NotImplementedError("\"cross\" not implemented for 'Bool'")
    rank = input.dim()
    if not -max(rank, 1) <= dim < max(rank, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(rank, 1)}, {max(rank, 1) - 1}], "
                         f"but got {dim})")
    a, b = broadcast_tensors(input, other)
    if input.shape[dim] != 3 or other.shape[dim] != 3:  # each input, before broadcasting (as torch)
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[dim]} and "
                           f"{other.shape[dim]}")
    a0, a1, a2 = a.unbind(dim)
    b0, b1, b2 = b.unbind(dim)
    return _F.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], dim)


@checked_signature("linalg_cross(Tensor input, Tensor other, *, int dim, Tensor? out)")
def linalg_cross(input, other, *, dim=-1, out=None):
    """The cross product of 3-vectors along ``dim`` (broadcasting the other dims)."""
    result = _cross(input, other, dim)
    if out is not None:
        return _C._functions._copy_to_out(result, out)
    return result


@checked_signature("cross(Tensor input, Tensor other, int? dim, *, Tensor? out)")
def cross(input, other, dim=None, *, out=None):
    """The cross product along ``dim``; without ``dim``, the first dim of size 3 (deprecated, as in PyTorch)."""
    _require_tensor(input, "cross", "input", 1)
    _require_tensor(other, "cross", "other", 2)
    if dim is None:
        warnings.warn("Using kiln.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      "explicitly or simply use kiln.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=2)
        dim = next((d for d, size in enumerate(input.shape) if size == 3), -1)
    return linalg_cross(input, other, dim=dim, out=out)


@checked_signature("nanmean(Tensor input, int[1]? dim, bool keepdim, *, ScalarType? dtype, Tensor? out)")
def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """The mean of the non-NaN elements (NaN where a slice has none)."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{scalar_type_name(input.dtype)}")
    counts = _F.logical_not(_F.isnan(input)).sum(dim, keepdim) if dim is not None else \
        _F.logical_not(_F.isnan(input)).sum()
    total = _F.nansum(input, dim, keepdim, dtype=dtype) if dim is not None else _F.nansum(input, dtype=dtype)
    result = total / counts
    if out is not None:
        return _C._functions._copy_to_out(result, out)
    return result


def _check_cov_weights(weights, name: str, observations: int, *, integral: bool) -> None:
    """torch's checks of cov's fweights (integral) and aweights (floating): at most 1-D, the kind of
    dtype, one per observation, none negative."""
    if weights is None:
        return
    if weights.dim() > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
                           f"{weights.dim()} dimensions")
    if integral and (weights.dtype.is_floating_point or weights.dtype.is_complex):
        raise RuntimeError(f"cov(): expected {name} to have integral dtype but got {name} with "
                           f"{scalar_type_name(weights.dtype)} dtype")
    if not integral and not weights.dtype.is_floating_point:
        raise RuntimeError(f"cov(): expected {name} to have floating point dtype but got {name} with "
                           f"{scalar_type_name(weights.dtype)} dtype")
    if weights.numel() != observations:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the input "
                           f"but got {weights.numel()} != {observations}")
    if observations > 0 and bool(weights.min() < 0):
        raise RuntimeError(f"cov(): {name} cannot be negative")


@checked_signature("cov(Tensor input, *, int correction, Tensor? fweights, Tensor? aweights)")
def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables (rows) of ``input`` over its observations (columns)."""
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    x = _float_of(x)
    observations = x.shape[1]
    _check_cov_weights(fweights, "fweights", observations, integral=True)
    _check_cov_weights(aweights, "aweights", observations, integral=False)
    weights = None
    if fweights is not None:
        weights = fweights
    if aweights is not None:
        weights = aweights if weights is None else weights * aweights
    if weights is None:
        average = x.mean(1)
        weight_sum = observations
    else:
        weight_sum = weights.sum()
        average = (x * weights).sum(1) / weight_sum
    if weights is None:
        norm = weight_sum - correction
    elif correction == 0:
        norm = weight_sum
    elif aweights is None:
        norm = weight_sum - correction
    else:
        norm = weight_sum - correction * (weights * aweights).sum() / weight_sum
    if float(norm) <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
        norm = norm * 0 if isinstance(norm, _C.TensorBase) else 0
    centred = x - average.unsqueeze(1)
    weighted = centred if weights is None else centred * weights
    return (_F.mm(centred, weighted.t()) / norm).squeeze()


@checked_signature("corrcoef(Tensor input)")
def corrcoef(input):
    """Pearson correlation coefficients of the variables (rows) of ``input``, clipped to [-1, 1]."""
    c = cov(input)
    if c.dim() == 0:
        return c / c
    stddev = _F.sqrt(_F.diagonal(c))
    c = c / stddev.unsqueeze(1)
    c = c / stddev.unsqueeze(0)
    return _F.clamp(c, -1, 1)


@checked_signature("dist(Tensor input, Tensor other, Scalar p)")
def dist(input, other, p=2):
    """The p-norm of ``input - other``."""
    return vector_norm(input - other, p)


@checked_signature("float_power(Tensor|Scalar input, Tensor|Scalar exponent, *, Tensor? out)", overloaded=True)
def float_power(input, exponent, *, out=None):
    """``input ** exponent`` computed in float64 whatever the inputs' dtypes."""
    base = input.to(_C.float64) if isinstance(input, _C.TensorBase) else float(input)
    power = exponent.to(_C.float64) if isinstance(exponent, _C.TensorBase) else float(exponent)
    return _F.pow(base, power, out=out) if out is not None else _F.pow(base, power)


def float_power_(self, exponent):
    """In-place float_power: ``self`` must already be float64."""
    if self.dtype != _C.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {scalar_type_name(self.dtype)} but the "
                           f"operation's result requires dtype Double")
    return self.pow_(exponent.to(_C.float64) if isinstance(exponent, _C.TensorBase) else float(exponent))


@checked_signature("vander(Tensor x, int? N, bool increasing)")
def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-D ``x``: columns x^(N-1) ... x^0 (or increasing powers)."""
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dtype = x.dtype if x.dtype.is_floating_point else _C.int64
    if n == 0:
        return _F.empty(x.shape[0], 0, dtype=dtype)
    columns = [_F.ones(x.shape[0], 1, dtype=dtype)]
    if n > 1:
        columns.append(x.to(dtype).unsqueeze(1).expand(-1, n - 1))
    result = _F.cat(columns, 1).cumprod(1)
    return result if increasing else result.flip(1)


def _trapz_type_error(y, x, dx):
    got = ", ".join([type(y).__name__] + ([type(x).__name__] if x is not None else [])
                    + ([f"dx={type(dx).__name__}"] if dx is not None else []))
    return TypeError(f"trapz() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                     f" * (Tensor y, *, float dx = 1, int dim = -1)\n * (Tensor y, Tensor x, *, int dim = -1)\n")


def _slice_along(t, dim, start, stop):
    return t[(slice(None),) * dim + (slice(start, stop),)]


def _empty_integral(y, dim):
    return _F.zeros(tuple(s for i, s in enumerate(y.shape) if i != dim), dtype=y.dtype)


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


@checked_signature("trapz(Tensor y, Any x, *, Any dx, int dim)")
def trapz(y, x=None, *, dx=None, dim=-1):
    """torch.trapz, trapezoid's legacy alias: trapz(y, x, *, dim=-1) with sample points x, or
    trapz(y, *, dx=1, dim=-1) with a uniform spacing."""
    if x is not None and (dx is not None or not isinstance(x, _C.TensorBase)) or not isinstance(
            dx, (type(None), int, float)):
        raise _trapz_type_error(y, x, dx)
    if isinstance(x, _C.TensorBase):
        return _trapezoid_x(y, x, dim)
    return _trapezoid_dx(y, 1.0 if dx is None else dx, dim)


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
    center = (_slice_along(f, d, 2, None) - _slice_along(f, d, 0, -2)) / h
    if edge_order == 1:
        first = (_slice_along(f, d, 1, 2) - _slice_along(f, d, 0, 1)) / h
        last = (_slice_along(f, d, -1, None) - _slice_along(f, d, -2, -1)) / h
    else:
        first = (_slice_along(f, d, 0, 1) * -1.5 + _slice_along(f, d, 1, 2) * 2 - _slice_along(f, d, 2, 3) * 0.5) / h
        last = (_slice_along(f, d, -3, -2) * 0.5 + _slice_along(f, d, -2, -1) * -2
                + _slice_along(f, d, -1, None) * 1.5) / h
    return _F.cat([first, center / 2, last], d)


def _gradient_coordinates(f, d, coordinates, edge_order):
    """One dim of torch's gradient for sample coordinates along it (non-uniform differences)."""
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
    return _F.cat([first, center, last], d)


@checked_signature("gradient(Tensor input, *, Any spacing, int|int[]? dim, int edge_order)")
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
