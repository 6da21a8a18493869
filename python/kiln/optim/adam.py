"""Adam and AdamW: the update of a whole parameter group runs in C++ in one
call (kiln._C._functions._fused_adam_), the foreach path the seed describes."""

from __future__ import annotations

from typing import Callable

from kiln import _C
from kiln.autograd import grad_mode
from kiln.optim import _capturable
from kiln.optim.optimizer import Optimizer

__all__ = ["Adam", "AdamW"]


def _check(lr, eps, betas, weight_decay):
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


class Adam(Optimizer):
    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        _check(lr, eps, betas, weight_decay)
        if differentiable:
            raise NotImplementedError("Adam(differentiable=True) is not supported yet")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("decoupled_weight_decay", False)

    def step(self, closure: Callable | None = None):
        loss = None
        if closure is not None:
            with grad_mode.enable_grad():
                loss = closure()
        with grad_mode.no_grad():
            for group in self.param_groups:
                params = [p for p in group["params"] if p.grad is not None]
                if not params:
                    continue
                for p in params:
                    st = self.state[p]
                    if len(st) == 0:
                        st["step"] = _C._functions.zeros((), dtype=_C.float32)
                        st["exp_avg"] = _C._functions.zeros(tuple(p.shape), dtype=p.dtype)
                        st["exp_avg_sq"] = _C._functions.zeros(tuple(p.shape), dtype=p.dtype)
                        if group["amsgrad"]:
                            st["max_exp_avg_sq"] = _C._functions.zeros(tuple(p.shape), dtype=p.dtype)
                    st["step"].add_(_C._functions.ones((), dtype=_C.float32))
                # Every parameter of a group shares its step count (they are created and stepped together).
                step = int(self.state[params[0]]["step"].item())
                beta1, beta2 = group["betas"]
                _C._functions._fused_adam_(
                    params,
                    [p.grad for p in params],
                    [self.state[p]["exp_avg"] for p in params],
                    [self.state[p]["exp_avg_sq"] for p in params],
                    [self.state[p]["max_exp_avg_sq"] for p in params] if group["amsgrad"] else [],
                    lr=float(group["lr"]), beta1=float(beta1), beta2=float(beta2),
                    weight_decay=float(group["weight_decay"]), eps=float(group["eps"]), amsgrad=group["amsgrad"],
                    maximize=group["maximize"], step=step,
                    decoupled_weight_decay=bool(group.get("decoupled_weight_decay", False)),
                )
        return loss


# Inside a training step kiln.compile captures, step() runs this instead (Note [Captured optimizer steps]).
_capturable.register_update(Adam.step, _capturable.adam_update)


class AdamW(Adam):
    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         foreach=foreach, maximize=maximize, capturable=capturable, differentiable=differentiable,
                         fused=fused, decoupled_weight_decay=True)
