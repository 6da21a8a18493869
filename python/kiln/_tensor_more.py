"""torch functions and Tensor methods kiln lacked, as short composites over its
ops (differentiable where torch's are): renorm (renorm_), bucketize, isin,
unravel_index, ger, fill_diagonal_, diagonal_scatter / select_scatter /
slice_scatter, and the hann / hamming / blackman / bartlett windows."""

from __future__ import annotations

import math

from kiln import _C


def _check_tensor(op, position, argument, value):
    if not isinstance(value, _C.TensorBase):
        raise TypeError(f"{op}(): argument '{argument}' (position {position}) must be Tensor, not "
                        f"{type(value).__name__}")


def renorm(input, p, dim, maxnorm, *, out=None):
    """Each slice along ``dim`` whose p-norm exceeds maxnorm scaled to norm maxnorm (factor maxnorm / (norm + 1e-7))."""
    import kiln

    _check_tensor("renorm", 1, "input", input)
    if input.dim() < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} dimensions")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    dim = dim + input.dim() if -input.dim() <= dim < 0 else dim
    if not 0 <= dim < input.dim():
        raise IndexError(f"Dimension out of range (expected to be in range of [{-input.dim()}, {input.dim() - 1}], "
                         f"but got {dim})")
    others = [d for d in range(input.dim()) if d != dim]
    norm = kiln.linalg.vector_norm(input, p, dim=others, keepdim=True)
    factor = kiln.where(norm > maxnorm, maxnorm / (norm + 1e-7), kiln.ones_like(norm))
    result = input * factor
    return result if out is None else _C._functions._copy_to_out(result, out)


def renorm_(self, p, dim, maxnorm):
    return self.copy_(renorm(self, p, dim, maxnorm))


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The index of each input value's bucket among the sorted 1-D boundaries (searchsorted with the operands
    swapped)."""
    _check_tensor("bucketize", 2, "boundaries", boundaries)
    if boundaries.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})")
    kwargs = {"out_int32": out_int32, "right": right}
    if out is not None:
        kwargs["out"] = out
    return _C._functions.searchsorted(boundaries, input, **kwargs)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of ``elements`` occurs in ``test_elements`` (either may be a scalar)."""
    import kiln

    if not isinstance(elements, _C.TensorBase) and not isinstance(test_elements, _C.TensorBase):
        raise TypeError("isin() received an invalid combination of arguments")
    if not isinstance(elements, _C.TensorBase):
        elements = kiln.tensor(elements, dtype=test_elements.dtype)
    if not isinstance(test_elements, _C.TensorBase):
        test_elements = kiln.tensor(test_elements, dtype=elements.dtype)
    test = test_elements.reshape(-1)
    if test.numel() == 0:
        found = kiln.zeros(elements.shape, dtype=kiln.bool)
    else:
        found = (elements.unsqueeze(-1) == test).any(-1)
    return ~found if invert else found


def unravel_index(indices, shape):
    """The coordinates of flat (row-major) indices in a tensor of ``shape``, as a tuple of tensors."""
    import kiln

    if not isinstance(indices, _C.TensorBase):
        indices = kiln.tensor(indices)
    if indices.dtype.is_floating_point or indices.dtype == kiln.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(shape))
    coordinates = []
    rest = indices.to(kiln.int64)
    for size in reversed(shape):
        coordinates.append(kiln.remainder(rest, size) if size else kiln.zeros_like(rest))
        rest = kiln.div(rest, size, rounding_mode="floor") if size else rest
    return tuple(reversed(coordinates))


def ger(input, vec2, *, out=None):
    """torch.ger: the outer product (kiln.outer)."""
    return _C._functions.outer(input, vec2, out=out) if out is not None else _C._functions.outer(input, vec2)


def fill_diagonal_(self, fill_value, wrap=False):
    """Fills the main diagonal (all dims equal past 2-D; a tall 2-D matrix restarts it every n + 1 rows with wrap)."""
    import kiln

    if self.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.dim() > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    length = min(self.shape)
    if self.dim() == 2 and wrap and self.shape[0] > self.shape[1] + 1:
        rows, columns = self.shape
        positions = kiln.arange(0, rows * columns, columns + 1)
        index = (kiln.div(positions, columns, rounding_mode="floor"), kiln.remainder(positions, columns))
    else:
        index = (kiln.arange(length),) * self.dim()
    self[index] = fill_value
    return self


def _check_slice_size(src, view):
    if tuple(src.shape) != tuple(view.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(view.shape)}")


def _scatter_into(input, src, pick):
    result = input.clone()
    view = pick(result)
    _check_slice_size(src, view)
    view.copy_(src)
    return result


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of input with the diagonal (offset, dim1, dim2) replaced by src."""
    return _scatter_into(input, src, lambda t: _C._functions.diagonal(t, offset, dim1, dim2))


def select_scatter(input, src, dim, index):
    """A copy of input with input.select(dim, index) replaced by src."""
    return _scatter_into(input, src, lambda t: t.select(dim, index))


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of input with input[..., start:end:step, ...] (along dim) replaced by src."""
    def pick(t):
        d = dim + t.dim() if dim < 0 else dim
        return t[(slice(None),) * d + (slice(start, end, step),)]

    return _scatter_into(input, src, pick)


# --- windows ----------------------------------------------------------------------------------------------


def _window(name, window_length, periodic, dtype, requires_grad, terms):
    import kiln

    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    dtype = dtype or kiln.get_default_dtype()
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}")
    if window_length <= 1:
        result = kiln.ones(window_length, dtype=dtype)
    else:
        n = window_length + 1 if periodic else window_length
        k = kiln.arange(window_length, dtype=kiln.float64)
        result = terms(k, n - 1).to(dtype)
    return result.requires_grad_(requires_grad) if requires_grad else result


def _cosine_sum(coefficients):
    import kiln

    def terms(k, span):
        total = kiln.full_like(k, coefficients[0])
        for j, a in enumerate(coefficients[1:], 1):
            total = total + ((-1) ** j) * a * kiln.cos(k * (2 * math.pi * j / span))
        return total

    return terms


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                requires_grad=False):
    return _window("hann_window", window_length, periodic, dtype, requires_grad, _cosine_sum((0.5, 0.5)))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   pin_memory=False, requires_grad=False):
    return _window("hamming_window", window_length, periodic, dtype, requires_grad, _cosine_sum((alpha, beta)))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    return _window("blackman_window", window_length, periodic, dtype, requires_grad,
                   _cosine_sum((0.42, 0.5, 0.08)))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    import kiln

    return _window("bartlett_window", window_length, periodic, dtype, requires_grad,
                   lambda k, span: 1 - kiln.abs(k * (2 / span) - 1))
