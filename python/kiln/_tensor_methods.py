"""Tensor methods PyTorch has that kiln writes in Python over its ops:
unfold (a strided view of sliding windows), sum_to_size, cumsum_/cumprod_,
and the small queries is_nonzero, is_same_size, is_signed, get_device,
is_pinned/pin_memory."""

from __future__ import annotations

from kiln import _C


def unfold(self, dimension: int, size: int, step: int):
    """A view with every window of ``size`` elements along ``dimension``, ``step`` apart, in a new last dim."""
    ndim = max(self.dim(), 1)
    if not -ndim <= dimension < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got "
                         f"{dimension})")
    d = dimension % ndim
    length = self.shape[d] if self.dim() else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    sizes = list(self.shape) if self.dim() else []
    strides = list(self.stride()) if self.dim() else []
    if self.dim() == 0:
        return self.as_strided([size], [1], self.storage_offset())
    windows = (length - size) // step + 1
    new_sizes = sizes[:d] + [windows] + sizes[d + 1:] + [size]
    new_strides = strides[:d] + [strides[d] * step] + strides[d + 1:] + [strides[d]]
    return self.as_strided(new_sizes, new_strides, self.storage_offset())


def sum_to_size(self, *size):
    """``self`` summed down to ``size`` (which it must broadcast from)."""
    if len(size) == 1 and not isinstance(size[0], int):
        size = tuple(size[0])
    target = list(size)
    leading = self.dim() - len(target)
    if leading < 0 or any(t != 1 and t != s for t, s in zip(target, list(self.shape)[leading:])):
        raise RuntimeError(f"size {{{list(target)}}} is not expandable to size {{{list(self.shape)}}}.")
    result = self
    if leading:
        result = result.sum(tuple(range(leading)))
    dims = tuple(i for i, t in enumerate(target) if t == 1 and result.shape[i] != 1)
    if dims:
        result = result.sum(dims, keepdim=True)
    return result


def cumsum_(self, dim, *, dtype=None):
    """In-place cumulative sum along ``dim``."""
    return self.copy_(self.cumsum(dim, dtype=dtype))


def cumprod_(self, dim, *, dtype=None):
    """In-place cumulative product along ``dim``."""
    return self.copy_(self.cumprod(dim, dtype=dtype))


def is_nonzero(self) -> bool:
    """The truth of a one-element tensor (RuntimeError for any other)."""
    if self.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if self.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(self.item())


def is_same_size(self, other) -> bool:
    return tuple(self.shape) == tuple(other.shape)


def is_signed(self) -> bool:
    return self.dtype.is_signed


def get_device(self) -> int:
    """-1 on the CPU, the device index on a GPU."""
    device = self.device
    return -1 if device.type == "cpu" else (device.index or 0)


def is_pinned(self, device=None) -> bool:
    return False


def pin_memory(self, device=None):
    """kiln's CPU tensors are not page-locked: the tensor itself (torch returns a pinned copy)."""
    return self


def install(tensor_class) -> None:
    for fn in (unfold, sum_to_size, cumsum_, cumprod_, is_nonzero, is_same_size, is_signed, get_device, is_pinned,
               pin_memory):
        if not hasattr(tensor_class, fn.__name__):
            setattr(tensor_class, fn.__name__, fn)
