"""ASGD (averaged SGD): torch's signature, checks, state keys (step, eta, mu,
ax) and single-tensor update. As in torch, ``eta`` and ``mu`` live in scalar
float32 tensors (float64 under a float64 default dtype), so the rounding of
the step size matches torch's step for step."""

from __future__ import annotations

from kiln import _C
from kiln.optim._common import (CAPTURABLE_DEVICES, SingleTensorOptimizer, assign_scalar, check_capturable, check_lr,
                                real, scalar_full, scalar_zeros, to_scalar)
from kiln.optim.optimizer import Optimizer

__all__ = ["ASGD"]


class ASGD(SingleTensorOptimizer, Optimizer):
    _late_options = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}
    _scalar_state_keys = ("step", "eta", "mu")

    def __init__(self, params, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75, t0: float = 1e6,
                 weight_decay: float = 0, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_lr(lr)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _group_step(self, group: dict, params: list) -> None:
        for p in params:
            state = self.state[p]
            if len(state) == 0:
                state["step"] = scalar_zeros()
                state["eta"] = scalar_full(to_scalar(group["lr"]))
                state["mu"] = scalar_full(1.0)
                state["ax"] = _C._functions.zeros_like(p)
        if group["capturable"]:
            check_capturable(params, "params, mus, etas, and state_steps", CAPTURABLE_DEVICES)
        lr, lambd, alpha, t0 = to_scalar(group["lr"]), group["lambd"], group["alpha"], group["t0"]
        for p in params:
            state = self.state[p]
            grad = p.grad.neg() if group["maximize"] else p.grad
            param, grad, ax = real(p), real(grad), real(state["ax"])
            state["step"].add_(1.0)
            if group["weight_decay"] != 0:
                grad = grad.add(param, alpha=group["weight_decay"])
            eta = state["eta"].item()
            param.mul_(1 - lambd * eta)  # decay toward zero
            param.add_(grad, alpha=-eta)
            mu = state["mu"]
            if mu.item() != 1:
                ax.add_(param.sub(ax).mul_(mu))  # running average of the iterates
            else:
                ax.copy_(param)
            step = state["step"].item()
            assign_scalar(state["eta"], lr / ((1 + lambd * lr * step) ** alpha))
            assign_scalar(state["mu"], 1 / max(1, step - t0))
