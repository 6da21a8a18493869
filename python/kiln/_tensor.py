"""kiln.Tensor: the Python face of kiln._C.TensorBase.

Everything hot lives in C++ (kiln._C.TensorBase); this subclass adds what is
naturally Python: printing, numpy's ``__array__``, iteration, conversions and
basic indexing views.
"""

from __future__ import annotations

import numpy as np

from kiln import _C
from kiln._tensor_str import format_tensor


class Tensor(_C.TensorBase):
    """A multi-dimensional array of one dtype on one device."""

    __module__ = "kiln"

    # --- printing ------------------------------------------------------------
    def _values_for_print(self) -> np.ndarray:
        if self.dtype is _C.bfloat16:
            return np.array(self.tolist(), dtype=np.float32).reshape(tuple(self.shape))
        return self.numpy(force=True)

    def __repr__(self, *, tensor_contents=None) -> str:
        return format_tensor(
            self._values_for_print(),
            dtype_name=str(self.dtype).removeprefix("kiln."),
            default_dtype_name=str(_C.get_default_dtype()).removeprefix("kiln."),
            device=self.device,
            requires_grad=self.requires_grad,
        )

    __str__ = __repr__

    def __format__(self, format_spec: str) -> str:
        if self.dim() == 0:
            return self.item().__format__(format_spec)
        return object.__format__(self, format_spec)

    # --- numpy ---------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        array = self.numpy()
        if dtype is not None:
            array = array.astype(dtype, copy=False)
        if copy:
            array = array.copy()
        return array

    # --- Python conversions --------------------------------------------------
    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError(
                f"Boolean value of Tensor with {'no values' if self.numel() == 0 else 'more than one value'} "
                "is ambiguous"
            )
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.numel() != 1 or self.dtype.is_floating_point or self.dtype is _C.bool:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __iter__(self):
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter([self.select(0, i) for i in range(self.shape[0])])

    __hash__ = object.__hash__

    # --- basic indexing (ints, slices, None, Ellipsis) -----------------------
    def __getitem__(self, index):
        if not isinstance(index, tuple):
            index = (index,)
        n_ellipsis = sum(1 for i in index if i is Ellipsis)
        if n_ellipsis > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        consumed = sum(1 for i in index if i is not None and i is not Ellipsis)
        if consumed > self.dim():
            raise IndexError(f"too many indices for tensor of dimension {self.dim()}")
        if n_ellipsis:
            at = next(k for k, i in enumerate(index) if i is Ellipsis)
            index = index[:at] + (slice(None),) * (self.dim() - consumed) + index[at + 1 :]
        sizes, strides = list(self.shape), list(self.stride())
        offset = self.storage_offset()
        out_sizes, out_strides = [], []
        dim = 0
        for item in index:
            if item is None:
                out_sizes.append(1)
                out_strides.append(1)
            elif isinstance(item, slice):
                start, stop, step = item.indices(sizes[dim])
                if step <= 0:
                    raise ValueError("step must be greater than zero")
                length = max(0, (stop - start + step - 1) // step)
                if length > 0:
                    offset += start * strides[dim]
                out_sizes.append(length)
                out_strides.append(strides[dim] * step)
                dim += 1
            elif isinstance(item, (int, np.integer)) and not isinstance(item, bool):
                i = int(item)
                if not -sizes[dim] <= i < sizes[dim]:
                    raise IndexError(
                        f"index {i} is out of bounds for dimension {dim} with size {sizes[dim]}"
                    )
                offset += (i % sizes[dim]) * strides[dim]
                dim += 1
            else:
                raise IndexError(
                    "only integers, slices (`:`), ellipsis (`...`) and None are valid indices so far "
                    f"(got {type(item).__name__})"
                )
        out_sizes += sizes[dim:]
        out_strides += strides[dim:]
        return self.as_strided(out_sizes, out_strides, offset)


_C._set_tensor_class(Tensor)
