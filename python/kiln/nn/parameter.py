"""kiln.nn.Parameter: a Tensor that a Module registers as a learnable weight."""

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


# Buffer and the lazy-module placeholders live in kiln/nn/modules/_parameter_types.py
# (this file stays the Parameter class alone); torch's spelling reaches them here.
_MOVED = ("Buffer", "UninitializedParameter", "UninitializedBuffer", "UninitializedTensorMixin", "is_lazy")


def __getattr__(name):
    if name in _MOVED:
        from kiln.nn.modules import _parameter_types

        return getattr(_parameter_types, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_MOVED))
