"""kiln.nn.parameter, as torch.nn.parameter: Parameter (a Tensor that a Module registers as a
learnable weight), Buffer, UninitializedParameter, UninitializedBuffer and is_lazy.

Buffer(t) is torch's: a detached plain Tensor marked ``_is_buffer`` (and
``persistent``); ``isinstance(x, Buffer)`` tests that mark. Assigning one as a
Module attribute registers it as a buffer (kiln.nn.Module.__setattr__).

The uninitialized tensors are the placeholders lazy modules hold until their
first forward: an empty tensor whose class blocks use until ``materialize``
gives it a shape and turns it into a Parameter (or a plain Tensor).

Knowing differences from torch:
- torch blocks *every* torch function on an uninitialized tensor through
  ``__torch_function__``; kiln has no such dispatch, so only Tensor methods and
  operators raise the ValueError. A free function (``kiln.add(p, 1)``,
  ``F.linear(x, p)``) runs on the empty tensor and fails with its own error.
- ``materialize(shape, dtype=...)`` cannot change the dtype in place (kiln has
  no ``Tensor.data`` setter): a dtype other than the tensor's raises
  NotImplementedError; create the placeholder with the dtype instead.
"""

from __future__ import annotations

from kiln import _C
from kiln._tensor import Tensor

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "UninitializedTensorMixin",
           "is_lazy"]


class Parameter(Tensor):
    """A Tensor subclass whose ``requires_grad`` defaults to True, sharing
    memory with the tensor it was made from (like ``torch.nn.Parameter``)."""

    def __new__(cls, data=None, requires_grad: bool = True):
        if data is None:
            data = _C._functions.empty(0)
        return _C._make_subclass(cls, data, requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.detach()._deep_copy_values(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.detach(), self.requires_grad))


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


class _BufferMeta(type):
    """``isinstance(x, Buffer)``: a Tensor carrying Buffer's ``_is_buffer`` mark."""

    def __instancecheck__(cls, instance) -> bool:
        if cls is Buffer:
            return isinstance(instance, _C.TensorBase) and getattr(instance, "_is_buffer", False) is True
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """A tensor that a Module registers as a buffer when assigned as an attribute.

    ``Buffer(data, persistent=False)`` returns ``data`` detached (keeping its
    ``requires_grad``), a plain kiln.Tensor, with ``persistent`` recorded for the
    registration, as torch.nn.Buffer does.
    """

    def __new__(cls, data=None, *, persistent: bool = True):
        if data is None:
            data = _C._functions.empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


def _uninitialized_error(name: str):
    def blocked(self, *args, **kwargs):
        raise ValueError(
            f"Attempted to use an uninitialized parameter in <method '{name}' of 'kiln.Tensor' objects>. This error "
            "happens when you are using a `LazyModule` or explicitly manipulating "
            "`kiln.nn.parameter.UninitializedParameter` objects. When using LazyModules Call `forward` with a dummy "
            "batch to initialize the parameters before calling kiln functions")

    blocked.__name__ = name
    return blocked


# What stays usable on an uninitialized tensor (torch's list, plus kiln's spellings
# of the dtype moves); everything else public, and the operators, raise.
_ALLOWED = {"size", "copy_", "is_complex", "is_floating_point", "half", "float", "double", "char", "short", "int",
            "long", "bfloat16", "cuda", "cpu", "to", "get_device", "type", "materialize", "register_hook",
            "requires_grad", "dtype", "device", "grad", "grad_fn", "is_leaf", "ndim", "T", "data", "names", "layout",
            "is_cuda", "is_cpu", "is_sparse", "is_quantized", "is_meta", "is_mkldnn", "is_nested", "output_nr",
            "retains_grad", "itemsize", "nbytes", "mT", "mH", "H", "real", "imag", "shape"}
_OPERATORS = ["__abs__", "__add__", "__and__", "__array__", "__bool__", "__contains__", "__eq__", "__float__",
              "__floordiv__", "__ge__", "__getitem__", "__gt__", "__iadd__", "__iand__", "__idiv__", "__ifloordiv__",
              "__ilshift__", "__imod__", "__imul__", "__index__", "__int__", "__invert__", "__ior__", "__ipow__",
              "__irshift__", "__isub__", "__iter__", "__itruediv__", "__ixor__", "__le__", "__len__", "__lshift__",
              "__lt__", "__matmul__", "__mod__", "__mul__", "__ne__", "__neg__", "__or__", "__pos__", "__pow__",
              "__radd__", "__rand__", "__rfloordiv__", "__rlshift__", "__rmatmul__", "__rmod__", "__rmul__",
              "__ror__", "__rpow__", "__rrshift__", "__rshift__", "__rsub__", "__rtruediv__", "__rxor__",
              "__setitem__", "__sub__", "__truediv__", "__xor__", "__complex__", "__reversed__"]


class UninitializedTensorMixin:
    """The shared behaviour of UninitializedParameter and UninitializedBuffer."""

    cls_to_become: type = Tensor

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Gives the tensor ``shape`` (uninitialized values) and turns it into ``cls_to_become``, in place."""
        if device is not None and str(device).split(":")[0] != "cpu":
            raise NotImplementedError(f"materialize: device '{device}' is not supported yet")
        if dtype is not None and dtype != self.dtype:
            raise NotImplementedError(
                f"materialize: kiln cannot change an uninitialized tensor's dtype in place ({self.dtype} to {dtype}); "
                "create it with dtype= instead")
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)
        try:
            _C.TensorBase.resize_(self, shape)
        finally:
            _C._set_grad_enabled(prev)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually happens in "
            "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call "
            "`forward` to initialize the parameters before accessing their attributes.")

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__}>"

    __str__ = __repr__

    def __hash__(self) -> int:
        return id(self)

    def _same_kind(self, dtype):
        """A fresh placeholder of this class with ``dtype`` (what a dtype move of a lazy module gives)."""
        return _rebuild_uninitialized(type(self), self.requires_grad, dtype, getattr(self, "persistent", True))

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = self._same_kind(self.dtype)
        return memo[id(self)]

    def __reduce_ex__(self, protocol):
        return (_rebuild_uninitialized, (type(self), self.requires_grad, self.dtype,
                                         getattr(self, "persistent", True)))


def _install_blocks(cls) -> None:
    names = [n for n in dir(Tensor) if not n.startswith("_") and n not in _ALLOWED] + _OPERATORS
    for name in names:
        if name in cls.__dict__ or not callable(getattr(Tensor, name, None)):
            continue
        setattr(cls, name, _uninitialized_error(name))


_install_blocks(UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter of unknown shape; ``materialize(shape)`` turns it into a kiln.nn.Parameter."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        return _C._make_subclass(cls, _empty(device, dtype), requires_grad)


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer of unknown shape; ``materialize(shape)`` turns it into a kiln.Tensor."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True):
        t = _C._make_subclass(cls, _empty(device, dtype), requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


def _empty(device, dtype):
    if device is not None and str(device).split(":")[0] != "cpu":
        raise NotImplementedError(f"kiln uninitialized tensors: device '{device}' is not supported yet")
    return _C._functions.empty(0) if dtype is None else _C._functions.empty(0, dtype=dtype)


def _rebuild_uninitialized(cls, requires_grad, dtype, persistent=True):
    if cls is UninitializedBuffer or issubclass(cls, UninitializedBuffer):
        return cls(requires_grad, None, dtype, persistent)
    return cls(requires_grad, None, dtype)


def is_lazy(param) -> bool:
    """True for an UninitializedParameter / UninitializedBuffer (not yet materialized)."""
    return isinstance(param, UninitializedTensorMixin)
