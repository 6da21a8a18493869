"""kiln.Tensor: the Python face of kiln._C.TensorBase.

Everything hot lives in C++ (kiln._C.TensorBase); this subclass adds what is
naturally Python: printing, numpy's ``__array__``, iteration and conversions.
"""

from __future__ import annotations

import warnings
import builtins
import numbers

import numpy as np

from kiln import _C, _indexing, autograd
from kiln._tensor_str import format_meta_tensor, format_tensor


class Tensor(_C.TensorBase):
    """A multi-dimensional array of one dtype on one device."""

    __module__ = "kiln"

    # --- printing ------------------------------------------------------------
    def _values_for_print(self) -> np.ndarray:
        if self.device.type != "cpu":
            return self.detach().cpu()._values_for_print()
        if self.dtype is _C.bfloat16:
            return np.array(self.tolist(), dtype=np.float32).reshape(tuple(self.shape))
        return self.numpy(force=True)

    def __repr__(self, *, tensor_contents=None) -> str:
        if self.is_meta:  # no values to print
            return format_meta_tensor(
                dtype_name=str(self.dtype).removeprefix("kiln."),
                default_dtype_name=str(_C.get_default_dtype()).removeprefix("kiln."),
                requires_grad=self.requires_grad,
                size=tuple(self.shape),
            )
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

    def _real_python_scalar(self, type_name: str):
        value = self._python_scalar()
        if isinstance(value, complex):
            if value.imag != 0:  # torch's Scalar conversion error
                raise RuntimeError(f"value cannot be converted to type {type_name} without overflow")
            value = value.real
        return value

    def __float__(self) -> float:
        return float(self._real_python_scalar("double"))

    def __int__(self) -> int:
        return int(self._real_python_scalar("int64_t"))

    def __complex__(self) -> complex:
        return complex(self._python_scalar())

    def __index__(self) -> int:
        if self.numel() != 1 or self.dtype.is_floating_point or self.dtype.is_complex or self.dtype is _C.bool:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __iter__(self):
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter([self.select(0, i) for i in range(self.shape[0])])

    __hash__ = object.__hash__

    # --- copying and pickling ---
    def _deep_copy_values(self):
        """A new tensor with a copy of the values (same dtype and shape, no history)."""
        out = _C._functions.empty(tuple(self.shape), dtype=self.dtype)
        out.copy_(self.detach())
        return out

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = self.detach()._deep_copy_values()
        if self.requires_grad:
            result.requires_grad_(True)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol):
        if self.dtype is _C.bfloat16:
            raise NotImplementedError("pickling bfloat16 tensors is not supported yet; use kiln.save")
        values = self.detach().numpy().copy()
        return (_rebuild_tensor, (values, self.requires_grad))

    @property
    def data(self):
        """The tensor without its autograd history (shares storage)."""
        return self.detach()

    # --- autograd ---
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulates the gradient of this tensor w.r.t. the graph leaves into their ``.grad``."""
        autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def register_hook(self, hook):
        """Registers ``hook(grad) -> Tensor or None`` on this tensor's gradient; returns a removable handle."""
        handle_id = _C._register_hook(self, hook)
        tensor = self

        class _Handle:
            def remove(self_handle) -> None:
                _C._remove_hook(tensor, handle_id)

        return _Handle()

    def register_post_accumulate_grad_hook(self, hook):
        """Registers ``hook(tensor) -> None``, run after backward accumulated into this leaf's ``.grad``."""
        handle_id = _C._register_post_accumulate_grad_hook(self, hook)
        tensor = self

        class _Handle:
            def remove(self_handle) -> None:
                _C._remove_post_accumulate_grad_hook(tensor, handle_id)

        return _Handle()
    # --- shape properties ------------------------------------------------------
    # PyTorch's T, mT, mH and H are properties over ops it does not expose as
    # methods (numpy_T, mT, mH, matrix_H); mH and H conjugate complex tensors
    # (into a new tensor: kiln has no lazy conjugate bit). Warnings and errors in PyTorch's words.
    @property
    def T(self) -> "Tensor":
        """The dims in reverse order (deprecated for tensors other than 2-D)."""
        n = self.dim()
        if n == 0:
            _warn_once("Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases.")
        elif n != 2:
            _warn_once(
                "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated and it "
                "will throw an error in a future release. Consider `x.mT` to transpose batches of matrices or "
                "`x.permute(*kiln.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a tensor."
            )
        return self.permute(tuple(range(n - 1, -1, -1)))

    @property
    def mT(self) -> "Tensor":
        """The last two dims swapped (a batch of matrices transposed)."""
        return self._matrix_transpose("mT", "This function is the identity in these cases.")

    @property
    def mH(self) -> "Tensor":
        """The conjugate transpose of a batch of matrices (a transpose for real dtypes).
        For a complex tensor it is a new tensor, not a view: kiln has no lazy conjugate bit."""
        out = self._matrix_transpose("mH", "Consider using x.conj().")
        return out.conj_physical() if self.dtype.is_complex and self.dim() != 0 else out

    @property
    def H(self) -> "Tensor":
        """The conjugate transpose of a matrix (a transpose for real dtypes)."""
        n = self.dim()
        if n == 0:
            _warn_once("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().")
            return self
        if n != 2:
            raise RuntimeError(
                f"tensor.H is only supported on matrices (2-D tensors). Got {n}-D tensor."
                + (" For batches of matrices, consider using tensor.mH" if n > 2 else "")
            )
        out = self.transpose(-2, -1)
        return out.conj_physical() if self.dtype.is_complex else out

    def _matrix_transpose(self, name: str, zero_dim_hint: str) -> "Tensor":
        n = self.dim()
        if n == 0:
            _warn_once(f"Tensor.{name} is deprecated on 0-D tensors. {zero_dim_hint}", stacklevel=4)
            return self
        if n == 1:
            raise RuntimeError(f"tensor.{name} is only supported on matrices or batches of matrices. Got 1-D tensor.")
        return self.transpose(-2, -1)

    # --- end of shape properties -----------------------------------------------

    # --- indexing ------------------------------------------------------------
    # x[index] and x[index] = value are kiln._C.TensorBase's mapping protocol
    # (python/csrc/TensorIndexing.cpp); nonzero's as_tuple form is Python.
    def nonzero(self, *, out=None, as_tuple=False):
        """The indices of the nonzero elements: an (n, ndim) tensor, or with
        ``as_tuple=True`` a tuple of ndim 1-D tensors (one per dim)."""
        return _indexing.nonzero(self, out=out, as_tuple=as_tuple)


