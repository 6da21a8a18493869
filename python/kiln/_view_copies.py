"""torch's view-copy ops (``alias_copy`` ... ``view_copy``: the view, materialised as a
new contiguous tensor), the ``unsafe_*`` splits and ``as_strided_scatter``."""

from __future__ import annotations

import builtins

from kiln import _C
from kiln._arguments import _write_out, checked_signature
from kiln._no_derivative import _no_derivative
from kiln.autograd.function import Function


def _materialise(view):
    """A contiguous copy of a view (autograd flows through the view and the clone)."""
    return view.clone(memory_format=_C.contiguous_format)


@checked_signature("alias_copy(Tensor input, *, Tensor? out)")
def alias_copy(input, *, out=None):
    """torch.alias_copy: a contiguous copy of ``input`` (the alias, materialised)."""
    return _write_out(_materialise(input), out)


@checked_signature("as_strided_copy(Tensor input, int[] size, int[] stride, int? storage_offset, *, Tensor? out)")
def as_strided_copy(input, size, stride, storage_offset=None, *, out=None):
    """torch.as_strided_copy: ``input.as_strided(size, stride, storage_offset)`` as a new tensor."""
    view = input.as_strided(size, stride) if storage_offset is None else input.as_strided(size, stride, storage_offset)
    return _write_out(_materialise(view), out)


@checked_signature("detach_copy(Tensor input, *, Tensor? out)")
def detach_copy(input, *, out=None):
    """torch.detach_copy: a copy of ``input``. Like torch, the result of an input that
    requires grad requires grad too, and backward through it raises (aten::detach_copy
    has no derivative)."""
    result = _materialise(input.detach())
    (result,) = _no_derivative(["detach_copy"], [result], [input])
    return _write_out(result, out)


@checked_signature("diagonal_copy(Tensor input, int offset, int dim1, int dim2, *, Tensor? out)")
def diagonal_copy(input, offset=0, dim1=0, dim2=1, *, out=None):
    """torch.diagonal_copy: ``input.diagonal(offset, dim1, dim2)`` as a new tensor."""
    return _write_out(_materialise(input.diagonal(offset, dim1, dim2)), out)


@checked_signature("expand_copy(Tensor input, int[] size, *, bool implicit, Tensor? out)")
def expand_copy(input, size, *, implicit=False, out=None):
    """torch.expand_copy: ``input.expand(size)`` as a new (contiguous, materialised) tensor."""
    return _write_out(_materialise(input.expand(tuple(size)) if not isinstance(size, int) else input.expand(size)),
                      out)


@checked_signature("narrow_copy(Tensor input, int dim, int start, int length, *, Tensor? out)")
def narrow_copy(input, dim, start, length, *, out=None):
    """torch.narrow_copy (and Tensor.narrow_copy): ``input.narrow(dim, start, length)`` as a new tensor,
    with the checks of torch's own narrow_copy kernel (a dim past the last, a negative length) first."""
    if input.dim() > 0 and dim >= input.dim():
        raise RuntimeError("Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, but got false.")
    if input.dim() > 0 and -input.dim() <= dim and length < 0:
        size = input.shape[dim]
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return _write_out(_materialise(input.narrow(dim, start, length)), out)


@checked_signature("permute_copy(Tensor input, int[] dims, *, Tensor? out)")
def permute_copy(input, dims, *, out=None):
    """torch.permute_copy: ``input.permute(dims)`` as a new tensor."""
    return _write_out(_materialise(input.permute(tuple(dims))), out)


@checked_signature("select_copy(Tensor input, int dim, int index, *, Tensor? out)")
def select_copy(input, dim, index, *, out=None):
    """torch.select_copy: ``input.select(dim, index)`` as a new tensor."""
    return _write_out(_materialise(input.select(dim, index)), out)


@checked_signature("slice_copy(Tensor input, int dim, int? start, int? end, int step, *, Tensor? out)")
def slice_copy(input, dim=0, start=None, end=None, step=1, *, out=None):
    """torch.slice_copy: ``input[..., start:end:step, ...]`` along ``dim``, as a new tensor."""
    return _write_out(_materialise(_C._functions.slice(input, dim, start, end, step)), out)


@checked_signature("split_copy(Tensor input, int split_size, int dim, *, Tensor? out)")
def split_copy(input, split_size, dim=0, *, out=None):
    """torch.split_copy: the pieces of ``input.split(split_size, dim)``, each a new tensor."""
    return _write_out([_materialise(p) for p in input.split(split_size, dim)], out)


@checked_signature("split_with_sizes_copy(Tensor input, int[] split_sizes, int dim, *, Tensor[]? out)")
def split_with_sizes_copy(input, split_sizes, dim=0, *, out=None):
    """torch.split_with_sizes_copy: the pieces of ``input.split_with_sizes(split_sizes, dim)``, copied."""
    return _write_out([_materialise(p) for p in input.split_with_sizes(list(split_sizes), dim)], out)


@checked_signature("squeeze_copy(Tensor input, Any dim, *, Tensor? out)")
def squeeze_copy(input, dim=None, *, out=None):
    """torch.squeeze_copy: ``input.squeeze(dim)`` as a new tensor (dim: None, an int or a tuple)."""
    view = input.squeeze() if dim is None else input.squeeze(dim)
    return _write_out(_materialise(view), out)


