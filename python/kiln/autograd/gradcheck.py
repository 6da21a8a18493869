"""gradcheck and gradgradcheck: analytical gradients against central finite
differences, in float64, like torch.autograd.gradcheck."""

from __future__ import annotations

import warnings

import numpy as np

from kiln import _C
from kiln.autograd._engine import grad as _engine_grad

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck when the gradients disagree."""


def _as_tuple(x):
    return tuple(x) if isinstance(x, (list, tuple)) else (x,)


def _differentiable(inputs):
    return [i for i, t in enumerate(inputs) if isinstance(t, _C.TensorBase) and t.requires_grad]


def _flat_outputs(func, inputs):
    return [o for o in _as_tuple(func(*inputs)) if isinstance(o, _C.TensorBase)]


def _numerical_jacobians(func, inputs, eps):
    """jac[i][j]: d output j / d input i, shape (input numel, output numel)."""
    idx = _differentiable(inputs)
    outputs = _flat_outputs(func, inputs)
    jacs = []
    for i in idx:
        x = inputs[i]
        flat = x.detach().numpy().reshape(-1)  # shares memory with x
        per_output = [np.zeros((x.numel(), o.numel())) for o in outputs]
        for k in range(flat.size):
            orig = flat[k]
            flat[k] = orig + eps
            plus = [o.detach().numpy().astype(np.float64).reshape(-1).copy() for o in _flat_outputs(func, inputs)]
            flat[k] = orig - eps
            minus = [o.detach().numpy().astype(np.float64).reshape(-1).copy() for o in _flat_outputs(func, inputs)]
            flat[k] = orig
            for j, (p, m) in enumerate(zip(plus, minus)):
                per_output[j][k] = (p - m) / (2 * eps)
        jacs.append(per_output)
    return jacs


def _analytical_jacobians(func, inputs):
    idx = _differentiable(inputs)
    outputs = _flat_outputs(func, inputs)
    jacs = [[np.zeros((inputs[i].numel(), o.numel())) for o in outputs] for i in idx]
    for j, out in enumerate(outputs):
        if not out.requires_grad:
            continue
        for k in range(out.numel()):
            unit = np.zeros(out.numel(), dtype=out.detach().numpy().dtype)
            unit[k] = 1.0
            grad_out = _C._functions.zeros(tuple(out.shape), dtype=out.dtype)
            grad_out.numpy().reshape(-1)[:] = unit
            grads = _engine_grad(out, [inputs[i] for i in idx], grad_out, retain_graph=True, allow_unused=True)
            for n, g in enumerate(grads):
                if g is not None:
                    jacs[n][j][:, k] = g.detach().numpy().astype(np.float64).reshape(-1)
    return jacs


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0, check_undefined_grad: bool = True,
              check_grad_dtypes: bool = False, check_batched_grad: bool = False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode: bool = False, masked=None) -> bool:
    """True when func's analytical gradients match finite differences at ``inputs``."""
    inputs = _as_tuple(inputs)
    for i in _differentiable(inputs):
        if inputs[i].dtype is not _C.float64:
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point. "
                          "This check will likely fail if all the inputs are not of double precision floating point. ")
    numerical = _numerical_jacobians(func, inputs, eps)
    analytical = _analytical_jacobians(func, inputs)
    for n, (num_i, ana_i) in enumerate(zip(numerical, analytical)):
        for j, (num, ana) in enumerate(zip(num_i, ana_i)):
            if not np.allclose(ana, num, rtol=rtol, atol=atol):
                if not raise_exception:
                    return False
                raise GradcheckError(
                    f"Jacobian mismatch for output {j} with respect to input {n},\n"
                    f"numerical:{num}\nanalytical:{ana}\n"
                )
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  gen_non_contig_grad_outputs: bool = False, raise_exception: bool = True, nondet_tol: float = 0.0,
                  check_undefined_grad: bool = True, check_grad_dtypes: bool = False, check_batched_grad: bool = False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode: bool = False, masked=False) -> bool:
    """gradcheck of the gradient itself (second derivatives)."""
    inputs = _as_tuple(inputs)
    idx = _differentiable(inputs)
    if grad_outputs is None:
        outs = _flat_outputs(func, inputs)
        rng = np.random.default_rng(0)
        grad_outputs = []
        for o in outs:
            g = _C._functions.zeros(tuple(o.shape), dtype=o.dtype)
            g.numpy()[...] = rng.standard_normal(tuple(o.shape))
            g.requires_grad_(True)
            grad_outputs.append(g)
    grad_outputs = list(_as_tuple(grad_outputs))
    n_in = len(inputs)

    def first_derivative(*args):
        ins, gos = args[:n_in], args[n_in:]
        outs = _flat_outputs(func, ins)
        grads = _engine_grad(outs, [ins[i] for i in idx], gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivative, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
