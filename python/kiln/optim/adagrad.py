"""Adagrad (lr_decay, weight_decay, initial_accumulator_value, eps, maximize),
following torch's single-tensor update over kiln's in-place ops. As torch, the
state (step and sum) is created for every parameter when the optimizer is built."""

from __future__ import annotations

from typing import Callable

from kiln import _C
from kiln.optim.optimizer import Optimizer
from kiln.optim.rmsprop import _sqrt

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False, fused: bool | None = None) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if differentiable:
            raise NotImplementedError("Adagrad(differentiable=True) is not supported yet")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = _C._functions.zeros((), dtype=_C.float32)
                state["sum"] = _C._functions.full_like(p, float(group["initial_accumulator_value"]))

    def step(self, closure: Callable | None = None):
        return self._step_each_parameter(closure)

    def _update(self, group: dict, param) -> None:
        state = self.state[param]
        grad = param.grad * -1.0 if group["maximize"] else param.grad  # exactly -grad
        state["step"].add_(1.0)
        step = float(state["step"].item())
        if group["weight_decay"] != 0:
            grad = grad.add(param, alpha=group["weight_decay"])
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        state["sum"].addcmul_(grad, grad, value=1)
        std = _sqrt(state["sum"]).add_(group["eps"])
        param.addcdiv_(grad, std, value=-clr)
