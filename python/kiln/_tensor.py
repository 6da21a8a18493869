"""kiln.Tensor: the Python face of kiln._C.TensorBase.

Everything hot lives in C++ (kiln._C.TensorBase); this subclass adds what is
naturally Python: printing, numpy's ``__array__``, iteration, conversions and
basic indexing views.
"""

from __future__ import annotations

import builtins
import numbers

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

    # --- basic indexing (ints, slices, None, Ellipsis, bools) ----------------
    def __getitem__(self, index):
        """Basic indexing, always a view: ints and 0-dim integer tensors select,
        slices (positive steps) narrow, None and True add a dim of size 1, False
        one of size 0, and one Ellipsis stands for the dims not named."""
        single = not isinstance(index, tuple)
        index = tuple(_basic_index(item) for item in ((index,) if single else index))
        n_ellipsis = sum(1 for i in index if i is Ellipsis)
        if n_ellipsis > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        consumed = sum(1 for i in index if isinstance(i, slice) or (isinstance(i, int) and not isinstance(i, bool)))
        if consumed > self.dim():
            if self.dim() == 0 and single:  # PyTorch's words for t[0] and t[:] on a 0-dim tensor
                if isinstance(index[0], slice):
                    raise IndexError("slice() cannot be applied to a 0-dim tensor.")
                raise IndexError(
                    "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in "
                    "C++ to convert a 0-dim tensor to a number"
                )
            raise IndexError(f"too many indices for tensor of dimension {self.dim()}")
        if n_ellipsis:
            at = index.index(Ellipsis)
            index = index[:at] + (slice(None),) * (self.dim() - consumed) + index[at + 1 :]
        sizes, strides = list(self.shape), list(self.stride())
        offset = self.storage_offset()
        out_sizes, out_strides = [], []
        dim = 0
        for item in index:
            if item is None or isinstance(item, bool):
                # A new dim of size 1 (None, True) or 0 (False), strided as PyTorch's unsqueeze.
                out_sizes.append(1 if item is None or item else 0)
                out_strides.append(sizes[dim] * strides[dim] if dim < len(sizes) else 1)
            elif isinstance(item, slice):
                start, stop, step = item.indices(sizes[dim])
                if step <= 0:
                    raise ValueError("step must be greater than zero")
                length = max(0, (stop - start + step - 1) // step)
                offset += start * strides[dim]
                out_sizes.append(length)
                out_strides.append(strides[dim] * step)
                dim += 1
            else:
                if not -sizes[dim] <= item < sizes[dim]:
                    raise IndexError(f"index {item} is out of bounds for dimension {dim} with size {sizes[dim]}")
                offset += (item % sizes[dim]) * strides[dim]
                dim += 1
        out_sizes += sizes[dim:]
        out_strides += strides[dim:]
        return self.as_strided(out_sizes, out_strides, offset)


def _basic_index(item):
    """One index item as int, slice, None, Ellipsis or bool; IndexError for the rest."""
    if item is None or item is Ellipsis or isinstance(item, (slice, bool)):
        return item
    if isinstance(item, int):
        return item
    if isinstance(item, np.integer):
        return int(item)
    if isinstance(item, _C.TensorBase) and item.dim() == 0 and not item.dtype.is_floating_point:
        return bool(item.item()) if item.dtype is _C.bool else int(item.item())
    if isinstance(item, (list, _C.TensorBase, np.ndarray)):
        raise IndexError("advanced indexing (with lists, tensors or arrays) is not supported yet")
    raise IndexError(
        "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices "
        f"(got {type(item).__name__})"
    )


# --- arithmetic operators --------------------------------------------------------
# Python's operators on tensors, as torch.Tensor has them: + - * / // % ** & | ^
# << >> and the comparisons (tensors of bools), their reflected forms (2 - t,
# 2 ** t, 1 / t) and augmented assignment (t += 1 is t.add_(1)), and unary - +
# abs ~. A Python number on either side is a Scalar argument or a 0-dim tensor
# that promotes like a wrapped number, by category only (Note [Promotion by
# category], eager/kernels/TypePromotion.h): int8_tensor * 2 stays int8,
# 1 / int_tensor is float. An operand that is neither a tensor nor a number makes
# the operator return NotImplemented, so Python tries the other side and then
# raises its own TypeError (and t == None is False). @ is not defined yet.

_TensorBase = _C.TensorBase


def _is_operand(value) -> bool:
    """Whether an operator takes `value` on its other side: a tensor or a real number."""
    return isinstance(value, (_TensorBase, numbers.Real, np.generic))


def _operator(method, name: str):
    """An operator from a Tensor method taking (self, other)."""

    def operator(self, other):
        try:
            return method(self, other)
        except TypeError:
            if _is_operand(other):
                raise
            return NotImplemented

    operator.__name__ = operator.__qualname__ = name
    return operator


def _reflected(function, name: str):
    """A reflected operator (Python calls it for `number op tensor`): function(other, self)."""

    def operator(self, other):
        try:
            return function(other, self)
        except TypeError:
            if _is_operand(other):
                raise
            return NotImplemented

    operator.__name__ = operator.__qualname__ = name
    return operator


def _dtype_category(dtype) -> int:
    return 2 if dtype.is_floating_point else (0 if dtype is _C.bool else 1)


def _scalar_operand(value, like):
    """A Python number as a 0-dim tensor that promotes against `like` as a wrapped
    number would: in like's dtype unless the number's category is higher (then the
    default float dtype, int64 or bool), its value converted as PyTorch converts a
    wrapped number (integers wrap, floats round). For the reflected operators that
    have no Scalar-first overload (2 / t, 2 // t)."""
    if isinstance(value, _TensorBase):
        return value
    if isinstance(value, (bool, np.bool_)):
        value, natural, category = builtins.bool(value), _C.bool, 0
    elif isinstance(value, numbers.Integral):
        value, natural, category = builtins.int(value), _C.int64, 1
    elif isinstance(value, numbers.Real):
        value, natural, category = builtins.float(value), _C.float64, 2
    else:
        raise TypeError(f"unsupported operand type: {type(value).__name__}")
    if category > _dtype_category(like.dtype):
        target = _C.get_default_dtype() if category == 2 else natural
    else:
        target = like.dtype
    exact = _C._functions.full([], value, dtype=natural, device=like.device)
    if target is natural:
        return exact
    return _C._functions.empty([], dtype=target, device=like.device).copy_(exact)


def _invert(self):
    if self.dtype.is_floating_point:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return self.bitwise_not()


def _positive(self):
    if self.dtype is _C.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return self


_ARITHMETIC_OPERATORS = {
    "__add__": _operator(_TensorBase.add, "__add__"),
    "__radd__": _operator(_TensorBase.add, "__radd__"),
    "__iadd__": _operator(_TensorBase.add_, "__iadd__"),
    "__sub__": _operator(_TensorBase.sub, "__sub__"),
    "__rsub__": _operator(_C._functions.rsub, "__rsub__"),
    "__isub__": _operator(_TensorBase.sub_, "__isub__"),
    "__mul__": _operator(_TensorBase.mul, "__mul__"),
    "__rmul__": _operator(_TensorBase.mul, "__rmul__"),
    "__imul__": _operator(_TensorBase.mul_, "__imul__"),
    "__truediv__": _operator(_TensorBase.div, "__truediv__"),
    "__rtruediv__": _reflected(lambda other, self: _C._functions.div(_scalar_operand(other, self), self),
                               "__rtruediv__"),
    "__itruediv__": _operator(_TensorBase.div_, "__itruediv__"),
    "__floordiv__": _operator(_TensorBase.floor_divide, "__floordiv__"),
    "__rfloordiv__": _reflected(
        lambda other, self: _C._functions.floor_divide(_scalar_operand(other, self), self), "__rfloordiv__"),
    "__ifloordiv__": _operator(_TensorBase.floor_divide_, "__ifloordiv__"),
    "__mod__": _operator(_TensorBase.remainder, "__mod__"),
    "__rmod__": _reflected(_C._functions.remainder, "__rmod__"),
    "__imod__": _operator(_TensorBase.remainder_, "__imod__"),
    "__pow__": _operator(_TensorBase.pow, "__pow__"),
    "__rpow__": _reflected(_C._functions.pow, "__rpow__"),
    "__ipow__": _operator(_TensorBase.pow_, "__ipow__"),
    "__and__": _operator(_TensorBase.bitwise_and, "__and__"),
    "__rand__": _operator(_TensorBase.bitwise_and, "__rand__"),
    "__iand__": _operator(_TensorBase.bitwise_and_, "__iand__"),
    "__or__": _operator(_TensorBase.bitwise_or, "__or__"),
    "__ror__": _operator(_TensorBase.bitwise_or, "__ror__"),
    "__ior__": _operator(_TensorBase.bitwise_or_, "__ior__"),
    "__xor__": _operator(_TensorBase.bitwise_xor, "__xor__"),
    "__rxor__": _operator(_TensorBase.bitwise_xor, "__rxor__"),
    "__ixor__": _operator(_TensorBase.bitwise_xor_, "__ixor__"),
    "__lshift__": _operator(_TensorBase.bitwise_left_shift, "__lshift__"),
    "__rlshift__": _reflected(_C._functions.bitwise_left_shift, "__rlshift__"),
    "__ilshift__": _operator(_TensorBase.bitwise_left_shift_, "__ilshift__"),
    "__rshift__": _operator(_TensorBase.bitwise_right_shift, "__rshift__"),
    "__rrshift__": _reflected(_C._functions.bitwise_right_shift, "__rrshift__"),
    "__irshift__": _operator(_TensorBase.bitwise_right_shift_, "__irshift__"),
    # Comparisons give tensors; Tensor keeps object.__hash__ (set in the class body).
    "__eq__": _operator(_TensorBase.eq, "__eq__"),
    "__ne__": _operator(_TensorBase.ne, "__ne__"),
    "__lt__": _operator(_TensorBase.lt, "__lt__"),
    "__le__": _operator(_TensorBase.le, "__le__"),
    "__gt__": _operator(_TensorBase.gt, "__gt__"),
    "__ge__": _operator(_TensorBase.ge, "__ge__"),
    # Unary: neg and abs are the unary pointwise ops (eager/ops/pointwise_unary.yaml).
    "__neg__": lambda self: self.neg(),
    "__pos__": _positive,
    "__abs__": lambda self: self.abs(),
    "__invert__": _invert,
    # numpy defers to these operators (np.float32(2) * t is a tensor), as with torch.Tensor.
    "__array_priority__": 1000,
}
for _name, _value in _ARITHMETIC_OPERATORS.items():
    setattr(Tensor, _name, _value)
del _name, _value
# --- end of arithmetic operators ---------------------------------------------------


_C._set_tensor_class(Tensor)
