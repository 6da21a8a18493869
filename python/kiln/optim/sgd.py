"""SGD with momentum, dampening, Nesterov, weight decay and maximize; the
group's update runs in C++ in one call (kiln._C._functions._fused_sgd_)."""

from __future__ import annotations

from kiln import _C
from kiln.autograd import grad_mode
from kiln.optim import _capturable
from kiln.optim.optimizer import Optimizer, required

__all__ = ["SGD"]


class SGD(Optimizer):
    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False, fused: bool | None = None) -> None:
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                        maximize=maximize, foreach=foreach, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with grad_mode.enable_grad():
                loss = closure()
        with grad_mode.no_grad():
            for group in self.param_groups:
                params = [p for p in group["params"] if p.grad is not None]
                if not params:
                    continue
                if group["momentum"] == 0:
                    self._update(group, params, [], first=False)
                    continue
                # A parameter's first step starts its momentum buffer at the gradient itself.
                fresh = [p for p in params if "momentum_buffer" not in self.state[p]]
                seasoned = [p for p in params if "momentum_buffer" in self.state[p]]
                for p in fresh:
                    self.state[p]["momentum_buffer"] = _C._functions.zeros(tuple(p.shape), dtype=p.dtype)
                for batch, first in ((fresh, True), (seasoned, False)):
                    if batch:
                        self._update(group, batch, [self.state[p]["momentum_buffer"] for p in batch], first)
        return loss

    @staticmethod
    def _update(group, params, buffers, first: bool) -> None:
        _C._functions._fused_sgd_(
            params, [p.grad for p in params], buffers, lr=float(group["lr"]), momentum=float(group["momentum"]),
            dampening=float(group["dampening"]), weight_decay=float(group["weight_decay"]),
            nesterov=group["nesterov"], maximize=group["maximize"], is_first_step=first,
        )


# Inside a training step kiln.compile captures, step() runs this instead (Note [Captured optimizer steps]).
_capturable.register_update(SGD.step, _capturable.sgd_update)
