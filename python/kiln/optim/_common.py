"""Shared pieces of the single-tensor optimizers (ASGD, Adadelta, Adamax,
NAdam, RAdam, Rprop, Adafactor, Muon, SparseAdam): argument checks with
torch's messages, scalar state tensors, the grad mode of ``step`` and the
``capturable=True`` device check.

Every optimizer here follows torch's single-tensor (``foreach=False``) code
path, the one torch itself takes for CPU tensors; ``foreach=True`` is accepted
and runs the same per-tensor arithmetic (torch's multi-tensor kernels give the
same values up to rounding). Complex parameters are updated through their
real views, as in torch."""

from __future__ import annotations

from typing import Callable

from kiln import _C
from kiln.autograd import grad_mode

__all__ = ["scalar_dtype", "scalar_zeros", "scalar_full", "assign_scalar", "to_scalar", "num", "real", "check_lr",
           "check_capturable", "CAPTURABLE_DEVICES", "CAPTURABLE_DEVICES_NO_XLA", "SingleTensorOptimizer"]

# The device lists torch prints when capturable=True meets a CPU tensor.
CAPTURABLE_DEVICES = ["cuda", "xpu", "hpu", "privateuseone", "xla"]
CAPTURABLE_DEVICES_NO_XLA = ["cuda", "xpu", "hpu", "privateuseone"]


def scalar_dtype():
    """torch's ``_get_scalar_dtype``: float64 when that is the default dtype, else float32."""
    return _C.float64 if _C.get_default_dtype() == _C.float64 else _C.float32


def scalar_zeros():
    return _C._functions.zeros((), dtype=scalar_dtype())


def scalar_full(value: float):
    out = _C._functions.zeros((), dtype=scalar_dtype())
    out.fill_(float(value))
    return out


def assign_scalar(dst, value) -> None:
    """``dst.copy_(torch.as_tensor(value))``: a number is first rounded to the
    default dtype, whatever dst's dtype (it is float64 after a load_state_dict
    onto float64 parameters); a tensor (from a tensor lr) is copied as is."""
    if not isinstance(value, _C.TensorBase):
        value = _C._functions.full((), float(value), dtype=_C.get_default_dtype())
    dst.copy_(value)


def real(t):
    """A complex tensor as its real view (..., 2), as torch's optimizers treat complex
    parameters: real and imaginary parts as independent numbers. Real tensors pass through."""
    return _C._functions.view_as_real(t) if t.is_complex() else t


def to_scalar(value):
    """torch's ``_to_scalar``: a one-element tensor hyperparameter (a tensor lr)
    as a 0-dim tensor, numbers as they are. A tensor lr thus keeps torch's
    arithmetic in its dtype (float32) where torch computes with it."""
    if isinstance(value, _C.TensorBase) and value.dim() != 0:
        return value.squeeze()
    return value


def num(value) -> float:
    """A number for ``alpha=`` / ``value=`` arguments (torch reads a 0-dim tensor's value)."""
    return value.item() if isinstance(value, _C.TensorBase) else value


def check_lr(lr, message: str = "Invalid learning rate: {}", strict: bool = False) -> None:
    if isinstance(lr, _C.TensorBase) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    bad = not (0.0 < lr) if strict else not (0.0 <= lr)
    if bad:
        raise ValueError(message.format(lr))


def check_capturable(params, what: str = "params and state_steps", devices=CAPTURABLE_DEVICES) -> None:
    """capturable=True needs accelerator tensors; torch raises AssertionError for CPU ones."""
    if not all(p.device.type in devices for p in params):
        raise AssertionError(f"If capturable=True, {what} must be on supported devices: {devices}.")


class SingleTensorOptimizer:
    """Mixin: ``step`` runs the closure with grad enabled, then each group's
    ``_group_step(group, params)`` (params: those with a gradient) with grad
    mode set to ``defaults['differentiable']``, as torch's
    ``_use_grad_for_differentiable`` does. With differentiable=True the
    in-place update of a leaf that requires grad raises, as in torch."""

    def step(self, closure: Callable | None = None):
        loss = None
        if closure is not None:
            with grad_mode.set_grad_enabled(True):
                loss = closure()
        with grad_mode.set_grad_enabled(self.defaults.get("differentiable", False)):
            for group in self.param_groups:
                params = [p for p in group["params"] if p.grad is not None]
                self._group_step(group, params)
        return loss

    def _group_step(self, group: dict, params: list) -> None:
        raise NotImplementedError

    # Group options an older pickled optimizer may lack, filled in on load (as torch does).
    _late_options: dict = {}
    # Per-parameter scalar state that torch turns back into tensors when loaded as numbers.
    _scalar_state_keys: tuple = ("step",)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            for key, value in self._late_options.items():
                group.setdefault(key, value)
            for p in group["params"]:
                p_state = self.state.get(p, {})
                for key in self._scalar_state_keys:
                    if key in p_state and not isinstance(p_state[key], _C.TensorBase):
                        p_state[key] = scalar_full(float(p_state[key]))
