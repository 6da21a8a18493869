"""Adadelta: torch's signature, checks, state keys (step, square_avg,
acc_delta) and single-tensor update."""

from __future__ import annotations

from kiln import _C
from kiln.optim._common import (CAPTURABLE_DEVICES_NO_XLA, SingleTensorOptimizer, check_capturable, check_lr,
                                num, real, scalar_zeros, to_scalar)
from kiln.optim.optimizer import Optimizer
from kiln.optim.rmsprop import _sqrt

__all__ = ["Adadelta"]


class Adadelta(SingleTensorOptimizer, Optimizer):
    _late_options = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0,
                 foreach: bool | None = None, *, capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
                        foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _group_step(self, group: dict, params: list) -> None:
        for p in params:
            state = self.state[p]
            if len(state) == 0:
                state["step"] = scalar_zeros()
                state["square_avg"] = _C._functions.zeros_like(p)
                state["acc_delta"] = _C._functions.zeros_like(p)
        if group["capturable"] and params:
            check_capturable(params, "params and state_steps", CAPTURABLE_DEVICES_NO_XLA)
        lr, rho, eps = to_scalar(group["lr"]), group["rho"], group["eps"]
        for p in params:
            state = self.state[p]
            state["step"].add_(1.0)
            grad = p.grad.neg() if group["maximize"] else p.grad
            if group["weight_decay"] != 0:
                grad = grad.add(p, alpha=group["weight_decay"])
            square_avg, acc_delta, grad = real(state["square_avg"]), real(state["acc_delta"]), real(grad)
            square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
            std = _sqrt(square_avg.add(eps))
            delta = _sqrt(acc_delta.add(eps)).div_(std).mul_(grad)
            acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
            real(p).add_(delta, alpha=-num(lr))
