"""kiln.autograd: reverse-mode differentiation (backward, grad, grad modes).

The engine is C++ (eager/autograd); this module gives it PyTorch's Python API.
"""

from __future__ import annotations

from kiln.autograd._engine import backward, grad
from kiln.autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from kiln.autograd.anomaly_mode import detect_anomaly, set_detect_anomaly
from kiln.autograd.function import Function, FunctionCtx, once_differentiable
from kiln.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from kiln.autograd import functional  # torch.autograd.functional: vjp, jvp, jacobian, hessian, vhp, hvp
from kiln.autograd._variable import Variable, set_multithreading_enabled, variable

__all__ = [
    "backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
    "detect_anomaly", "set_detect_anomaly", "Function", "FunctionCtx", "once_differentiable",
    "gradcheck", "gradgradcheck", "GradcheckError", "Variable", "variable", "set_multithreading_enabled",
]
