"""Cholesky, QR, eigh and SVD (torch.linalg's names and the older torch.* ones),
triangular solves, and what composes from them: cholesky_solve/inverse, pinv,
matrix_rank and lstsq. The kernels are the LAPACK ops of eager/ops/lapack.yaml;
their gradients are the formulas of Note [Decomposition gradients] (eager/autograd/LinalgFormulas.h)."""

from __future__ import annotations

import functools
from collections import namedtuple

from kiln import _C, _dtypes, _shape
from kiln._arguments import _require_tensor, checked_signature
from kiln._comparison import scalar_type_name
from kiln.autograd import Function, grad_mode
from kiln.linalg._solve import LinAlgError

_F = _C._functions

cholesky_ex_type = namedtuple("linalg_cholesky_ex", ["L", "info"])
qr_type = namedtuple("linalg_qr", ["Q", "R"])
eigh_type = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
eig_type = namedtuple("linalg_eig", ["eigenvalues", "eigenvectors"])
svd_type = namedtuple("linalg_svd", ["U", "S", "Vh"])
old_svd_type = namedtuple("svd", ["U", "S", "V"])
old_qr_type = namedtuple("qr", ["Q", "R"])
lstsq_type = namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
triangular_solve_type = namedtuple("triangular_solve", ["solution", "cloned_coefficient"])
for _cls in (cholesky_ex_type, qr_type, eigh_type, eig_type, svd_type, old_svd_type, old_qr_type, lstsq_type,
             triangular_solve_type):
    _cls.__module__ = "kiln.return_types"


def _f():
    return _C._functions


def _out(result, out):
    if out is None:
        return result
    if isinstance(result, tuple):
        for value, target in zip(result, out):
            _C._functions._copy_to_out(value, target)
        return type(result)(*out)
    return _C._functions._copy_to_out(result, out)


def _as_linalg_error(call):
    """Runs call(); a LAPACK failure on the input (not positive-definite, no convergence) becomes LinAlgError."""
    try:
        return call()
    except RuntimeError as error:
        text = str(error)
        if not isinstance(error, LinAlgError) and ("positive-definite" in text or "failed to converge" in text):
            raise LinAlgError(text) from None
        raise


def _needs_grad(A):
    return grad_mode.is_grad_enabled() and A.requires_grad


# --- Cholesky ---------------------------------------------------------------------------------------------


@checked_signature("linalg_cholesky_ex(Tensor A as input, *, bool upper, bool check_errors)")
def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """(L, info): the Cholesky factor of each symmetric positive-definite matrix of A and LAPACK's
    info (0, or the order of the first leading minor that is not positive-definite)."""
    result = _as_linalg_error(lambda: _f().linalg_cholesky_ex(A, upper=upper, check_errors=check_errors))
    return _out(cholesky_ex_type(*result), out)


@checked_signature("linalg_cholesky(Tensor A as input, *, bool upper, Tensor? out)")
def cholesky(A, *, upper=False, out=None):
    """The lower (or upper) Cholesky factor; LinAlgError if a matrix is not positive-definite."""
    return _out(cholesky_ex(A, upper=upper, check_errors=True).L, out)


@checked_signature("cholesky(Tensor input, bool upper, *, Tensor? out)")
def cholesky_legacy(input, upper=False, *, out=None):
    """torch.cholesky: linalg.cholesky with a positional upper."""
    return cholesky(input, upper=upper, out=out)


@checked_signature("cholesky_solve(Tensor B as input, Any L, bool upper, *, Tensor? out)")
def cholesky_solve(B, L, upper=False, *, out=None):
    """X with A X = B, from A's Cholesky factor L (lower, or upper when ``upper``); batches broadcast.

    The value reads only L's triangle. The gradient is torch's, which differentiates A = L L^H (U^H U) as
    if all of L were used, so d/dL is nonzero in the unread triangle too; it is built from differentiable
    ops (cholesky_solve and matmul), so double backward works."""
    _check_cholesky_solve(B, L)
    L, B = _broadcast_batches("cholesky_solve", L, B)
    return _out(_cholesky_solve_function().apply(B, L, upper), out)


