"""Adafactor: torch's signature (lr, beta2_decay, eps=(eps1, eps2), d,
weight_decay, foreach, maximize), checks, state keys (step plus row_var /
col_var for matrices, variance for vectors) and single-tensor update: the
second moment of a matrix gradient is kept as row and column factors, the
step is relative to the parameter's RMS and clipped at d."""

from __future__ import annotations

from kiln import _C
from kiln._dtypes import finfo
from kiln.optim._common import SingleTensorOptimizer, num, scalar_zeros, to_scalar
from kiln.optim.optimizer import Optimizer

__all__ = ["Adafactor"]


class Adafactor(SingleTensorOptimizer, Optimizer):
    _late_options = {"foreach": None}

    def __init__(self, params, lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0, weight_decay: float = 0.0, *,
                 foreach: bool | None = None, maximize: bool = False) -> None:
        if isinstance(lr, _C.TensorBase) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults)

    def _group_step(self, group: dict, params: list) -> None:
        for p in params:
            if p.is_complex():
                raise RuntimeError("Adafactor does not support complex parameters")
            state = self.state[p]
            if len(state) == 0:
                state["step"] = scalar_zeros()
                if p.grad.dim() > 1:
                    row_shape = list(p.grad.shape)
                    row_shape[-1] = 1
                    state["row_var"] = p.grad.new_zeros(row_shape)
                    col_shape = list(p.grad.shape)
                    col_shape[-2] = 1
                    state["col_var"] = p.grad.new_zeros(col_shape)
                else:
                    state["variance"] = _C._functions.zeros_like(p.grad)
        lr, d, wd = to_scalar(group["lr"]), group["d"], group["weight_decay"]
        eps1, eps2 = group["eps"]
        for p in params:
            state = self.state[p]
            grad = p.grad.neg() if group["maximize"] else p.grad
            if eps1 is None:  # as torch: the first parameter's dtype fixes it for the group
                eps1 = finfo(p.dtype).eps
            state["step"].add_(1.0)
            step = state["step"].item()
            one_minus_beta2 = step ** group["beta2_decay"]
            rho = min(lr, 1 / (step ** 0.5))
            alpha = max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * rho
            if wd != 0:
                p.mul_(num(1 - lr * wd))
            if grad.dim() > 1:
                row_var, col_var = state["row_var"], state["col_var"]
                row_var.lerp_(grad.norm(dim=-1, keepdim=True).square_().div_(grad.size(-1)), one_minus_beta2)
                col_var.lerp_(grad.norm(dim=-2, keepdim=True).square_().div_(grad.size(-2)), one_minus_beta2)
                var_estimate = row_var @ col_var
                var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
            else:
                variance = state["variance"]
                variance.lerp_(grad * grad, one_minus_beta2)
                var_estimate = variance.clone()
            update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_()
            update.mul_(grad)
            denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
            p.add_(update, alpha=num(-alpha / denom))
