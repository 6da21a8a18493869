"""Tensor methods PyTorch has that kiln writes in Python over its ops:
unfold (a strided view of sliding windows), sum_to_size, cumsum_/cumprod_,
is_pinned/pin_memory/record_stream, index_copy and put. (The queries is_nonzero, is_same_size,
is_signed and get_device are kiln/_predicates.py's functions, bound as methods.)"""

from __future__ import annotations

from kiln import _C
from kiln._arguments import _require_int, _require_tensor, checked_signature



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
    if not target:  # torch sums to a 0-dim size outright (bool becomes int64, as sum does), even from 0-dim
        return self.sum()
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


def is_pinned(self, device=None) -> bool:
    """Whether self's memory is page-locked host memory from pin_memory() (False without a driver)."""
    return _C._cuda_is_pinned(self)


def pin_memory(self, device=None):
    """A copy of this CPU tensor in page-locked memory, which CUDA copies can read
    asynchronously (self when it already is); the no-driver RuntimeError without CUDA."""
    if _C._cuda_is_pinned(self):
        return self
    return _C._cuda_pin_memory(self)


def record_stream(self, stream) -> None:
    """Marks this CUDA tensor's memory as used by ``stream``: the caching allocator will not
    reuse it until the work queued on ``stream`` so far has finished."""
    if not hasattr(stream, "_stream"):  # a kiln.cuda.Stream holds its native stream there
        raise TypeError(f"record_stream(): argument 's' (position 1) must be Stream, not {type(stream).__name__}")
    _C._cuda_record_stream(self, stream._stream)


# --- index_copy, put ---------------------------------------------------------------------------

def _index_copy_argument_types(dim, index, source, op):
    _require_int(dim, op, "dim", 1)
    _require_tensor(index, op, "index", 2)
    _require_tensor(source, op, "source", 3)


def _index_copy_checks(self, dim, index, source, op):
    _index_copy_argument_types(dim, index, source, op)
    ndim = max(self.dim(), 1)
    d = dim % ndim if -ndim <= dim < ndim else None
    if d is None:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")
    if index.dim() > 1:
        raise IndexError("index_copy_(): Index should have dimension 1 or 0 (got " + str(index.dim()) + ")")
    count = index.numel()
    source_size = source.shape[d] if source.dim() > 0 else 1
    if count != source_size:
        raise IndexError(f"index_copy_(): Number of indices ({count}) should be equal to source.size(dim) "
                         f"({source_size})")
    size = self.shape[d] if self.dim() else 1
    if count:
        low, high = int(index.min()), int(index.max())
        bad = low if low < 0 else high if high >= size else None
        if bad is not None:
            raise IndexError(f"index_copy_(): index {bad} is out of bounds for dimension {d} with size {size}")
    return d


def index_copy_(self, dim, index, source):
    """self[..., index[i], ...] = source[..., i, ...] along ``dim``."""
    d = _index_copy_checks(self, dim, index, source, "index_copy_")
    if self.dim() == 0:  # a 0-d tensor is read as one slot along dim 0
        if index.numel():
            self.copy_(source.reshape(()))
        return self
    key = (slice(None),) * d + (index.reshape(-1),)
    self[key] = source
    return self


@checked_signature("index_copy(Tensor self as input, int dim, Tensor index, Tensor source)")
def index_copy(self, dim, index, source):
    """A copy of ``self`` with ``source``'s slices written at ``index`` along ``dim``."""
    _index_copy_argument_types(dim, index, source, "index_copy")
    return index_copy_(self.clone(), dim, index, source)


def put_(self, index, source, accumulate=False):
    """Writes (or adds) ``source`` at the flat positions ``index`` of ``self`` (as if it were 1-D)."""
    _require_tensor(index, "put_", "index", 1)
    _require_tensor(source, "put_", "source", 2)
    n = self.numel()
    flat_index = index.reshape(-1)
    if flat_index.numel():
        low, high = int(flat_index.min()), int(flat_index.max())
        bad = low if low < -n else high if high >= n else None
        if bad is not None:
            raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    if index.numel() != source.numel():
        raise RuntimeError(f"put_(): Expected source and index to have the same number of elements, but got "
                           f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    if self.is_contiguous():
        self.view(-1).index_put_((flat_index,), source.reshape(-1), accumulate)
    else:
        flat = self.reshape(-1).clone()
        flat.index_put_((flat_index,), source.reshape(-1), accumulate)
        self.copy_(flat.view(self.shape))
    return self


@checked_signature("put(Tensor self as input, Tensor index, Tensor source, bool accumulate)")
def put(self, index, source, accumulate=False):
    """put_ on a copy of ``self``."""
    _require_tensor(index, "put", "index", 1)
    _require_tensor(source, "put", "source", 2)
    return put_(self.clone(), index, source, accumulate)