def _check_cholesky_solve(B, L):
    """torch's checks of cholesky_solve, in its order and with its messages."""
    _require_tensor(B, "cholesky_solve", "input", 1)
    _require_tensor(L, "cholesky_solve", "input2", 2)
    name = scalar_type_name
    for tensor, letter in ((B, "b"), (L, "u")):
        if tensor.dim() < 2:
            raise RuntimeError(f"{letter} should have at least 2 dimensions, but has {tensor.dim()} dimensions instead")
    if B.dtype != L.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {name(B.dtype)} and A of "
                           f"type {name(L.dtype)} instead.")
    if L.shape[-1] != L.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are {L.shape[-2]} by {L.shape[-1]} "
                           "matrices")
    if L.shape[-1] != B.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is {L.shape[-2]} by "
                           f"{L.shape[-1]} but each b matrix is {B.shape[-2]} by {B.shape[-1]}")
    b_batch, l_batch = tuple(B.shape[:-2]), tuple(L.shape[:-2])
    width = max(len(b_batch), len(l_batch))
    for i in range(width):
        x = b_batch[i - width + len(b_batch)] if i >= width - len(b_batch) else 1
        y = l_batch[i - width + len(l_batch)] if i >= width - len(l_batch) else 1
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton "
                               f"dimension {i}")
    if L.dtype not in (_C.float32, _C.float64, _C.complex64, _C.complex128):
        raise NotImplementedError(f"\"cholesky_solve_cpu\" not implemented for '{name(L.dtype)}'")


def _cholesky_solve_values(B, L, upper):
    """The two triangular solves (no gradient of their own: the Function below supplies it)."""
    first = solve_triangular(L.mT if upper else L, B, upper=False)
    return solve_triangular(L if upper else L.mT, first, upper=True)


@functools.cache
def _cholesky_solve_function():
    """The autograd Function of cholesky_solve (made on first use: kiln.autograd imports kiln).

    With X the result and G its gradient: grad_B = cholesky_solve(G, L); S = grad_B X^H + X grad_B^H;
    grad_L = -S L for a lower factor, -L S for an upper one (torch's formula, checked against its autograd)."""
    class CholeskySolve(Function):
        @staticmethod
        def forward(ctx, B, L, upper):
            result = _cholesky_solve_values(B, L, upper)
            ctx.upper = upper
            ctx.save_for_backward(L, result)
            return result

        @staticmethod
        def backward(ctx, grad):
            L, result = ctx.saved_tensors
            grad_B = cholesky_solve(grad, L, ctx.upper)
            grad_L = None
            if ctx.needs_input_grad[1]:
                common = grad_B.matmul(result.mH) + result.matmul(grad_B.mH)
                grad_L = -L.matmul(common) if ctx.upper else -common.matmul(L)
            return grad_B if ctx.needs_input_grad[0] else None, grad_L, None

    return CholeskySolve


@checked_signature("cholesky_inverse(Tensor L as input, bool upper, *, Tensor? out)")
def cholesky_inverse(L, upper=False, *, out=None):
    """inv(A) from A's Cholesky factor."""
    n = L.shape[-1]
    identity = _F.eye(n, dtype=L.dtype).expand(*L.shape[:-2], n, n)
    return _out(cholesky_solve(identity, L, upper), out)


# --- Triangular solves ------------------------------------------------------------------------------------


def _broadcast_batches(caller, A, B):
    """A and B expanded to their common batch shape (B converted to A's dtype, as torch's kernel writes it)."""
    if A.dim() < 2:
        raise RuntimeError(f"linalg.{caller}: The input tensor A must have at least 2 dimensions.")
    if B.dim() < 2:
        raise RuntimeError(f"linalg.{caller}: The input tensor B must have at least 2 dimensions.")
    batch = _shape.broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2]))
    return A.expand(*batch, *A.shape[-2:]), B.to(A.dtype).expand(*batch, *B.shape[-2:])


@checked_signature("linalg_solve_triangular(Tensor A as input, Tensor B, *, bool upper, bool left, "
                   "bool unitriangular, Tensor? out)")
def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """X with A X = B (X A = B when not ``left``) for triangular A; only A's triangle is read."""
    A, B = _broadcast_batches("solve_triangular", A, B)
    result = _f().linalg_solve_triangular(A, B, upper=upper, left=left, unitriangular=unitriangular)
    return _out(result, out)


