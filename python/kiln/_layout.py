"""Memory layout at the Python level: torch.layout and kiln.strided (kiln's one layout),
Tensor.dim_order (the dims from outermost to innermost in memory), and the Tensor
properties for layouts and backends kiln does not have (is_sparse, is_xla, ...: False), and is_meta."""

from __future__ import annotations

import builtins

from kiln import _C

bool_ = builtins.bool


class layout:
    """torch.layout: kiln has the one strided layout, ``kiln.strided``."""

    __module__ = "kiln"

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"kiln.{self._name}"

    def __reduce__(self):
        return self._name


strided = layout("strided")


def _false_flag(name):
    return property(lambda self: False, doc=f"Tensor.{name}: False (kiln has no such tensors).")


_BACKEND_FLAGS = ("is_sparse", "is_sparse_csr", "is_quantized", "is_mkldnn", "is_nested", "is_xpu",
                  "is_ipu", "is_mps", "is_mtia", "is_maia", "is_vulkan", "is_xla")


def _contiguous_in_order(sizes, strides, order) -> bool_:
    """Whether the dims in ``order`` (outermost first) are densely packed, size-1 dims free."""
    expected = 1
    for dim in reversed(order):
        if sizes[dim] != 1:
            if strides[dim] != expected:
                return False
            expected *= sizes[dim]
    return True


def _is_contiguous_as(sizes, strides, memory_format) -> bool_:
    ndim = len(sizes)
    if memory_format == _C.contiguous_format:
        return 0 in sizes or _contiguous_in_order(sizes, strides, list(builtins.range(ndim)))
    wanted = {_C.channels_last: 4, _C.channels_last_3d: 5}.get(memory_format)
    if wanted is None or ndim != wanted:
        return False
    return _contiguous_in_order(sizes, strides, [0, *builtins.range(2, ndim), 1])


def _stride_order(sizes, strides, check=False):
    """The logical-to-physical permutation (dims sorted outermost, largest stride, first;
    zero strides compare as no preference, equal strides put the longer dim outside), and,
    with ``check``, whether some neighbouring pair of it is not strictly ordered."""
    ndim = len(sizes)
    if ndim <= 1:
        return list(builtins.range(ndim)), False
    dense = _is_contiguous_as(sizes, strides, _C.contiguous_format)
    channels_last = _is_contiguous_as(sizes, strides, _C.channels_last)
    if dense and not channels_last:
        return list(builtins.range(ndim)), False
    if channels_last and not dense:
        return [0, *builtins.range(2, ndim), 1], False

    def outer(a, b):  # 1: a belongs outside b, -1: inside, 0: no preference
        if strides[a] == 0 or strides[b] == 0:
            return 0
        if strides[a] == strides[b]:
            return 1 if sizes[a] > sizes[b] else 0
        return 1 if strides[a] > strides[b] else -1

    order = list(reversed(builtins.range(ndim)))  # innermost first while sorting
    for i in builtins.range(1, ndim):
        moving = i
        for j in reversed(builtins.range(i)):
            preference = outer(order[j], order[moving])
            if preference > 0:
                order[j], order[moving] = order[moving], order[j]
                moving = j
            elif preference < 0:
                break
    ambiguous = check and any(outer(a, b) != -1 for a, b in zip(order, order[1:]))
    return list(reversed(order)), ambiguous


def dim_order(self, *, ambiguity_check=False):
    """Tensor.dim_order: the dims from outermost to innermost in memory. With
    ``ambiguity_check`` (True, or a list of memory formats one of which must fit
    uniquely), a layout that several orders describe raises RuntimeError."""
    formats = []
    if not isinstance(ambiguity_check, bool_):
        if not isinstance(ambiguity_check, list) or not all(isinstance(m, _C.memory_format) for m in ambiguity_check):
            raise TypeError("The ambiguity_check argument must be a bool or a list of memory formats.")
        formats = ambiguity_check
    sizes, strides = list(self.shape), list(self.stride())
    if ambiguity_check is not False:
        several = any(a == b for a, b in zip(strides, strides[1:])) or 1 in sizes
        fits = builtins.sum(1 for m in formats if _is_contiguous_as(sizes, strides, m))
        if several and fits != 1:
            raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact one of the given "
                               "memory formats.")
    order, ambiguous = _stride_order(sizes, strides, check=bool_(ambiguity_check))
    if ambiguous:
        raise RuntimeError("The tensor does not have unique dim order.")
    return tuple(order)


LAYOUT_PROPERTY = property(lambda self: strided, doc="Tensor.layout: kiln.strided.")
OUTPUT_NR_PROPERTY = property(lambda self: 0, doc="Tensor.output_nr: 0 (kiln does not record which output of its "
                                                  "node a tensor is).")
BACKEND_FLAG_PROPERTIES = {
    name: _false_flag(name) for name in _BACKEND_FLAGS} | {
    # a property, as torch's is a getset descriptor; the answer is the C++ tensor's device (meta: no data)
    "is_meta": property(lambda self: _C.TensorBase.is_meta.__get__(self),
                        doc="Tensor.is_meta: whether the tensor is on the meta device (sizes, strides, dtype, no data)."),
}

# Note [No sparse layouts]
# ------------------------
# Sparse tensors (COO, CSR, CSC, BSR, BSC) are a layout of their own that kiln does not have
# (issue 31). Every entry point torch has for them (Tensor.to_sparse*, kiln.sparse.*) exists
# and raises NotImplementedError with SPARSE_MESSAGE, so code written for torch fails clearly
# at the call rather than with an AttributeError somewhere else.
SPARSE_MESSAGE = "kiln has no sparse layouts (only kiln.strided)"


def sparse_not_implemented(name: str):
    """A function named ``name`` that raises NotImplementedError (Note [No sparse layouts])."""
    def refuse(*args, **kwargs):
        raise NotImplementedError(f"{name}: {SPARSE_MESSAGE}")

    refuse.__name__ = refuse.__qualname__ = name.rsplit(".", 1)[-1]
    refuse.__doc__ = f"{name}: not available, {SPARSE_MESSAGE} (raises NotImplementedError)."
    refuse.not_implemented_reason = SPARSE_MESSAGE  # what a caller (the OpInfo test) may read: it only refuses
    return refuse


SPARSE_METHODS = {name: sparse_not_implemented(f"Tensor.{name}")
                  for name in ("to_sparse", "to_sparse_coo", "to_sparse_csr", "to_sparse_csc", "to_sparse_bsr",
                               "to_sparse_bsc", "sparse_mask", "sparse_dim", "dense_dim", "coalesce", "indices",
                               "values", "crow_indices", "col_indices", "ccol_indices", "row_indices")}
