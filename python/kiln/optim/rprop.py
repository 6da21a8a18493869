"""Rprop (resilient backpropagation): torch's signature, checks, state keys
(step, prev, step_size) and single-tensor update: per-element step sizes grow
by etaplus while the gradient keeps its sign and shrink by etaminus when it
flips (that element then skips its update)."""

from __future__ import annotations

from kiln import _C
from kiln.optim._common import (SingleTensorOptimizer, check_capturable, check_lr, num, real, scalar_zeros,
                                to_scalar)
from kiln.optim.optimizer import Optimizer

__all__ = ["Rprop"]


class Rprop(SingleTensorOptimizer, Optimizer):
    _late_options = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}

    def __init__(self, params, lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _group_step(self, group: dict, params: list) -> None:
        for p in params:
            state = self.state[p]
            if len(state) == 0:
                state["step"] = scalar_zeros()
                state["prev"] = _C._functions.zeros_like(p)
                # A complex parameter's real and imaginary parts each start at lr.
                state["step_size"] = _C._functions.zeros_like(p.grad)
                real(state["step_size"]).fill_(num(to_scalar(group["lr"])))
        if group["capturable"]:
            check_capturable(params)
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        for p in params:
            state = self.state[p]
            grad = p.grad.neg() if group["maximize"] else p.grad
            state["step"].add_(1.0)
            param, grad, prev, step_size = real(p), real(grad), real(state["prev"]), real(state["step_size"])
            sign = grad.mul(prev).sign()
            # Same sign: grow; flipped: shrink; either is zero: keep (factor 1). Filled in
            # this order, in the gradient's dtype, as torch's masked assignments are.
            sign.masked_fill_(sign.gt(0), etaplus)
            sign.masked_fill_(sign.lt(0), etaminus)
            sign.masked_fill_(sign.eq(0), 1)
            step_size.mul_(sign).clamp_(step_size_min, step_size_max)
            grad = grad.clone().masked_fill_(sign.eq(etaminus), 0)
            param.addcmul_(grad.sign(), step_size, value=-1)
            prev.copy_(grad)