@checked_signature("triangular_solve(Tensor b as input, Tensor A, bool upper, bool transpose, bool unitriangular)")
def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """torch.triangular_solve: (solution of op(A) X = b, a copy of A), op transposing when asked."""
    _require_tensor(b, "triangular_solve", "input", 1)
    _require_tensor(A, "triangular_solve", "A", 2)
    coefficient = A.mT if transpose else A
    solution = solve_triangular(coefficient, b, upper=upper != transpose, unitriangular=unitriangular)
    return _out(triangular_solve_type(solution, A.clone()), out)


# --- QR ---------------------------------------------------------------------------------------------------


@checked_signature("linalg_qr(Tensor A, str mode, *, Tensor[]? out)")
def qr(A, mode="reduced", *, out=None):
    """(Q, R) with A = Q R: Q with orthonormal columns, R upper triangular ('reduced'; 'complete'
    gives a square Q, 'r' only R and an empty Q)."""
    return _out(qr_type(*_f().linalg_qr(A, mode)), out)


@checked_signature("qr(Tensor input, bool some)")
def qr_legacy(input, some=True, *, out=None):
    """torch.qr: the reduced QR when ``some``, else the complete one."""
    return _out(old_qr_type(*_f().linalg_qr(input, "reduced" if some else "complete")), out)


# --- Symmetric eigendecomposition -------------------------------------------------------------------------


@checked_signature("linalg_eigh(Tensor A as input, str UPLO)")
def eigh(A, UPLO="L", *, out=None):
    """(eigenvalues ascending, eigenvectors as columns) of each symmetric matrix of A, read from its
    lower (UPLO='L') or upper triangle."""
    result = _as_linalg_error(lambda: _f()._linalg_eigh(A, UPLO, True))
    return _out(eigh_type(*result), out)


@checked_signature("linalg_eigvalsh(Tensor A as input, str UPLO, *, Tensor? out)")
def eigvalsh(A, UPLO="L", *, out=None):
    """The eigenvalues of each symmetric matrix of A, ascending (eigenvectors computed only for a gradient)."""
    values, _ = _as_linalg_error(lambda: _f()._linalg_eigh(A, UPLO, _needs_grad(A)))
    return _out(values, out)


@checked_signature("linalg_eig(Tensor A as input, *, Tensor[]? out)")
def eig(A, *, out=None):
    """(eigenvalues, eigenvectors as columns) of each square matrix of A, both complex (LAPACK's geev):
    eigenvectors of unit norm, in LAPACK's order, as torch returns them."""
    result = _as_linalg_error(lambda: _f()._linalg_eig(A, True))
    return _out(eig_type(*result), out)


@checked_signature("linalg_eigvals(Tensor A as input, *, Tensor? out)")
def eigvals(A, *, out=None):
    """The (complex) eigenvalues of each square matrix of A (eigenvectors computed only for a gradient)."""
    values, _ = _as_linalg_error(lambda: _f()._linalg_eig(A, _needs_grad(A)))
    return _out(values, out)


# --- SVD --------------------------------------------------------------------------------------------------


def _check_driver(driver):
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")


@checked_signature("linalg_svd(Tensor A, bool full_matrices, *, str? driver)")
def svd(A, full_matrices=True, *, driver=None, out=None):
    """(U, S, Vh) with A = U diag(S) Vh, S descending (gesdd, torch's CPU driver)."""
    _check_driver(driver)
    result = _as_linalg_error(lambda: _f()._linalg_svd(A, full_matrices, True))
    return _out(svd_type(*result), out)


@checked_signature("linalg_svdvals(Tensor A, *, str? driver, Tensor? out)")
def svdvals(A, *, driver=None, out=None):
    """The singular values of each matrix of A, descending."""
    _check_driver(driver)
    result = _as_linalg_error(lambda: _f()._linalg_svd(A, False, _needs_grad(A)))
    return _out(result[1], out)