_warned: set[str] = set()


def _warn_once(message: str, stacklevel: int = 3) -> None:
    """A UserWarning the first time `message` is seen in this process (PyTorch's TORCH_WARN_ONCE)."""
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, UserWarning, stacklevel=stacklevel)


def _rebuild_tensor(values, requires_grad):
    t = _C.from_numpy(values)
    if requires_grad:
        t.requires_grad_(True)
    return t


# --- arithmetic operators --------------------------------------------------------
# Python's operators on tensors, as torch.Tensor has them: + - * / // % ** & | ^
# << >> and the comparisons (tensors of bools), their reflected forms (2 - t,
# 2 ** t, 1 / t) and augmented assignment (t += 1 is t.add_(1)), and unary - +
# abs ~. A Python number on either side is a Scalar argument or a 0-dim tensor
# that promotes like a wrapped number, by category only (Note [Promotion by
# category], eager/kernels/TypePromotion.h): int8_tensor * 2 stays int8,
# 1 / int_tensor is float. An operand that is neither a tensor nor a number makes
# the operator return NotImplemented, so Python tries the other side and then
# raises its own TypeError (and t == None is False). The operators that are a
# method applied to (self, other) are generated in C beside the method
# (_TensorBase.__mul__; Note [Operators in C], tools/opgen/python_bindings.py):
# a Python wrapper cost a frame and a try block per call.

_TensorBase = _C.TensorBase


def _is_operand(value) -> bool:
    """Whether an operator takes `value` on its other side: a tensor or a (real or complex) number."""
    return isinstance(value, (_TensorBase, numbers.Complex, np.generic))


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


