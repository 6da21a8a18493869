"""Grad-mode context managers, usable as decorators, like torch.autograd.grad_mode."""

from __future__ import annotations

import functools

from kiln import _C

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled"]


def is_grad_enabled() -> bool:
    return _C.is_grad_enabled()


class _DecoratorContextManager:
    """A context manager that is also a decorator (a fresh instance per call)."""

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)

        return wrapper

    def clone(self):
        return self.__class__()


class no_grad(_DecoratorContextManager):
    """Disables gradient recording in its scope."""

    def __enter__(self) -> None:
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)

    def __exit__(self, *exc) -> None:
        _C._set_grad_enabled(self.prev)


class enable_grad(_DecoratorContextManager):
    """Enables gradient recording in its scope (inside no_grad)."""

    def __enter__(self) -> None:
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(True)

    def __exit__(self, *exc) -> None:
        _C._set_grad_enabled(self.prev)


class set_grad_enabled(_DecoratorContextManager):
    """Sets grad mode on or off: as a function call, a context manager or a decorator."""

    def __init__(self, mode: bool) -> None:
        self.prev = _C.is_grad_enabled()
        self.mode = mode
        _C._set_grad_enabled(mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        _C._set_grad_enabled(self.prev)

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like no_grad (kiln has no separate inference tensors yet)."""

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode

    def __enter__(self) -> None:
        self.prev = _C.is_grad_enabled()
        if self.mode:
            _C._set_grad_enabled(False)

    def __exit__(self, *exc) -> None:
        _C._set_grad_enabled(self.prev)

    def clone(self):
        return self.__class__(self.mode)