@checked_signature("svd(Tensor input, bool some, bool compute_uv)")
def svd_legacy(input, some=True, compute_uv=True, *, out=None):
    """torch.svd: (U, S, V) with V not transposed; without compute_uv, U and V are full-size zeros."""
    if not compute_uv:
        S = svdvals(input)
        m, n = input.shape[-2], input.shape[-1]
        batch = tuple(input.shape[:-2])
        U = _F.zeros(*batch, m, m, dtype=input.dtype)
        V = _F.zeros(*batch, n, n, dtype=input.dtype)
        return _out(old_svd_type(U, S, V), out)
    U, S, Vh = svd(input, full_matrices=not some)
    return _out(old_svd_type(U, S, Vh.mH), out)


# --- Composites over the SVD ------------------------------------------------------------------------------


def _tolerance(S, m, n, atol, rtol, dtype):
    """The cut-off below which a singular value counts as zero: max(atol, rtol * S_max), torch's defaults
    (rtol = eps * max(m, n) when neither is given, 0 when only atol is)."""
    eps = _dtypes.finfo(dtype).eps
    if rtol is None:
        rtol = eps * max(m, n) if (atol is None or _is_zero(atol)) else 0.0
    atol = 0.0 if atol is None else atol
    s_max = S.amax(-1, keepdim=True) if S.shape[-1] > 0 else _F.zeros(*S.shape[:-1], 1, dtype=S.dtype)
    tol = s_max * (rtol.unsqueeze(-1) if isinstance(rtol, _C.TensorBase) else rtol)
    atol_t = atol.unsqueeze(-1) if isinstance(atol, _C.TensorBase) else _F.full_like(tol, float(atol))
    return _F.maximum(tol, atol_t.to(tol.dtype))


def _is_zero(value):
    return (not isinstance(value, _C.TensorBase)) and value == 0


def _check_float(caller, A):
    if not isinstance(A, _C.TensorBase):
        raise TypeError(f"linalg.{caller}(): argument 'input' must be Tensor, not {type(A).__name__}")
    if A.dim() < 2:
        raise RuntimeError(f"linalg.{caller}: The input tensor A must have at least 2 dimensions.")
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        word = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                "bool": "Bool"}[str(A.dtype).removeprefix("kiln.")]
        raise RuntimeError(f"linalg.{caller}: Expected a floating point or complex tensor as input. Got {word}")


def _pinv_value(A, atol, rtol, hermitian):
    m, n = A.shape[-2], A.shape[-1]
    if hermitian:
        values, vectors = eigh(A)
        magnitude = values.abs()
        keep = magnitude > _tolerance(magnitude, m, n, atol, rtol, A.dtype)
        inverse = _F.where(keep, 1.0 / values, _F.zeros_like(values))
        return (vectors * inverse.unsqueeze(-2)) @ vectors.mH
    U, S, Vh = svd(A, full_matrices=False)
    keep = S > _tolerance(S, m, n, atol, rtol, A.dtype)
    inverse = _F.where(keep, 1.0 / S, _F.zeros_like(S))
    return (Vh.mH * inverse.unsqueeze(-2)) @ U.mH


def _pinv_backward(grad, pinv_a, A):
    """The derivative of the pseudo-inverse (Golub and Pereyra), in products of A, A+ and grad only: defined
    on singular and rank-deficient A too, where the SVD's own backward divides by equal singular values
    (the formula torch's pinv_backward uses, the cheaper side first)."""
    m, n = A.shape[-2], A.shape[-1]
    pinv_ah, grad_h = pinv_a.mH, grad.mH
    if m <= n:
        K = grad_h @ pinv_a
        k_pinv_ah = K @ pinv_ah
        return -(pinv_a @ K).mH + k_pinv_ah - (A @ pinv_a) @ k_pinv_ah + (pinv_ah @ pinv_a) @ (grad_h - K @ A)
    K = pinv_a @ grad_h
    pinv_ah_k = pinv_ah @ K
    return -(K @ pinv_a).mH + (grad_h - A @ K) @ pinv_a @ pinv_ah + pinv_ah_k - pinv_ah_k @ pinv_a @ A


class _Pinv(Function):
    @staticmethod
    def forward(ctx, A, atol, rtol, hermitian):
        result = _pinv_value(A, atol, rtol, hermitian)
        ctx.save_for_backward(A, result)
        return result

    @staticmethod
    def backward(ctx, grad):
        A, result = ctx.saved_tensors
        return _pinv_backward(grad, result, A), None, None, None


