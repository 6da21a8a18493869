"""kiln.Tensor: the Python face of kiln._C.TensorBase.

Everything hot lives in C++ (kiln._C.TensorBase); this subclass adds what is
naturally Python: printing, numpy's ``__array__``, iteration and conversions.
"""

from __future__ import annotations

import numpy as np

from kiln import _C, _indexing
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
        """numpy's protocol: the tensor's memory when possible; ``copy=False`` refuses to copy."""
        array = self.numpy()
        if dtype is not None and np.dtype(dtype) != array.dtype:
            if copy is False:
                raise ValueError("Unable to avoid copy while creating an array as requested.")
            return array.astype(dtype)
        return array.copy() if copy else array

    # --- Python conversions --------------------------------------------------
    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError(
                f"Boolean value of Tensor with {'no values' if self.numel() == 0 else 'more than one value'} "
                "is ambiguous"
            )
        return bool(self.item())

    def _python_scalar(self):
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __float__(self) -> float:
        return float(self._python_scalar())

    def __int__(self) -> int:
        return int(self._python_scalar())

    def __index__(self) -> int:
        if self.numel() != 1 or self.dtype.is_floating_point or self.dtype is _C.bool:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __iter__(self):
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter([self.select(0, i) for i in range(self.shape[0])])

    __hash__ = object.__hash__

    # --- indexing ------------------------------------------------------------
    # x[index] and x[index] = value are kiln._C.TensorBase's mapping protocol
    # (python/csrc/TensorIndexing.cpp); nonzero's as_tuple form is Python.
    def nonzero(self, *, out=None, as_tuple=False):
        """The indices of the nonzero elements: an (n, ndim) tensor, or with
        ``as_tuple=True`` a tuple of ndim 1-D tensors (one per dim)."""
        return _indexing.nonzero(self, out=out, as_tuple=as_tuple)


_C._set_tensor_class(Tensor)
