"""linalg.solve, inv, det, slogdet, lu_factor(_ex) and their torch-level
aliases (torch.inverse, det, logdet, slogdet), over the LAPACK ops
linalg_lu_factor_ex and _linalg_solve (eager/ops/lapack.yaml). See
Note [Linear algebra through one solve] (eager/kernels/cpu/linalg/Lapack.cpp)."""

from __future__ import annotations

from collections import namedtuple

from kiln import _C, _dtypes, _shape
from kiln._arguments import checked_signature
from kiln.autograd import Function

_F = _C._functions


class LinAlgError(RuntimeError):
    """A linear algebra routine failed on its input (a singular matrix): torch.linalg.LinAlgError."""


LinAlgError.__module__ = "kiln.linalg"

slogdet_type = namedtuple("linalg_slogdet", ["sign", "logabsdet"])
lu_factor_type = namedtuple("linalg_lu_factor", ["LU", "pivots"])
lu_factor_ex_type = namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"])
for _cls in (slogdet_type, lu_factor_type, lu_factor_ex_type):
    _cls.__module__ = "kiln.return_types"


def _f():
    return _C._functions


def _solve_raw(A, B, caller):
    try:
        return _f()._linalg_solve(A, B, caller)
    except RuntimeError as error:
        text = str(error)
        if "singular" in text and not isinstance(error, LinAlgError):
            raise LinAlgError(text) from None
        raise


def _check_square(caller, A):
    if not isinstance(A, _C.TensorBase):
        raise TypeError(f"{caller}(): argument 'A' must be Tensor, not {type(A).__name__}")
    if A.dim() < 2:
        raise RuntimeError(f"{caller}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{caller}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")


@checked_signature("linalg_solve(Tensor A, Tensor B, *, bool left, Tensor? out)")
def solve(A, B, *, left=True, out=None):
    """X with A X = B (or X A = B when ``left`` is False); B a matrix, a batch, or a vector
    (B.dim() == 1, or one less than A's with matching batch dims). Singular A: LinAlgError."""
    caller = "kiln.linalg.solve"
    _check_square(caller.removeprefix("kiln."), A)
    if not left:
        result = solve(A.mT, B.mT, left=True).mT
        return result if out is None else _C._functions._copy_to_out(result, out)
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    b = B.unsqueeze(-1) if vector else B
    if b.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                           f"({A.shape[-2]}x{A.shape[-1]} and {b.shape[-2]}x{b.shape[-1]})")
    dtype = _dtypes.promote_types(A.dtype, B.dtype)
    batch = _shape.broadcast_shapes(tuple(A.shape[:-2]), tuple(b.shape[:-2]))
    a = A.to(dtype).expand(*batch, *A.shape[-2:])
    b = b.to(dtype).expand(*batch, *b.shape[-2:])
    result = _solve_raw(a, b, caller)
    result = result.squeeze(-1) if vector else result
    if out is not None:
        return _C._functions._copy_to_out(result, out)
    return result


def _identity_like(A):
    n = A.shape[-1]
    return _F.eye(n, dtype=A.dtype).expand(*A.shape[:-2], n, n)


@checked_signature("linalg_inv(Tensor A, *, Tensor? out)")
def inv(A, *, out=None):
    """The inverse of each square matrix of A (a solve against the identity); singular A: LinAlgError."""
    _check_square("linalg.inv", A)
    numeric = A.dtype.is_floating_point or A.dtype.is_complex
    result = _solve_raw(A, _identity_like(A) if numeric else A, "linalg.inv")
    if out is not None:
        return _C._functions._copy_to_out(result, out)
    return result


@checked_signature("linalg_lu_factor_ex(Tensor A, *, bool pivot, bool check_errors, Tensor[]? out)")
def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """LU factorisation with partial pivoting: (LU, pivots, info), pivots 1-based as LAPACK's."""
    return lu_factor_ex_type(*_f().linalg_lu_factor_ex(A, pivot=pivot, check_errors=check_errors))


@checked_signature("linalg_lu_factor(Tensor A, *, bool pivot, Tensor[]? out)")
def lu_factor(A, *, pivot=True, out=None):
    """(LU, pivots) of A; a singular A is not an error (info is dropped)."""
    LU, pivots, _ = _f().linalg_lu_factor_ex(A, pivot=pivot, check_errors=False)
    return lu_factor_type(LU, pivots)


def _lu_sign_and_diagonal(A):
    """The permutation's sign (+-1, A's dtype) and U's diagonal of A's LU factorisation."""
    LU, pivots, _ = _f().linalg_lu_factor_ex(A.detach(), pivot=True, check_errors=False)
    n = A.shape[-1]
    swaps = (pivots != _F.arange(1, n + 1, dtype=_C.int32)).sum(-1)
    sign = 1 - 2 * (swaps % 2).to(A.dtype)
    return sign, _F.diagonal(LU, 0, -2, -1)


def _det_function():
    class Det(Function):
        @staticmethod
        def forward(ctx, A):
            sign, diagonal = _lu_sign_and_diagonal(A)
            result = sign * diagonal.prod(-1)
            ctx.save_for_backward(A, result)
            return result

        @staticmethod
        def backward(ctx, grad):
            A, result = ctx.saved_tensors
            # d det(A) / dA = det(A) inv(A)^T, conjugated for complex A (Note [Complex dtypes])
            return (grad * result.conj()).unsqueeze(-1).unsqueeze(-1) * inv(A).mH

    return Det


def _slogdet_function():
    class Slogdet(Function):
        @staticmethod
        def forward(ctx, A):
            sign, diagonal = _lu_sign_and_diagonal(A)
            sign = sign * _F.sgn(diagonal).prod(-1)  # a unit complex number for complex A
            logabsdet = _F.log(_F.abs(diagonal)).sum(-1)
            ctx.save_for_backward(A)
            if A.is_complex():  # a complex sign's gradient is not written here: it stays non-differentiable
                ctx.mark_non_differentiable(sign)
            return sign, logabsdet

        @staticmethod
        def backward(ctx, *grads):
            # (a real sign is piecewise constant: its gradient is zero, as torch's; logabsdet's comes last)
            grad_logabsdet = grads[-1]
            (A,) = ctx.saved_tensors
            return grad_logabsdet.unsqueeze(-1).unsqueeze(-1) * inv(A).mH

    return Slogdet


_DET = None
_SLOGDET = None


@checked_signature("linalg_det(Tensor A, *, Tensor? out)")
def det(A, *, out=None):
    """The determinant of each square matrix of A (through its LU factorisation)."""
    global _DET
    _check_square("linalg.det", A)
    if _DET is None:
        _DET = _det_function()
    result = _DET.apply(A)
    if out is not None:
        return _C._functions._copy_to_out(result, out)
    return result


@checked_signature("linalg_slogdet(Tensor A, *, Tensor[]? out)")
def slogdet(A, *, out=None):
    """(sign, log|det|) of each square matrix of A; sign 0 and logabsdet -inf for a singular one."""
    global _SLOGDET
    _check_square("linalg.slogdet", A)
    if _SLOGDET is None:
        _SLOGDET = _slogdet_function()
    return slogdet_type(*_SLOGDET.apply(A))


@checked_signature("logdet(Tensor A as input)")
def logdet(A):
    """log det(A): NaN for a negative determinant, -inf for a singular matrix (torch.logdet)."""
    sign, logabsdet = slogdet(A)
    return _F.where(sign < 0, _F.full_like(logabsdet, float("nan")), logabsdet)
