"""torch.autograd.Variable, the pre-0.4 wrapper old training programs still
import: ``Variable(t, requires_grad=...)`` is a tensor (t detached, with that
requires_grad) and every tensor is an instance of Variable, as in torch."""

from __future__ import annotations

from kiln import _C


class _VariableMeta(type):
    def __instancecheck__(cls, instance) -> bool:
        return isinstance(instance, _C.TensorBase)

    def __call__(cls, data, requires_grad: bool = False, volatile: bool = False):
        if not isinstance(data, _C.TensorBase):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        out = data.detach()
        return out.requires_grad_(True) if requires_grad else out


class Variable(metaclass=_VariableMeta):
    """torch.autograd.Variable: calling it gives a tensor; isinstance(t, Variable) holds for every tensor."""


def variable(*args, **kwargs):
    raise RuntimeError("torch.autograd.variable(...) is deprecated, use torch.tensor(...) instead")


class set_multithreading_enabled:
    """torch.autograd.set_multithreading_enabled: kiln's backward runs on the calling thread, so a no-op switch
    (usable as a function or a context manager)."""

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> None:
        return None

    def clone(self) -> "set_multithreading_enabled":
        return set_multithreading_enabled(self.mode)
