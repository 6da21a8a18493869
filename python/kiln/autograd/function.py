"""kiln.autograd.Function: custom operations with a Python backward, like
torch.autograd.Function (static forward and backward, a ctx object)."""

from __future__ import annotations

import functools
from typing import Any

from kiln import _C

__all__ = ["Function", "FunctionCtx", "once_differentiable"]

_FREED = object()


class FunctionCtx:
    """The ``ctx`` handed to forward and backward."""

    def __init__(self) -> None:
        self._saved: Any = ()
        self._saved_versions: tuple = ()
        self._non_differentiable: set[int] = set()
        self._dirty: tuple = ()
        self.materialize_grads = True
        self.needs_input_grad: tuple[bool, ...] = ()

    def save_for_backward(self, *tensors) -> None:
        self._saved = tensors
        self._saved_versions = tuple(t._version if t is not None else None for t in tensors)

    @property
    def saved_tensors(self) -> tuple:
        if self._saved is _FREED:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved tensors after they "
                "have already been freed). Saved intermediate values of the graph are freed when you call "
                ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph "
                "a second time or if you need to access saved tensors after calling backward."
            )
        for t, v in zip(self._saved, self._saved_versions):
            if t is not None and t._version != v:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an inplace operation: "
                    f"[kiln.{_legacy_name(t)} [{', '.join(str(s) for s in t.shape)}]] is at version {t._version}; "
                    f"expected version {v} instead."
                )
        return self._saved

    def mark_non_differentiable(self, *outputs) -> None:
        self._non_differentiable |= {id(o) for o in outputs}

    def mark_dirty(self, *tensors) -> None:
        self._dirty = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = value

    def _release(self) -> None:
        self._saved = _FREED


def _legacy_name(t) -> str:
    names = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
             "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor"}
    return names.get(str(t.dtype).removeprefix("kiln."), "Tensor")


class Function:
    """Subclass with ``@staticmethod forward(ctx, *args)`` and
    ``@staticmethod backward(ctx, *grad_outputs)``; call with ``.apply(*args)``."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        tensor_args = [a if isinstance(a, _C.TensorBase) else None for a in args]
        ctx.needs_input_grad = tuple(a is not None and a.requires_grad for a in tensor_args)
        with _no_grad():
            outputs = cls.forward(ctx, *args, **kwargs)
        if not (_C.is_grad_enabled() and any(ctx.needs_input_grad)):
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs

        def backward(*grads):
            if ctx.materialize_grads:
                grads = tuple(
                    g if g is not None else _C._functions.zeros(o.shape, dtype=o.dtype)
                    for g, o in zip(grads, [o for o in outs if isinstance(o, _C.TensorBase)])
                )
            result = cls.backward(ctx, *grads)
            return result if isinstance(result, tuple) else (result,)

        node = _C._make_function_node(cls.__name__ + "Backward", backward, ctx._release, tensor_args)
        for o in outs:
            if (isinstance(o, _C.TensorBase) and id(o) not in ctx._non_differentiable
                    and (o.dtype.is_floating_point or o.dtype.is_complex)):
                _C._set_history(o, node)
        return outputs


class _no_grad:
    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)


def once_differentiable(fn):
    """Runs a backward without recording it (its result is not differentiable again)."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with _no_grad():
            return fn(ctx, *args)

    return wrapper
