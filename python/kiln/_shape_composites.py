"""Shape functions PyTorch composes from other ops (torch/functional.py and
aten's CompositeImplicit kernels): tile, atleast_1d/2d/3d, hsplit/vsplit/
dsplit, block_diag, diagflat, cartesian_prod, combinations, meshgrid,
tril_indices, triu_indices and argwhere. They are views or copies made by kiln's ops, so
autograd sees those ops."""

from __future__ import annotations

import warnings
import builtins
import itertools

import numpy as np

from kiln import _C
from kiln._arguments import _require_tensor, _type_name, checked_signature
from kiln._creation import tensor
from kiln._dtypes import promote_types

_F = _C._functions


def _f():
    return _C._functions


@checked_signature("tile(Tensor input, int[] dims)")
def tile(input, dims):
    """``input`` repeated ``dims`` times per dim; missing leading dims count as 1 (unlike repeat)."""
    dims = tuple(dims)
    if len(dims) < input.dim():
        dims = (1,) * (input.dim() - len(dims)) + dims
    return input.repeat(dims)


def _require_tensors(tensors):
    """torch's argument parser's refusal of a non-tensor in a tensor list."""
    for i, t in enumerate(tensors):
        if not isinstance(t, _C.TensorBase):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {_type_name(t)}")


def _atleast(tensors, promote, name):
    if len(tensors) == 1 and not isinstance(tensors[0], _C.TensorBase):
        if not isinstance(tensors[0], (list, tuple)):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {_type_name(tensors[0])}")
        tensors = tuple(tensors[0])
        _require_tensors(tensors)
        return tuple(promote(t) for t in tensors)
    _require_tensors(tensors)
    if len(tensors) == 1:
        return promote(tensors[0])
    return tuple(promote(t) for t in tensors)


def atleast_1d(*tensors):
    """Each tensor with at least one dim (0-dim tensors as shape [1]; views)."""
    return _atleast(tensors, lambda t: t.reshape(1) if t.dim() == 0 else t, "atleast_1d")


def atleast_2d(*tensors):
    """Each tensor with at least two dims (0-dim as [1, 1], 1-dim [n] as [1, n]; views)."""
    def promote(t):
        if t.dim() == 0:
            return t.reshape(1, 1)
        return t.unsqueeze(0) if t.dim() == 1 else t

    return _atleast(tensors, promote, "atleast_2d")


def atleast_3d(*tensors):
    """Each tensor with at least three dims (0-dim as [1, 1, 1], [n] as [1, n, 1], [m, n] as [m, n, 1])."""
    def promote(t):
        if t.dim() == 0:
            return t.reshape(1, 1, 1)
        if t.dim() == 1:
            return t.unsqueeze(0).unsqueeze(-1)
        return t.unsqueeze(-1) if t.dim() == 2 else t

    return _atleast(tensors, promote, "atleast_3d")


def _split_along(name, input, indices_or_sections, dim, min_dims):
    _require_tensor(input, name, "input", 1)
    if input.dim() < min_dims:
        raise RuntimeError(f"kiln.{name} requires a tensor with at least {min_dims} dimension, but got a tensor "
                           f"with {input.dim()} dimensions!")
    if isinstance(indices_or_sections, int):
        size = input.shape[dim]
        if indices_or_sections == 0 or size % indices_or_sections != 0:
            raise RuntimeError(f"kiln.{name} attempted to split along dimension {dim}, but the size of the "
                               f"dimension {size} is not divisible by the split_size {indices_or_sections}!")
    return _f().tensor_split(input, indices_or_sections, dim)


def hsplit(input, indices_or_sections):
    """tensor_split along dim 1 (dim 0 for 1-D tensors), sections dividing the dim exactly."""
    _require_tensor(input, "hsplit", "input", 1)
    return _split_along("hsplit", input, indices_or_sections, 0 if input.dim() == 1 else 1, 1)


