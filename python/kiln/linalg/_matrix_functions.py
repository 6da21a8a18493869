"""linalg.matrix_exp, householder_product (torch.orgqr), vander, tensorinv,
tensorsolve and diagonal as composites over kiln's differentiable ops
(matmul, linalg.solve, linalg.inv, tril, where), so autograd runs through
them without backward formulas of their own.

matrix_exp is scaling and squaring with the diagonal Pade approximants of
degrees 3, 5, 7, 9 and 13 (Higham, "The scaling and squaring method for the
matrix exponential revisited", SIAM J. Matrix Anal. Appl. 26(4), 2005): each
matrix of a batch is scaled by its own power of two so that its 1-norm is at
most theta_13, the lowest degree whose theta bounds every scaled norm of the
batch is used, and each matrix is squared back its own number of times.
Differentiating that sequence gives the Frechet derivative of the approximant,
which approximates the exponential's to the same order (Al-Mohy and Higham,
"Computing the Frechet derivative of the matrix exponential", 2009)."""

from __future__ import annotations

import math
import operator
from fractions import Fraction

from kiln import _C
from kiln._arguments import checked_signature
from kiln._comparison import scalar_type_name
from kiln._norms import matrix_norm
from kiln.autograd import grad_mode
from kiln.linalg._solve import LinAlgError, inv, solve

_F = _C._functions

# theta_m: the largest 1-norm for which the [m/m] Pade approximant's backward error is below 2^-53
_PADE_THETA = ((3, 1.495585217958292e-2), (5, 2.539398330063230e-1), (7, 9.504178996162932e-1),
               (9, 2.097847961257068e0), (13, 5.371920351148152e0))


def _word(dtype):
    return scalar_type_name(dtype)


def _require_tensor(caller, name, value, position=None):
    if not isinstance(value, _C.TensorBase):
        where = f" (position {position})" if position is not None else ""
        raise TypeError(f"{caller}(): argument '{name}'{where} must be Tensor, not {type(value).__name__}")