_COMPLEX_OF = {_C.float16: _C.complex64, _C.bfloat16: _C.complex64, _C.float32: _C.complex64,
               _C.float64: _C.complex128}


def _dtype_category(dtype) -> int:
    if dtype.is_complex:
        return 3
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
    elif isinstance(value, numbers.Complex):
        value, natural, category = builtins.complex(value), _C.complex128, 3
    else:
        raise TypeError(f"unsupported operand type: {type(value).__name__}")
    if category == 3 and like.dtype.is_floating_point:
        target = _COMPLEX_OF[like.dtype]  # a complex number keeps a float tensor's precision
    elif category > _dtype_category(like.dtype):
        target = {2: _C.get_default_dtype(), 3: _COMPLEX_OF.get(_C.get_default_dtype())}.get(category, natural)
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
    "__add__": _TensorBase.__add__,
    "__radd__": _TensorBase.__radd__,
    "__iadd__": _TensorBase.__iadd__,
    "__sub__": _TensorBase.__sub__,
    "__rsub__": _operator(_C._functions.rsub, "__rsub__"),
    "__isub__": _TensorBase.__isub__,
    "__mul__": _TensorBase.__mul__,
    "__rmul__": _TensorBase.__rmul__,
    "__imul__": _TensorBase.__imul__,
    "__truediv__": _TensorBase.__truediv__,
    # number / t is reciprocal(t) * number, as torch's Tensor.__rdiv__: two roundings, not one division
    # (float32 2.0 / t differs from div(2.0, t) in the last bit), and the number read as mul reads it.
    "__rtruediv__": _reflected(lambda other, self: self.reciprocal() * other, "__rtruediv__"),
    "__rdiv__": _reflected(lambda other, self: self.reciprocal() * other, "__rdiv__"),
    "__itruediv__": _TensorBase.__itruediv__,
    "__floordiv__": _TensorBase.__floordiv__,
    "__rfloordiv__": _reflected(
        lambda other, self: _C._functions.floor_divide(_scalar_operand(other, self), self), "__rfloordiv__"),
    "__ifloordiv__": _TensorBase.__ifloordiv__,
    "__mod__": _TensorBase.__mod__,
    "__rmod__": _reflected(_C._functions.remainder, "__rmod__"),
    "__imod__": _TensorBase.__imod__,
    "__pow__": _TensorBase.__pow__,
    "__rpow__": _reflected(_C._functions.pow, "__rpow__"),
    "__ipow__": _TensorBase.__ipow__,
    "__and__": _TensorBase.__and__,
    "__rand__": _TensorBase.__rand__,
    "__iand__": _TensorBase.__iand__,
    "__or__": _TensorBase.__or__,
    "__ror__": _TensorBase.__ror__,
    "__ior__": _TensorBase.__ior__,
    "__xor__": _TensorBase.__xor__,
    "__rxor__": _TensorBase.__rxor__,
    "__ixor__": _TensorBase.__ixor__,
    "__lshift__": _TensorBase.__lshift__,
    "__rlshift__": _reflected(_C._functions.bitwise_left_shift, "__rlshift__"),
    "__ilshift__": _TensorBase.__ilshift__,
    "__rshift__": _TensorBase.__rshift__,
    "__rrshift__": _reflected(_C._functions.bitwise_right_shift, "__rrshift__"),
    "__irshift__": _TensorBase.__irshift__,
    # Comparisons give tensors; Tensor keeps object.__hash__ (set in the class body).
    "__eq__": _TensorBase.__eq__,
    "__ne__": _TensorBase.__ne__,
    "__lt__": _TensorBase.__lt__,
    "__le__": _TensorBase.__le__,
    "__gt__": _TensorBase.__gt__,
    "__ge__": _TensorBase.__ge__,
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

# The matrix-product operator (a @ b, torch.Tensor.__matmul__), added by the front end.
Tensor.__matmul__ = _operator(_TensorBase.matmul, "__matmul__")
Tensor.__rmatmul__ = _reflected(_C._functions.matmul, "__rmatmul__")
Tensor.__imatmul__ = _operator(_TensorBase.matmul, "__imatmul__")
