"""The indexing functions whose Python signature is not one op: ``nonzero``
with ``as_tuple`` (the ``nonzero`` and ``nonzero_numpy`` ops underneath), nonzero_static,
Tensor.scatter_reduce_ and index_reduce(_) over the scatter_reduce op; and the
composites unravel_index, Tensor.fill_diagonal_ and diagonal_scatter /
select_scatter / slice_scatter (a copy of the input with one view overwritten)."""

from __future__ import annotations

from kiln import _C
from kiln._arguments import _require_tensor, checked_signature
from kiln._creation import tensor

_F = _C._functions


@checked_signature("nonzero(Tensor input, *, Tensor? out)")
def nonzero(input, *, out=None, as_tuple=False):
    """The indices of the nonzero elements of ``input``: an (n, ndim) int64 tensor,
    or with ``as_tuple=True`` a tuple of ndim 1-D tensors, one per dim (a 0-dim
    input reads as one element, as numpy)."""
    if as_tuple:
        if out is not None:
            raise TypeError("nonzero(): out= cannot be combined with as_tuple=True")
        return _C._functions.nonzero_numpy(input)
    if out is not None:
        return _C._functions.nonzero(input, out=out)
    return _C._functions.nonzero(input)


@checked_signature("nonzero_static(Tensor input, *, int size, int fill_value)")
def nonzero_static(input, *, size, fill_value=-1):
    """nonzero with a fixed row count: the first ``size`` rows of ``nonzero(input)``, padded
    with rows of ``fill_value`` when there are fewer."""
    if not isinstance(size, int) or size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    found = _F.nonzero(input)
    if found.shape[0] >= size:
        return found[:size].clone()
    padding = _F.full([size - found.shape[0], found.shape[1]], fill_value, dtype=found.dtype, device=found.device)
    return _F.cat([found, padding], 0)


def _saved_input(self, src):
    """self as the reduction reads it: a copy when autograd records (the backward reads self's
    values, which the copy_ into self overwrites)."""
    return self.clone() if _C.is_grad_enabled() and (self.requires_grad or src.requires_grad) else self


def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    """Tensor.scatter_reduce_: the scatter_reduce op's result copied into self (differentiable
    through copy_)."""
    _require_tensor(index, "scatter_reduce_", "index", 2)
    _require_tensor(src, "scatter_reduce_", "src", 3)
    result = _C._functions.scatter_reduce(_saved_input(self, src), dim, index, src, reduce, include_self=include_self)
    return self.copy_(result)


_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


def _index_reduce_source_index(caller, self, dim, index, source, reduce):
    """index_reduce's checks (torch's order and words) and its index as scatter_reduce's:
    index[i] along dim for every element of source's slice i."""
    if reduce not in _INDEX_REDUCTIONS:
        raise RuntimeError(f"{caller}(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    if index.dim() > 1:
        word = _dtype_word(index.dtype)
        raise IndexError(f"{caller}(): Index is supposed to be a vector, but got dim: {index.dim()} with type: "
                         f"{word} and size: {list(index.shape)}")
    if index.dtype.is_floating_point or str(index.dtype) not in ("kiln.int64", "kiln.int32"):
        raise RuntimeError(f"{caller}(): Expected dtype int32/int64 for index but got: {_dtype_word(index.dtype)}")
    if self.dtype != source.dtype:
        raise RuntimeError(f"{caller}(): self ({_dtype_word(self.dtype)}) and source ({_dtype_word(source.dtype)}) "
                           "must have the same scalar type")
    dim = dim % max(self.dim(), 1)
    self_rest = [s for d, s in enumerate(self.shape) if d != dim]
    source_rest = [s for d, s in enumerate(source.shape) if d != dim]
    if source.dim() != self.dim() or self_rest != source_rest:
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the specified dimension. "
                           f"Got self.shape = {list(self.shape)} source.shape = {list(source.shape)}")
    count = index.numel()
    if self.dim() > 0 and count != source.shape[dim]:
        raise RuntimeError(f"{caller}(): Number of indices ({count}) should be equal to source.size(dim): "
                           f"({source.shape[dim]}), for dim: {dim}")
    size = self.shape[dim] if self.dim() > 0 else 1
    if count and (bool((index < 0).any()) or bool((index >= size).any())):
        raise IndexError("index out of range in self")
    if self.dim() == 0:
        return dim, index.reshape(())
    shape = [1] * source.dim()
    shape[dim] = count
    return dim, index.reshape(shape).expand(*source.shape)