@checked_signature("t_copy(Tensor input, *, Tensor? out)")
def t_copy(input, *, out=None):
    """torch.t_copy: ``input.t()`` as a new tensor."""
    return _write_out(_materialise(input.t()), out)


@checked_signature("transpose_copy(Tensor input, int dim0, int dim1, *, Tensor? out)")
def transpose_copy(input, dim0, dim1, *, out=None):
    """torch.transpose_copy: ``input.transpose(dim0, dim1)`` as a new tensor."""
    return _write_out(_materialise(input.transpose(dim0, dim1)), out)


@checked_signature("unbind_copy(Tensor input, int dim, *, Tensor[]? out)")
def unbind_copy(input, dim=0, *, out=None):
    """torch.unbind_copy: the slices of ``input.unbind(dim)``, each a new tensor."""
    return _write_out([_materialise(p) for p in input.unbind(dim)], out)


@checked_signature("unfold_copy(Tensor input, int dimension, int size, int step, *, Tensor? out)")
def unfold_copy(input, dimension, size, step, *, out=None):
    """torch.unfold_copy: ``input.unfold(dimension, size, step)`` as a new tensor."""
    return _write_out(_materialise(input.unfold(dimension, size, step)), out)


@checked_signature("unsqueeze_copy(Tensor input, int dim, *, Tensor? out)")
def unsqueeze_copy(input, dim, *, out=None):
    """torch.unsqueeze_copy: ``input.unsqueeze(dim)`` as a new tensor."""
    return _write_out(_materialise(input.unsqueeze(dim)), out)


@checked_signature("view_copy(Tensor input, ScalarType|int[] size, *, Tensor? out)")
def view_copy(input, size, *, out=None):
    """torch.view_copy: ``input.view(size)`` (a shape or a dtype) as a new tensor. Unlike
    Tensor.view, any input works: the copy need not alias ``input``'s memory."""
    if isinstance(size, _C.dtype):
        view = input.view(size)
    elif isinstance(size, (list, tuple)):
        shape = [builtins.int(s) for s in size]
        view = input.view(shape) if input.is_contiguous() else input.reshape(shape)
    else:
        raise TypeError(f"view_copy(): argument 'size' must be tuple of ints or a dtype, not {type(size).__name__}")
    return _write_out(_materialise(view), out)


class UnsafeSplit(Function):
    """Pieces that share ``input``'s memory but are not autograd views of it (so they
    may be modified in place, as torch's unsafe_split allows); backward concatenates."""

    @staticmethod
    def forward(ctx, input, sizes, dim):
        ctx.dim = dim
        return tuple(_C.from_dlpack(piece) for piece in input.detach().split_with_sizes(sizes, dim))

    @staticmethod
    def backward(ctx, *grads):
        return _C._functions.cat(list(grads), ctx.dim), None, None


def _unsafe_split_with(input, sizes, dim):
    ndim = builtins.max(input.dim(), 1)
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")
    return UnsafeSplit.apply(input, list(sizes), dim % ndim)


@checked_signature("unsafe_split_with_sizes(Tensor input, int[] split_sizes, int dim)")
def unsafe_split_with_sizes(input, split_sizes, dim=0):
    """torch.unsafe_split_with_sizes: like split_with_sizes, but the pieces are not views
    (they share memory with ``input``; in-place changes to them are not tracked as such)."""
    input.split_with_sizes(list(split_sizes), dim)  # kiln's own checks and messages
    return _unsafe_split_with(input, split_sizes, dim)


@checked_signature("unsafe_split(Tensor input, int split_size, int dim)")
def unsafe_split(input, split_size, dim=0):
    """torch.unsafe_split: like split (an int size), with pieces that are not views."""
    if not isinstance(split_size, builtins.int):
        return unsafe_split_with_sizes(input, split_size, dim)
    sizes = [p.shape[dim] for p in input.split(split_size, dim)]
    return _unsafe_split_with(input, sizes, dim)


@checked_signature("unsafe_chunk(Tensor input, int chunks, int dim)")
def unsafe_chunk(input, chunks, dim=0):
    """torch.unsafe_chunk: like chunk, with pieces that are not views."""
    sizes = [p.shape[dim] for p in input.chunk(chunks, dim)]
    return _unsafe_split_with(input, sizes, dim)


@checked_signature("as_strided_scatter(Tensor input, Tensor src, int[] size, int[] stride, int? storage_offset)")
def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """torch.as_strided_scatter: a copy of ``input`` (same strides) whose
    ``as_strided(size, stride, storage_offset)`` window holds ``src``. Differentiable in both."""
    if input.requires_grad and not input.is_contiguous():
        raise RuntimeError("as_strided_scatter is currently only supported for contiguous inputs")
    output = input.clone()
    window = output.as_strided(size, stride) if storage_offset is None else output.as_strided(size, stride,
                                                                                             storage_offset)
    if tuple(window.shape) != tuple(src.shape):
        raise RuntimeError("expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(window.shape)}")
    window.copy_(src)
    return output
