"""RMSprop (alpha, eps, weight_decay, momentum, centered, maximize), following
torch's single-tensor update step by step over kiln's in-place ops."""

from __future__ import annotations

from typing import Callable

from kiln import _C
from kiln.optim.optimizer import Optimizer

__all__ = ["RMSprop"]


def _sqrt(t):
    """sqrt where kiln has it; pow(0.5) otherwise (the same value to within an ulp)."""
    return t.sqrt() if hasattr(t, "sqrt") else t.pow(0.5)


class RMSprop(Optimizer):
    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0,
                 momentum: float = 0, centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        if differentiable:
            raise NotImplementedError("RMSprop(differentiable=True) is not supported yet")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure: Callable | None = None):
        return self._step_each_parameter(closure)

    def _update(self, group: dict, param) -> None:
        state = self.state[param]
        if len(state) == 0:
            state["step"] = _C._functions.zeros((), dtype=_C.float32)
            state["square_avg"] = _C._functions.zeros_like(param)
            if group["momentum"] > 0:
                state["momentum_buffer"] = _C._functions.zeros_like(param)
            if group["centered"]:
                state["grad_avg"] = _C._functions.zeros_like(param)
        grad = param.grad * -1.0 if group["maximize"] else param.grad  # exactly -grad
        state["step"].add_(1.0)
        alpha, eps, lr = group["alpha"], group["eps"], group["lr"]
        if group["weight_decay"] != 0:
            grad = grad.add(param, alpha=group["weight_decay"])
        square_avg = state["square_avg"]
        square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        if group["centered"]:
            grad_avg = state["grad_avg"]
            grad_avg.lerp_(grad, 1 - alpha)
            avg = _sqrt(square_avg.addcmul(grad_avg, grad_avg, value=-1))
        else:
            avg = _sqrt(square_avg)
        avg = avg.add_(eps)
        if group["momentum"] > 0:
            buf = state["momentum_buffer"]
            buf.mul_(group["momentum"]).addcdiv_(grad, avg)
            param.add_(buf, alpha=-lr)
        else:
            param.addcdiv_(grad, avg, value=-lr)
