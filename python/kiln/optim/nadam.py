"""NAdam (Adam with Nesterov momentum): torch's signature (momentum_decay,
decoupled_weight_decay), checks, state keys (step, mu_product, exp_avg,
exp_avg_sq) and single-tensor update. ``mu_product`` is a scalar float32
tensor as in torch, so its rounding matches."""

from __future__ import annotations

from kiln import _C
from kiln.optim._common import (SingleTensorOptimizer, check_capturable, check_lr, num, real, scalar_full,
                                scalar_zeros, to_scalar)
from kiln.optim.adamax import check_betas
from kiln.optim.optimizer import Optimizer
from kiln.optim.rmsprop import _sqrt

__all__ = ["NAdam"]


class NAdam(SingleTensorOptimizer, Optimizer):
    _late_options = {"maximize": False, "foreach": None, "capturable": False, "differentiable": False,
                     "decoupled_weight_decay": False}
    _scalar_state_keys = ("step", "mu_product")

    def __init__(self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_lr(lr)
        check_betas(eps, betas, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _group_step(self, group: dict, params: list) -> None:
        for p in params:
            state = self.state[p]
            if len(state) == 0:
                state["step"] = scalar_zeros()
                state["mu_product"] = scalar_full(1.0)
                state["exp_avg"] = _C._functions.zeros_like(p)
                state["exp_avg_sq"] = _C._functions.zeros_like(p)
        if group["capturable"]:
            check_capturable(params, "params, mu_products and state_steps")
        lr, eps, wd, psi = to_scalar(group["lr"]), group["eps"], group["weight_decay"], group["momentum_decay"]
        beta1, beta2 = group["betas"]
        for p in params:
            state = self.state[p]
            grad = p.grad.neg() if group["maximize"] else p.grad
            param, grad, exp_avg, exp_avg_sq = real(p), real(grad), real(state["exp_avg"]), real(state["exp_avg_sq"])
            state["step"].add_(1.0)
            step = state["step"].item()
            bias_correction2 = 1 - beta2 ** step
            if wd != 0:
                if group["decoupled_weight_decay"]:
                    param.mul_(num(1 - lr * wd))
                else:
                    grad = grad.add(param, alpha=wd)
            # The momentum schedule mu_t = beta1 * (1 - 0.5 * 0.96^(t * psi)) and its running product.
            mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * psi)))
            mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * psi)))
            mu_product = state["mu_product"]
            mu_product.mul_(mu)
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            denom = _sqrt(exp_avg_sq.div(bias_correction2)).add_(eps)
            product = mu_product.item()
            param.addcdiv_(grad, denom, value=num(-lr * (1.0 - mu) / (1.0 - product)))
            param.addcdiv_(exp_avg, denom, value=num((-lr * mu_next) / (1.0 - product * mu_next)))
