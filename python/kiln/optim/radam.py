"""RAdam (rectified Adam): torch's signature (decoupled_weight_decay), checks,
state keys (step, exp_avg, exp_avg_sq) and single-tensor update: the
variance-rectified step once rho_t > 5, plain bias-corrected momentum before."""

from __future__ import annotations

from kiln import _C
from kiln.optim._common import (SingleTensorOptimizer, check_capturable, check_lr, num, real, scalar_zeros,
                                to_scalar)
from kiln.optim.adamax import check_betas
from kiln.optim.optimizer import Optimizer
from kiln.optim.rmsprop import _sqrt

__all__ = ["RAdam"]


class RAdam(SingleTensorOptimizer, Optimizer):
    _late_options = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False,
                     "decoupled_weight_decay": False}

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False) -> None:
        check_lr(lr)
        check_betas(eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _group_step(self, group: dict, params: list) -> None:
        for p in params:
            state = self.state[p]
            if len(state) == 0:
                state["step"] = scalar_zeros()
                state["exp_avg"] = _C._functions.zeros_like(p)
                state["exp_avg_sq"] = _C._functions.zeros_like(p)
        if group["capturable"]:
            check_capturable(params)
        lr, eps, wd = to_scalar(group["lr"]), group["eps"], group["weight_decay"]
        beta1, beta2 = group["betas"]
        rho_inf = 2 / (1 - beta2) - 1
        for p in params:
            state = self.state[p]
            grad = p.grad.neg() if group["maximize"] else p.grad
            param, grad, exp_avg, exp_avg_sq = real(p), real(grad), real(state["exp_avg"]), real(state["exp_avg_sq"])
            state["step"].add_(1.0)
            step = state["step"].item()
            if wd != 0:
                if group["decoupled_weight_decay"]:
                    param.mul_(num(1 - lr * wd))
                else:
                    grad = grad.add(param, alpha=wd)
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            bias_correction1 = 1 - beta1 ** step
            bias_correction2 = 1 - beta2 ** step
            corrected = exp_avg / bias_correction1
            rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
            if rho_t > 5.0:
                rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                # torch's float / tensor is tensor.reciprocal() * float; the same rounding here.
                adaptive = _sqrt(exp_avg_sq).add_(eps).reciprocal().mul(bias_correction2 ** 0.5)
                param.add_(corrected * num(lr) * adaptive * rect, alpha=-1.0)
            else:
                param.add_(corrected * num(lr), alpha=-1.0)