@checked_signature("index_reduce(Tensor self as input, int dim, Tensor index, Tensor source, str reduce, *, "
                   "bool include_self)")
def index_reduce(self, dim, index, source, reduce, *, include_self=True):
    """Tensor.index_reduce: source's slice i reduced (prod, mean, amax, amin) into self's slice index[i]
    along dim — scatter_reduce with index spread over each slice."""
    dim, spread = _index_reduce_source_index("index_reduce", self, dim, index, source, reduce)
    return _C._functions.scatter_reduce(self, dim, spread, source, reduce, include_self=include_self)


def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    """Tensor.index_reduce_: index_reduce's result copied into self."""
    dim, spread = _index_reduce_source_index("index_reduce_", self, dim, index, source, reduce)
    result = _C._functions.scatter_reduce(_saved_input(self, source), dim, spread, source, reduce,
                                          include_self=include_self)
    return self.copy_(result)


def _dtype_word(dtype):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
            "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}[
        str(dtype).removeprefix("kiln.")]


def unravel_index(indices, shape):
    """The coordinates of flat (row-major) indices in a tensor of ``shape``, as a tuple of tensors."""
    if not isinstance(indices, _C.TensorBase):
        indices = tensor(indices)
    if indices.dtype.is_floating_point or indices.dtype == _C.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(shape))
    coordinates = []
    rest = indices.to(_C.int64)
    for size in reversed(shape):
        coordinates.append(_F.remainder(rest, size) if size else _F.zeros_like(rest))
        rest = _F.div(rest, size, rounding_mode="floor") if size else rest
    return tuple(reversed(coordinates))


def fill_diagonal_(self, fill_value, wrap=False):
    """Fills the main diagonal (all dims equal past 2-D; a tall 2-D matrix restarts it every n + 1 rows with wrap)."""
    if self.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.dim() > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    length = min(self.shape)
    if self.dim() == 2 and wrap and self.shape[0] > self.shape[1] + 1:
        rows, columns = self.shape
        positions = _F.arange(0, rows * columns, columns + 1)
        index = (_F.div(positions, columns, rounding_mode="floor"), _F.remainder(positions, columns))
    else:
        index = (_F.arange(length),) * self.dim()
    self[index] = fill_value
    return self


def _check_slice_size(src, view):
    if tuple(src.shape) != tuple(view.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(view.shape)}")


def _scatter_into(input, src, pick, op):
    _require_tensor(input, op, "input", 1)
    _require_tensor(src, op, "src", 2)
    result = input.clone()
    view = pick(result)
    _check_slice_size(src, view)
    view.copy_(src)
    return result


@checked_signature("diagonal_scatter(Tensor input, Tensor src, int offset, int dim1, int dim2)")
def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of input with the diagonal (offset, dim1, dim2) replaced by src."""
    return _scatter_into(input, src, lambda t: _C._functions.diagonal(t, offset, dim1, dim2), "diagonal_scatter")


@checked_signature("select_scatter(Tensor input, Tensor src, int dim, int index)")
def select_scatter(input, src, dim, index):
    """A copy of input with input.select(dim, index) replaced by src."""
    return _scatter_into(input, src, lambda t: t.select(dim, index), "select_scatter")


@checked_signature("slice_scatter(Tensor input, Tensor src, int dim, int? start, int? end, int step)")
def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of input with input[..., start:end:step, ...] (along dim) replaced by src."""
    def pick(t):
        d = dim + t.dim() if dim < 0 else dim
        return t[(slice(None),) * d + (slice(start, end, step),)]

    return _scatter_into(input, src, pick, "slice_scatter")