@checked_signature("linalg_pinv(Tensor A as input, *, Any atol, Any rtol, bool hermitian, Tensor? out)")
def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The Moore-Penrose pseudo-inverse: V diag(1/S) U^T over the singular values above the tolerance
    (through eigh when ``hermitian``); its gradient is the pseudo-inverse's own (_pinv_backward)."""
    _check_float("pinv", A)
    if A.requires_grad and grad_mode.is_grad_enabled():
        return _out(_Pinv.apply(A, atol, rtol, hermitian), out)
    return _out(_pinv_value(A, atol, rtol, hermitian), out)


@checked_signature("pinverse(Tensor input, float rcond)")
def pinverse(input, rcond=1e-15):
    """torch.pinverse: pinv with rtol=rcond."""
    return pinv(input, rtol=rcond)


@checked_signature("linalg_matrix_rank(Any A, *, Any atol, Any rtol, bool hermitian, Tensor? out)")
def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """How many singular values (eigenvalue magnitudes when ``hermitian``) exceed the tolerance."""
    _check_float("matrix_rank", A)
    m, n = A.shape[-2], A.shape[-1]
    with grad_mode.no_grad():
        S = eigvalsh(A).abs() if hermitian else svdvals(A)
        rank = (S > _tolerance(S, m, n, atol, rtol, A.dtype)).sum(-1)
    return _out(rank, out)


_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


@checked_signature("linalg_lstsq(Tensor A as input, Any B, float? rcond, *, str? driver, Tensor[]? out)")
def lstsq(A, B, rcond=None, *, driver=None, out=None):
    """The least-squares solution of A X = B (minimum norm when A is rank-deficient), with torch's
    residuals, rank and singular_values for each driver (CPU default 'gelsy')."""
    _require_tensor(A, "linalg_lstsq", "input", 1)
    _require_tensor(B, "linalg_lstsq", "b", 2)
    _check_float("lstsq", A)
    driver = "gelsy" if driver is None else driver
    if driver not in _LSTSQ_DRIVERS:
        raise RuntimeError("kiln.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    b = B.unsqueeze(-1) if vector else B
    if b.dim() < 2 or A.shape[-2] != b.shape[-2]:
        raise RuntimeError("kiln.linalg.lstsq: input.size(-2) should match other.size(-2)")
    A, b = _broadcast_batches("lstsq", A, b)
    m, n = A.shape[-2], A.shape[-1]
    eps = _dtypes.finfo(A.dtype).eps
    rtol = eps * max(m, n) if rcond is None or rcond < 0 else rcond
    with grad_mode.no_grad():
        S = svdvals(A)
        rank = (S > _tolerance(S, m, n, 0.0, rtol, A.dtype)).sum(-1)
    full_rank = bool((rank == min(m, n)).all()) if rank.numel() else True
    if driver == "gels" or full_rank:
        solution = _full_rank_lstsq(A, b, m, n)
    else:
        solution = pinv(A, rtol=rtol) @ b
    # no residuals: an empty tensor, an output of the solve as torch's (it requires grad with the inputs)
    residuals = solution.reshape(-1)[:0] if solution.requires_grad else _F.empty(0, dtype=A.dtype)
    if driver != "gelsy" and m > n and full_rank:
        residuals = ((A @ solution - b) ** 2).sum(-2)
    singular_values = S if driver in ("gelsd", "gelss") else _F.empty(0, dtype=A.dtype)
    rank_out = rank if driver != "gels" else _F.empty(0, dtype=_C.int64)
    if vector:
        solution = solution.squeeze(-1)
    return _out(lstsq_type(solution, residuals, rank_out, singular_values), out)


def _full_rank_lstsq(A, b, m, n):
    """Through QR: R^-1 Q^T b when m >= n; the minimum-norm Q R^-T b of A^T = Q R when m < n."""
    if m >= n:
        Q, R = qr(A)
        return solve_triangular(R, Q.mH @ b, upper=True)
    Q, R = qr(A.mT)
    return Q @ solve_triangular(R.mT, b, upper=False)