def _require_int(caller, name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            operator.index(value)
        except TypeError:
            raise TypeError(f"{caller}(): argument '{name}' must be int, not {type(value).__name__}") from None
    return operator.index(value)


def _pade_coefficients(m):
    """b_j = (2m - j)! m! / ((2m)! j! (m - j)!), j = 0..m, as floats."""
    f = math.factorial
    return [float(Fraction(f(2 * m - j) * f(m), f(2 * m) * f(j) * f(m - j))) for j in range(m + 1)]


_PADE = {m: _pade_coefficients(m) for m, _ in _PADE_THETA}


def _pade_uv(A, m):
    """The odd (U) and even (V) parts of the [m/m] Pade numerator at A: p(A) = V + U, q(A) = V - U."""
    b = _PADE[m]
    n = A.shape[-1]
    eye = _F.eye(n, dtype=A.dtype)
    A2 = A @ A
    if m == 13:
        A4 = A2 @ A2
        A6 = A4 @ A2
        u = A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * eye
        v = A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * eye
        return A @ u, v
    powers = [eye, A2]  # A^0, A^2, A^4, ... up to A^(m-1)
    while len(powers) < (m + 1) // 2:
        powers.append(powers[-1] @ A2)
    u = sum(b[2 * k + 1] * p for k, p in enumerate(powers))
    v = sum(b[2 * k] * p for k, p in enumerate(powers))
    return A @ u, v


@checked_signature("linalg_matrix_exp(Tensor A as input)")
def matrix_exp(A):
    """torch.linalg.matrix_exp: the exponential of each square matrix of A (real floating dtypes;
    float16 and bfloat16 are computed in float32). Matrices holding inf or nan give nan matrices."""
    caller = "linalg.matrix_exp"
    _require_tensor("linalg_matrix_exp", "input", A, 1)
    if A.dim() < 2:
        raise RuntimeError(f"{caller}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{caller}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"{caller}: Expected a floating point or complex tensor as input. Got {_word(A.dtype)}")
    if A.dtype in (_C.float16, _C.bfloat16):
        return matrix_exp(A.to(_C.float32)).to(A.dtype)
    n = A.shape[-1]
    if A.numel() == 0:
        return A.clone()
    if n == 1:
        return A.exp()
    with grad_mode.no_grad():
        finite = _F.isfinite(A).all(-1).all(-1)
        all_finite = bool(finite.all())
        norms = matrix_norm(_F.where(finite[..., None, None], A, _F.zeros_like(A)), 1)
        # s: the power of two that brings each matrix's 1-norm under theta_13
        steps = _F.ceil(_F.log2(norms / _PADE_THETA[-1][1])).clamp(min=0)
        steps = _F.where(norms > 0, steps, _F.zeros_like(steps))
        most_steps = int(steps.max())
        scale = _F.exp2(-steps)[..., None, None]
        largest = float((norms * scale[..., 0, 0]).max())
    degree = next(m for m, theta in _PADE_THETA if largest <= theta or m == 13)
    x = A if all_finite else _F.where(finite[..., None, None], A, _F.zeros_like(A))
    x = x * scale if most_steps else x
    u, v = _pade_uv(x, degree)
    result = solve(v - u, v + u)
    uniform = bool((steps == most_steps).all())
    for step in range(most_steps):
        squared = result @ result
        result = squared if uniform else _F.where((steps > step)[..., None, None], squared, result)
    if not all_finite:
        result = _F.where(finite[..., None, None], result, _F.full_like(result, math.nan))
    return result


def tensor_matrix_exp(self):
    """Tensor.matrix_exp."""
    return matrix_exp(self)


# --- Householder products ---------------------------------------------------------------------------------


@checked_signature("linalg_householder_product(Any A, Tensor tau, *, Tensor? out)")
def householder_product(A, tau, *, out=None):
    """torch.linalg.householder_product: the first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T, v_i the
    i-th column of A below the diagonal with a 1 on it (the Householder form geqrf leaves)."""
    caller = "kiln.linalg.householder_product"
    _require_tensor("linalg_householder_product", "input", A, 1)
    _require_tensor("linalg_householder_product", "tau", tau, 2)
    if A.dim() < 2:
        raise RuntimeError(f"{caller}: input must have at least 2 dimensions.")
    m, n = A.shape[-2], A.shape[-1]
    if m < n:
        raise RuntimeError(f"{caller}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if tau.dim() == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    k = tau.shape[-1]
    if n < k:
        raise RuntimeError(f"{caller}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tau.dim() != A.dim() - 1:
        raise RuntimeError(f"{caller}: Expected tau to have one dimension less than input, but got tau.ndim equal "
                           f"to {tau.dim()} and input.ndim is equal to {A.dim()}")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{caller}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{list(tau.shape[:-1])}")
    if tau.dtype != A.dtype:
        raise RuntimeError(f"{caller}: tau dtype {_word(tau.dtype)} does not match input dtype {_word(A.dtype)}")
    if A.dtype not in (_C.float32, _C.float64):
        raise NotImplementedError(f"\"orgqr_cpu\" not implemented for '{_word(A.dtype)}'")
    eye = _F.eye(m, n, dtype=A.dtype)
    reflectors = _F.tril(A, -1) + eye  # column i is v_i
    if k == 0:  # the identity's columns, still a function of A and tau for autograd (zero gradients)
        q = _F.where(_F.ones(m, n, dtype=_C.bool), eye, A) + tau.sum(-1)[..., None, None]
    else:
        q = eye.expand(*A.shape[:-2], m, n)
    for i in reversed(range(k)):  # q <- H_i q, innermost reflector first
        v = reflectors[..., :, i:i + 1]
        q = q - (tau[..., i:i + 1].unsqueeze(-1) * v) @ (v.mT @ q)
    if out is not None:
        return _C._functions._copy_to_out(q, out)
    return q


@checked_signature("orgqr(Tensor input, Any tau, *, Tensor? out)")
def orgqr(input, tau, *, out=None):
    """torch.orgqr / Tensor.orgqr: linalg.householder_product under LAPACK's name."""
    return householder_product(input, tau, out=out)


# --- vander, tensorinv, tensorsolve, diagonal -------------------------------------------------------------


@checked_signature("linalg_vander(Tensor x, *, int? N)")
def vander(x, *, N=None):
    """torch.linalg.vander: x^0, x^1, ..., x^(N-1) along a new last dimension (N defaults to x.shape[-1]);
    integer inputs give int64."""
    _require_tensor("linalg_vander", "x", x, 1)
    if x.dtype == _C.bool:
        raise RuntimeError("linalg.vander supports floating point, complex, and integer tensors, but got Bool")
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        x = x.to(_C.int64)  # torch widens integer inputs
    if x.dim() == 0:
        x = x.reshape(1)
    N = x.shape[-1] if N is None else _require_int("linalg_vander", "N", N)
    if N <= 1:
        raise RuntimeError("N must be greater than 1.")
    powers = [_F.ones_like(x), x]
    while len(powers) < N:
        powers.append(powers[-1] * x)
    return _F.stack(powers, -1)


def _prod(shape):
    return math.prod(int(s) for s in shape)


@checked_signature("linalg_tensorinv(Tensor A as input, int ind, *, Tensor? out)")
def tensorinv(A, ind=2, *, out=None):
    """torch.linalg.tensorinv: the inverse of A read as a prod(A.shape[:ind]) square matrix, shaped
    A.shape[ind:] + A.shape[:ind]."""
    _require_tensor("linalg_tensorinv", "input", A, 1)
    ind = _require_int("linalg_tensorinv", "ind", ind)
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    front, back = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    rows, columns = _prod(front), _prod(back)
    if rows != columns:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {columns} != {rows}")
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"linalg.inv: Expected a floating point or complex tensor as input. Got {_word(A.dtype)}")
    try:
        inverse = inv(A.reshape(rows, columns))
    except LinAlgError as error:  # torch words a singular one as inv's
        text = str(error)
        raise LinAlgError(text.removeprefix("linalg.") if text.startswith("linalg.inv:") else text) \
            from None
    result = inverse.reshape(*back, *front)
    if out is not None:
        return _C._functions._copy_to_out(result, out)
    return result


@checked_signature("linalg_tensorsolve(Tensor A as input, Any B, int[]? dims, *, Tensor? out)")
def tensorsolve(A, B, dims=None, *, out=None):
    """torch.linalg.tensorsolve: X with tensordot(A, X, X.ndim) = B, X shaped A.shape[B.ndim:] (after moving
    the dims of A named by ``dims`` to its end)."""
    _require_tensor("linalg_tensorsolve", "input", A, 1)
    _require_tensor("linalg_tensorsolve", "other", B, 2)
    if dims is not None:
        dims = [dims] if isinstance(dims, int) else list(dims)
        A = A.movedim(dims, list(range(A.dim() - len(dims), A.dim())))
    back = tuple(A.shape[B.dim():])
    columns, rows = _prod(back), B.numel()
    if rows != columns:  # torch's words, though the count it compares is B's
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {columns} != {rows}")
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"linalg.solve: Expected a floating point or complex tensor as input. "
                           f"Got {_word(A.dtype)}")
    if A.dtype != B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{_word(A.dtype)} and B of type {_word(B.dtype)} instead")
    result = solve(A.reshape(rows, columns), B.reshape(-1)).reshape(back)
    if out is not None:
        return _C._functions._copy_to_out(result, out)
    return result


@checked_signature("linalg_diagonal(Tensor A, *, int offset, int dim1, int dim2)")
def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """torch.linalg.diagonal: kiln.diagonal with the matrix dims last by default (keyword-only arguments)."""
    _require_tensor("linalg_diagonal", "A", A, 1)
    return _C._functions.diagonal(A, offset, dim1, dim2)
