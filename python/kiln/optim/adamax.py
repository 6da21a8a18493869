"""Adamax (Adam with the infinity norm): torch's signature, checks, state
keys (step, exp_avg, exp_inf) and single-tensor update."""

from __future__ import annotations

from kiln import _C
from kiln.optim._common import (SingleTensorOptimizer, check_capturable, check_lr, num, real, scalar_zeros,
                                to_scalar)
from kiln.optim.optimizer import Optimizer

__all__ = ["Adamax"]


def check_betas(eps, betas, weight_decay) -> None:
    """The eps / betas / weight_decay checks the Adam family shares (torch's messages)."""
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


class Adamax(SingleTensorOptimizer, Optimizer):
    _late_options = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}

    def __init__(self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_lr(lr)
        check_betas(eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _group_step(self, group: dict, params: list) -> None:
        for p in params:
            state = self.state[p]
            if len(state) == 0:
                state["step"] = scalar_zeros()
                state["exp_avg"] = _C._functions.zeros_like(p)
                state["exp_inf"] = _C._functions.zeros_like(p)
        if group["capturable"]:
            check_capturable(params)
        lr, eps = to_scalar(group["lr"]), group["eps"]
        beta1, beta2 = group["betas"]
        for p in params:
            state = self.state[p]
            grad = p.grad.neg() if group["maximize"] else p.grad
            state["step"].add_(1.0)
            if group["weight_decay"] != 0:
                grad = grad.add(p, alpha=group["weight_decay"])
            param, grad, exp_avg, exp_inf = real(p), real(grad), real(state["exp_avg"]), real(state["exp_inf"])
            exp_avg.lerp_(grad, 1 - beta1)
            _C._functions.maximum(exp_inf.mul_(beta2), grad.abs().add_(eps), out=exp_inf)
            clr = lr / (1 - beta1 ** state["step"].item())
            param.addcdiv_(exp_avg, exp_inf, value=-num(clr))
