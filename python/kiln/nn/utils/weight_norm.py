"""torch.nn.utils.weight_norm / remove_weight_norm: the hook-based (deprecated)
weight normalisation, w = g * v / ||v|| with the norm over every dim but ``dim``.

``weight_norm(module)`` replaces the parameter ``weight`` with ``weight_g`` and
``weight_v`` and recomputes ``module.weight`` (a plain tensor attribute) in a
forward pre-hook, as torch. It warns FutureWarning (torch points to
kiln.nn.utils.parametrizations.weight_norm). Loading old state_dicts needs no
hook here: the keys are the parameters' names."""

from __future__ import annotations

import warnings

import kiln
from kiln import _C
from kiln.nn.parameter import Parameter, UninitializedParameter

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


def _norm_except_dim(v, dim: int):
    return kiln.norm_except_dim(v, 2, dim)


def _weight_norm(v, g, dim: int):
    """torch._weight_norm: v * (g / ||v|| over every dim but ``dim``; dim=-1: over all)."""
    return v * (g / _norm_except_dim(v, dim))


class WeightNorm:
    """The forward pre-hook that recomputes ``module.<name>`` from ``<name>_g`` and ``<name>_v``."""

    def __init__(self, name: str, dim: int) -> None:
        if dim is None:
            dim = -1
        self.name = name
        self.dim = dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module, name: str, dim: int) -> "WeightNorm":
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        if dim is None:
            dim = -1
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized parameters. Make sure to "
                             "run the dummy forward before applying weight normalization")
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module) -> None:
        prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)
        try:
            weight = self.compute_weight(module)
        finally:
            _C._set_grad_enabled(prev)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name: str = "weight", dim: int = 0):
    """Applies weight normalisation to ``module.<name>``; returns the module."""
    warnings.warn("`kiln.nn.utils.weight_norm` is deprecated in favor of `kiln.nn.utils.parametrizations.weight_norm`.",
                  FutureWarning, stacklevel=2)
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name: str = "weight"):
    """Undoes weight_norm: ``module.<name>`` is a Parameter again (with the normalised values)."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