def vsplit(input, indices_or_sections):
    """tensor_split along dim 0 of a tensor of at least 2 dims."""
    return _split_along("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input, indices_or_sections):
    """tensor_split along dim 2 of a tensor of at least 3 dims."""
    return _split_along("dsplit", input, indices_or_sections, 2, 3)


def block_diag(*tensors):
    """The tensors (0-, 1- or 2-dim) placed along the diagonal of a zero matrix, in their promoted dtype."""
    _require_tensors(tensors)
    matrices = []
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(f"kiln.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.dim()} dimensions")
        matrices.append(t.reshape(1, 1) if t.dim() == 0 else t.reshape(1, -1) if t.dim() == 1 else t)
    if not matrices:
        return _F.empty(1, 0)
    dtype = matrices[0].dtype
    for m in matrices[1:]:
        dtype = promote_types(dtype, m.dtype)
    rows = sum(m.shape[0] for m in matrices)
    cols = sum(m.shape[1] for m in matrices)
    result = _F.zeros(rows, cols, dtype=dtype, device=matrices[0].device)
    r = c = 0
    for m in matrices:
        h, w = m.shape
        if h and w:
            result[r:r + h, c:c + w] = m.to(dtype)
        r, c = r + h, c + w
    return result


@checked_signature("diagflat(Tensor input, int offset)")
def diagflat(input, offset=0):
    """A 2-D tensor with ``input``'s elements (flattened) on the ``offset`` diagonal."""
    return _f().diag(input.reshape(-1), offset)


def meshgrid(*tensors, indexing=None):
    """Coordinate grids of 0- or 1-dim tensors: ``indexing="ij"`` (the default, with PyTorch's
    warning when not given) or ``"xy"`` (the first two dims swapped)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("kiln.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'kiln.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    _require_tensors(tensors)
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(f"kiln.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}")
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    flat = [t.reshape(-1) for t in tensors]
    swap = indexing == "xy" and len(flat) >= 2
    if swap:
        flat[0], flat[1] = flat[1], flat[0]
    shape = [t.shape[0] for t in flat]
    grids = []
    for i, t in enumerate(flat):
        view = [1] * len(flat)
        view[i] = -1
        grids.append(t.reshape(view).expand(shape))
    if swap:  # grids of (second, first, ...) are already laid out as "xy" wants: only the order changes
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors):
    """Every combination of the 1-D tensors' elements, one per row (the tensor itself for one input)."""
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return _F.stack([g.reshape(-1) for g in grids], 1)


def _triangle_indices(np_fn, row, col, offset, dtype, device):
    if dtype is None:
        dtype = _C.int64
    if row < 0 or col < 0:
        raise RuntimeError(f"row must be non-negative, got{row}" if row < 0 else f"col must be non-negative, got{col}")
    rows, cols = np_fn(row, offset, col)
    return tensor(np.stack([rows, cols]).astype(np.int64).reshape(2, -1), dtype=dtype, device=device)


@checked_signature("tril_indices(int row, int col, int offset, *, ScalarType? dtype)")
def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (row, column) indices of the lower triangle of a row x col matrix, row-major, as a 2 x N tensor."""
    return _triangle_indices(np.tril_indices, row, col, offset, dtype, device)


@checked_signature("triu_indices(int row, int col, int offset, *, ScalarType? dtype)")
def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (row, column) indices of the upper triangle of a row x col matrix, row-major, as a 2 x N tensor."""
    return _triangle_indices(np.triu_indices, row, col, offset, dtype, device)


@checked_signature("argwhere(Tensor input)")
def argwhere(input):
    """The indices of the nonzero elements, one row each (nonzero's result)."""
    return _f().nonzero(input)


@checked_signature("combinations(Tensor input, int r, bool with_replacement)")
def combinations(input, r=2, with_replacement=False):
    """torch.combinations: the length-``r`` combinations of the 1-D ``input``'s elements as the
    rows of a (C, r) tensor, in itertools order (with_replacement: with repeats)."""
    if not isinstance(r, int) or isinstance(r, bool):
        raise TypeError(f"combinations(): argument 'r' (position 2) must be int, not {type(r).__name__}")
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _F.empty(0, dtype=input.dtype)
    n = input.shape[0]
    if r == 2:
        pairs = triu_indices(n, n, 0 if with_replacement else 1)
        index = pairs.t().contiguous()
    else:
        chosen = (itertools.combinations_with_replacement if with_replacement else itertools.combinations)(
            builtins.range(n), r)
        index = tensor([i for combo in chosen for i in combo], dtype=_C.int64).reshape(-1, r)
    return input.index_select(0, index.reshape(-1)).reshape(index.shape[0], r)
