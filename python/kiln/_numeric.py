"""Numerical composites PyTorch builds from other ops: diff, trapezoid,
cumulative_trapezoid, cross (and linalg.cross), nanmean, cov, corrcoef,
dist, float_power and vander. Written over kiln's ops, so their gradients
are those ops' gradients."""

from __future__ import annotations

import warnings

from kiln import _C


def _f():
    return _C._functions


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along ``dim`` (logical xor for bool), after ``prepend``/``append``."""
    import kiln

    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    for name, extra in (("prepend", prepend), ("append", append)):
        if extra is not None and extra.dim() != input.dim():
            raise RuntimeError(f"diff expects prepend or append to be the same dimension as input")
    parts = [t for t in (prepend, input, append) if t is not None]
    x = kiln.cat(parts, dim) if len(parts) > 1 else input
    for _ in range(n):
        length = x.shape[dim]
        if length == 0:
            break
        later, earlier = x.narrow(dim, 1, length - 1), x.narrow(dim, 0, length - 1)
        x = kiln.logical_xor(later, earlier) if x.dtype == kiln.bool else later - earlier
    return x


def _float_of(y):
    import kiln

    return y if y.dtype.is_floating_point else y.to(kiln.get_default_dtype())


def _spacing(x, y, dim):
    """The gaps between the sample points x along y's dim (a 1-D x laid along that dim)."""
    spacing = diff(x, dim=dim if x.dim() == y.dim() else -1)
    if x.dim() == 1 and y.dim() > 1:
        shape = [1] * y.dim()
        shape[dim] = -1
        spacing = spacing.reshape(shape)
    return spacing


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoid rule along ``dim``: spacing ``dx`` (default 1) or sample points ``x``, with torch's
    checks (the shared core is trapz's, in _numeric_extra.py)."""
    from kiln import _numeric_extra  # noqa: PLC0415  (it imports kiln)

    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments")
    if isinstance(x, _C.TensorBase):
        return _numeric_extra._trapezoid_x(y, x, dim)
    if x is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments - got (Tensor, "
                        f"{type(x).__name__}), but expected a Tensor x or a keyword dx")
    return _numeric_extra._trapezoid_dx(y, 1.0 if dx is None else dx, dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoid rule along ``dim`` (one element shorter than y along it)."""
    if x is not None and dx is not None:
        raise TypeError("cumulative_trapezoid() received an invalid combination of arguments")
    y = _float_of(y) if not isinstance(x, _C.TensorBase) else y
    length = y.shape[dim]
    if length == 0:
        return y.narrow(dim, 0, 0)
    pairs = y.narrow(dim, 1, length - 1) + y.narrow(dim, 0, length - 1)
    if isinstance(x, _C.TensorBase):
        return (_spacing(x, y, dim) * pairs / 2).cumsum(dim)
    step = 1 if dx is None and x is None else (dx if dx is not None else x)
    return (pairs * (step / 2)).cumsum(dim)


def _cross(input, other, dim):
    import kiln

    from kiln._comparison import scalar_type_name

    if input.dim() != other.dim():
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if input.dtype != other.dtype:  # torch's kernel takes one dtype, it does not promote
        raise RuntimeError(f"expected scalar type {scalar_type_name(input.dtype)} but found "
                           f"{scalar_type_name(other.dtype)}")
    if input.dtype == kiln.bool:
        raise NotImplementedError("\"cross\" not implemented for 'Bool'")
    a, b = kiln.broadcast_tensors(input, other)
    if a.shape[dim] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[dim]} and "
                           f"{other.shape[dim]}")
    a0, a1, a2 = a.unbind(dim)
    b0, b1, b2 = b.unbind(dim)
    return kiln.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], dim)


def linalg_cross(input, other, *, dim=-1, out=None):
    """The cross product of 3-vectors along ``dim`` (broadcasting the other dims)."""
    result = _cross(input, other, dim)
    if out is not None:
        return _C._functions._copy_to_out(result, out)
    return result


def cross(input, other, dim=None, *, out=None):
    """The cross product along ``dim``; without ``dim``, the first dim of size 3 (deprecated, as in PyTorch)."""
    if dim is None:
        warnings.warn("Using kiln.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      "explicitly or simply use kiln.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=2)
        dim = next((d for d, size in enumerate(input.shape) if size == 3), -1)
    return linalg_cross(input, other, dim=dim, out=out)


def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """The mean of the non-NaN elements (NaN where a slice has none)."""
    import kiln

    if not input.dtype.is_floating_point:
        from kiln._comparison import scalar_type_name

        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{scalar_type_name(input.dtype)}")
    counts = kiln.logical_not(kiln.isnan(input)).sum(dim, keepdim) if dim is not None else \
        kiln.logical_not(kiln.isnan(input)).sum()
    total = kiln.nansum(input, dim, keepdim, dtype=dtype) if dim is not None else kiln.nansum(input, dtype=dtype)
    result = total / counts
    if out is not None:
        return _C._functions._copy_to_out(result, out)
    return result


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables (rows) of ``input`` over its observations (columns)."""
    import kiln

    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    x = _float_of(x)
    observations = x.shape[1]
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
    return (kiln.mm(centred, weighted.t()) / norm).squeeze()


def corrcoef(input):
    """Pearson correlation coefficients of the variables (rows) of ``input``, clipped to [-1, 1]."""
    import kiln

    c = cov(input)
    if c.dim() == 0:
        return c / c
    stddev = kiln.sqrt(kiln.diagonal(c))
    c = c / stddev.unsqueeze(1)
    c = c / stddev.unsqueeze(0)
    return kiln.clamp(c, -1, 1)


def dist(input, other, p=2):
    """The p-norm of ``input - other``."""
    import kiln

    return kiln.linalg.vector_norm(input - other, p)


def float_power(input, exponent, *, out=None):
    """``input ** exponent`` computed in float64 whatever the inputs' dtypes."""
    import kiln

    base = input.to(kiln.float64) if isinstance(input, _C.TensorBase) else float(input)
    power = exponent.to(kiln.float64) if isinstance(exponent, _C.TensorBase) else float(exponent)
    return kiln.pow(base, power, out=out) if out is not None else kiln.pow(base, power)


def float_power_(self, exponent):
    """In-place float_power: ``self`` must already be float64."""
    import kiln

    if self.dtype != kiln.float64:
        from kiln._comparison import scalar_type_name

        raise RuntimeError(f"the base given to float_power_ has dtype {scalar_type_name(self.dtype)} but the "
                           f"operation's result requires dtype Double")
    return self.pow_(exponent.to(kiln.float64) if isinstance(exponent, _C.TensorBase) else float(exponent))


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-D ``x``: columns x^(N-1) ... x^0 (or increasing powers)."""
    import kiln

    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dtype = x.dtype if x.dtype.is_floating_point else kiln.int64
    if n == 0:
        return kiln.empty(x.shape[0], 0, dtype=dtype)
    columns = [kiln.ones(x.shape[0], 1, dtype=dtype)]
    if n > 1:
        columns.append(x.to(dtype).unsqueeze(1).expand(-1, n - 1))
    result = kiln.cat(columns, 1).cumprod(1)
    return result if increasing else result.flip(1)
