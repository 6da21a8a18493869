"""The LU factors unpacked and used: linalg.lu (P, L, U), lu_unpack, lu_solve,
solve_ex and inv_ex, and the older torch.lu / torch.lu_solve / torch.lu_unpack.
All over linalg_lu_factor_ex (differentiable: Note [Decomposition gradients])
and triangular solves; pivots are LAPACK's (1-based row interchanges)."""

from __future__ import annotations

from collections import namedtuple

from kiln import _C, _shape
from kiln._arguments import _require_tensor, checked_signature
from kiln.linalg._decompositions import _out
from kiln.linalg._decompositions import solve_triangular
from kiln.linalg._solve import solve

_F = _C._functions

lu_type = namedtuple("linalg_lu", ["P", "L", "U"])
lu_unpack_type = namedtuple("lu_unpack", ["P", "L", "U"])
solve_ex_type = namedtuple("linalg_solve_ex", ["result", "info"])
inv_ex_type = namedtuple("linalg_inv_ex", ["inverse", "info"])
for _cls in (lu_type, lu_unpack_type, solve_ex_type, inv_ex_type):
    _cls.__module__ = "kiln.return_types"


def _f():
    return _C._functions


def _rows_permuted(X, perm):
    """X's rows in the order perm lists: row i of the result is row perm[i] (perm broadcast over X's batch)."""
    index = perm.unsqueeze(-1).expand(*X.shape[:-2], X.shape[-2], X.shape[-1])
    return X.gather(-2, index)


def _rows_unpermuted(X, perm):
    """The inverse of _rows_permuted: row perm[i] of the result is row i of X."""
    index = perm.unsqueeze(-1).expand(*X.shape[:-2], X.shape[-2], X.shape[-1])
    return _F.zeros_like(X).scatter(-2, index, X)


@checked_signature("lu_unpack(Tensor LU_data, Tensor LU_pivots, bool unpack_data, bool unpack_pivots, *, "
                   "Tensor[]? out)")
def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """(P, L, U) with A = P L U from linalg.lu_factor's packed LU and pivots (empty tensors for
    the parts not asked for)."""
    if LU_data.dim() < 2:
        raise RuntimeError(f"torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(LU_data.shape)} instead")
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = min(m, n)
    empty = _F.empty(0, dtype=LU_data.dtype)
    L = U = P = empty
    if unpack_data:
        L = LU_data[..., :, :k].tril(-1) + _F.eye(m, k, dtype=LU_data.dtype)
        U = LU_data[..., :k, :].triu()
    if unpack_pivots:
        perm = _f()._lu_pivots_to_permutation(LU_pivots, m)
        batch = tuple(LU_data.shape[:-2])
        rows = _F.eye(m, dtype=LU_data.dtype).expand(*batch, m, m)
        P = _rows_permuted(rows, perm.expand(*batch, m)).mT  # P^T's rows are the identity's in perm order
    return _out(lu_unpack_type(P, L, U), out)


@checked_signature("linalg_lu(Tensor A, *, bool pivot, Tensor[]? out)")
def lu(A, *, pivot=True, out=None):
    """(P, L, U) with A = P L U: P a permutation, L unit lower triangular (m x k), U upper (k x n)."""
    if A.dim() < 2:
        raise RuntimeError(f"linalg.lu: Expected tensor with 2 or more dimensions. Got size: {list(A.shape)} instead")
    LU, pivots, _ = _f().linalg_lu_factor_ex(A, pivot=pivot, check_errors=False)
    return _out(lu_type(*lu_unpack(LU, pivots)), out)


def _dtype_word(dtype):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16"}.get(
        str(dtype).removeprefix("kiln."), str(dtype))


@checked_signature("linalg_lu_solve(Tensor LU, Tensor pivots, Tensor B, *, bool left, bool adjoint, Tensor? out)")
def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """X with A X = B (X A = B when not ``left``; A^T in place of A when ``adjoint``) from A's LU."""
    for position, (argument, value) in enumerate((("LU", LU), ("pivots", pivots), ("B", B)), start=1):
        _require_tensor(value, "linalg_lu_solve", argument, position)
    if LU.dtype != B.dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type "
                           f"{_dtype_word(LU.dtype)} and B of type {_dtype_word(B.dtype)} instead")
    n = LU.shape[-1]
    rows = B.shape[-2] if left else B.shape[-1]
    if rows != n:
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation {equation} "
                           f"({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return _out(lu_solve(LU, pivots, B.mT, left=True, adjoint=not adjoint).mT, out)
    perm = _f()._lu_pivots_to_permutation(pivots, n)
    if not adjoint:  # U X = L^-1 P^T B
        batch = tuple(_broadcast(LU.shape[:-2], B.shape[:-2]))
        b = _rows_permuted(B.expand(*batch, *B.shape[-2:]), perm.expand(*batch, n))
        y = solve_triangular(LU, b, upper=False, unitriangular=True)
        return _out(solve_triangular(LU, y, upper=True), out)
    # A^T = U^T L^T P^T: X = P L^-T U^-T B
    y = solve_triangular(LU.mT, B, upper=False)
    z = solve_triangular(LU.mT, y, upper=True, unitriangular=True)
    return _out(_rows_unpermuted(z, perm.expand(*z.shape[:-1])), out)


def _broadcast(a, b):
    return _shape.broadcast_shapes(tuple(a), tuple(b))


@checked_signature("linalg_solve_ex(Tensor A, Tensor B, *, bool left, bool check_errors, Tensor[]? out)")
def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """(X, info): linalg.solve that reports a singular matrix in info (LAPACK's) instead of raising."""
    LU, pivots, info = _f().linalg_lu_factor_ex(A, pivot=True, check_errors=False)
    if bool((info == 0).all()) or check_errors:
        return _out(solve_ex_type(solve(A, B, left=left), info), out)
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    b = B.unsqueeze(-1 if left else -2) if vector else B
    result = lu_solve(LU, pivots, b.to(A.dtype), left=left)
    return _out(solve_ex_type(result.squeeze(-1 if left else -2) if vector else result, info), out)


@checked_signature("linalg_inv_ex(Tensor A, *, bool check_errors, Tensor[]? out)")
def inv_ex(A, *, check_errors=False, out=None):
    """(inverse, info): linalg.inv that reports a singular matrix in info instead of raising."""
    if A.dim() < 2:
        raise RuntimeError("linalg.inv: The input tensor A must have at least 2 dimensions.")
    n = A.shape[-1]
    identity = _F.eye(n, dtype=A.dtype).expand(*A.shape[:-2], n, n)
    result, info = solve_ex(A, identity, check_errors=check_errors)
    return _out(inv_ex_type(result, info), out)


def lu_legacy(A, pivot=True, get_infos=False, out=None):
    """torch.lu: (LU, pivots) or (LU, pivots, infos)."""
    LU, pivots, info = _f().linalg_lu_factor_ex(A, pivot=pivot, check_errors=False)
    return (LU, pivots, info) if get_infos else (LU, pivots)


@checked_signature("lu_solve(Tensor b as input, Tensor LU_data, Tensor LU_pivots, *, Tensor? out)")
def lu_solve_legacy(b, LU_data, LU_pivots, *, out=None):
    """torch.lu_solve: linalg.lu_solve with the right-hand side first."""
    for position, (argument, value) in enumerate((("input", b), ("LU_data", LU_data), ("LU_pivots", LU_pivots)), start=1):
        _require_tensor(value, "lu_solve", argument, position)
    return lu_solve(LU_data, LU_pivots, b, out=out)
