"""SparseAdam: torch's signature and checks. torch's SparseAdam only takes
sparse gradients and raises for dense ones; kiln has no sparse tensors, so
every ``step`` that meets a gradient raises torch's RuntimeError
("SparseAdam does not support dense gradients, please consider Adam
instead"). A step where no parameter has a gradient is a no-op, as in torch."""

from __future__ import annotations

from typing import Callable

from kiln.autograd import grad_mode
from kiln.optim._common import check_lr
from kiln.optim.optimizer import Optimizer

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False) -> None:
        check_lr(lr, strict=True)
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        complex_params = [[i, j] for i, group in enumerate(self.param_groups)
                          for j, p in enumerate(group["params"]) if p.is_complex()]
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not support complex "
                             "parameters")

    def step(self, closure: Callable | None = None):
        loss = None
        if closure is not None:
            with grad_mode.set_grad_enabled(True):
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
        return loss
