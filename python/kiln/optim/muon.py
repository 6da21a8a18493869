"""Muon (momentum orthogonalized by Newton-Schulz) for 2-D parameters:
torch's signature, checks, state key (momentum_buffer) and update. The
Newton-Schulz iteration runs in bfloat16 as in torch, so values agree with
torch's to bfloat16 precision (the rounding inside kiln's and torch's
bfloat16 matrix products may differ by an ulp)."""

from __future__ import annotations

import math
from typing import Callable

from kiln import _C
from kiln.autograd import grad_mode
from kiln.optim._common import num, to_scalar
from kiln.optim.optimizer import Optimizer

__all__ = ["Muon"]

_NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)


def _orthogonalize(grad, ns_coefficients, ns_steps: int, eps: float):
    """The quintic Newton-Schulz iteration toward the orthogonal factor of grad (in bfloat16)."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    tall = grad.size(0) > grad.size(1)
    x = grad.bfloat16()
    if tall:
        x = x.T
    x.div_(x.norm().clamp(min=eps))
    for _ in range(ns_steps):
        gram = x @ x.T
        poly = _C._functions.addmm(gram, gram, gram, beta=b, alpha=c)
        x = _C._functions.addmm(x, poly, x, beta=a)
    return x.T if tall else x


def _adjusted_lr(lr: float, adjust_lr_fn: str | None, shape) -> float:
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * (0.2 * math.sqrt(max(rows, cols)))
    return lr * 1.0


class Muon(Optimizer):
    def __init__(self, params, lr: float = 1e-3, weight_decay: float = 0.1, momentum: float = 0.95,
                 nesterov: bool = True, ns_coefficients: tuple[float, float, float] = _NS_COEFFICIENTS,
                 eps: float = 1e-7, ns_steps: int = 5, adjust_lr_fn: str | None = None) -> None:
        if isinstance(lr, _C.TensorBase) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a parameter with size: "
                                     f"{p.size()}")

    def step(self, closure: Callable | None = None):
        loss = None
        if closure is not None:
            with grad_mode.set_grad_enabled(True):
                loss = closure()
        with grad_mode.set_grad_enabled(False):
            for group in self.param_groups:
                params = [p for p in group["params"] if p.grad is not None]
                for p in params:
                    if p.is_complex():
                        raise RuntimeError("Muon does not support complex parameters")
                    if "momentum_buffer" not in self.state[p]:
                        self.state[p]["momentum_buffer"] = _C._functions.zeros_like(p.grad)
                self._update(group, params)
        return loss

    def _update(self, group: dict, params: list) -> None:
        lr, momentum = to_scalar(group["lr"]), group["momentum"]
        for p in params:
            grad = p.grad
            if grad.ndim != 2:
                raise ValueError("Param gradient must be a 2D matrix")
            buf = self.state[p]["momentum_buffer"]
            buf.lerp_(grad, 1 - momentum)
            update = grad.lerp(buf, momentum) if group["nesterov"] else buf
            update = _orthogonalize(update, group["ns_coefficients"], group["ns_steps"], group["eps"])
            p.mul_(num(1 - lr * group["weight_decay"]))
            p.add_(update, alpha=num(-_adjusted_lr(lr, group["adjust_lr_fn"], p.shape)))

