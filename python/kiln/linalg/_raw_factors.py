"""LAPACK's raw factors as torch exposes them: torch.geqrf (the reflectors and tau, an op on LAPACK's geqrf),
torch.ormqr (a product with the Q they describe, composed of householder_product and matmul so that it has
gradients, as torch's does), and torch.linalg.ldl_factor(_ex) / ldl_solve (LAPACK's sytrf / sytrs; ops in
eager/kernels/cpu/linalg/LapackRawFactors.cpp), with the batch broadcasting torch's ldl_solve does."""

from __future__ import annotations

from collections import namedtuple

from kiln import _C, _shape
from kiln._arguments import _require_tensor, checked_signature
from kiln.linalg._matrix_functions import householder_product

_f = _C._functions

_TYPES = {name: namedtuple(name, fields) for name, fields in (
    ("geqrf", ["a", "tau"]), ("linalg_ldl_factor_ex", ["LD", "pivots", "info"]),
    ("linalg_ldl_factor", ["LD", "pivots"]))}
for _cls in _TYPES.values():
    _cls.__module__ = "kiln.return_types"


def _word(dtype) -> str:
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int32": "Int",
            "int64": "Long", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}.get(
        str(dtype).replace("kiln.", ""), str(dtype))


def _to_out(result, out):
    if out is None:
        return result
    return _f._copy_to_out(result, out)


@checked_signature("geqrf(Tensor input)")
def geqrf(input, *, out=None):
    """torch.geqrf: (a, tau), a holding R above the diagonal and the Householder vectors below it."""
    a, tau = _f.geqrf(input)
    return _result("geqrf", (a, tau), out)


def _check_ormqr(input, tau, other, left):
    caller = "kiln.ormqr"
    for position, (argument, value) in enumerate((("input", input), ("input2", tau), ("input3", other)), start=1):
        _require_tensor(value, "ormqr", argument, position)
    if input.dim() < 2:
        raise RuntimeError(f"{caller}: input must have at least 2 dimensions.")
    if other.dim() < 2:
        raise RuntimeError(f"{caller}: other must have at least 2 dimensions.")
    side = -2 if left else -1
    if other.shape[side] != input.shape[-2]:
        raise RuntimeError(f"{caller}: other.shape[{side}] must be equal to input.shape[-2]")
    if tau.dim() == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    if tau.shape[-1] > min(other.shape[side], input.shape[-1]):
        raise RuntimeError(f"{caller}: tau.shape[-1] must be equal to min(other.shape[{side}], input.shape[-1])")
    if tau.dim() != input.dim() - 1:
        raise RuntimeError(f"{caller}: Expected tau to have one dimension less than input, but got tau.ndim equal "
                           f"to {tau.dim()} and input.ndim is equal to {input.dim()}")
    if tuple(tau.shape[:-1]) != tuple(input.shape[:-2]):
        raise RuntimeError(f"{caller}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{list(tau.shape[:-1])}")
    if other.dim() != input.dim():
        raise RuntimeError(f"{caller}: Expected other to have the same number of dimensions as input, but got "
                           f"other.ndim equal to {other.dim()} and input.ndim is equal to {input.dim()}")
    if tuple(other.shape[:-2]) != tuple(input.shape[:-2]):
        raise RuntimeError(f"{caller}: Expected batch dimensions of other to be equal to input.shape[:-2], but got "
                           f"{list(other.shape[:-2])}")
    if other.dtype != input.dtype:
        raise RuntimeError(f"{caller}: Expected input and other to have the same dtype, but input has dtype"
                           f"{_word(input.dtype)} and other has dtype {_word(other.dtype)}")
    if tau.dtype != input.dtype:
        raise RuntimeError(f"{caller}: Expected input and tau to have the same dtype, but input has dtype"
                           f"{_word(input.dtype)} and tau has dtype {_word(tau.dtype)}")


@checked_signature("ormqr(Tensor input, Tensor input2, Tensor input3, bool left, bool transpose, *, Tensor? out)")
def ormqr(input, input2, input3, left=True, transpose=False, *, out=None):
    """torch.ormqr(input, tau, other, left, transpose): other multiplied by the m x m Q = H_1 ... H_k of
    geqrf's (input, tau), from the left or the right, Q or Q^T. Composed as householder_product on input's
    first k columns padded to m (the full Q) and one matmul."""
    tau, other = input2, input3
    _check_ormqr(input, tau, other, left)
    m, k = input.shape[-2], tau.shape[-1]
    reflectors = input[..., :, :k]
    if k < m:  # zero columns beyond the k reflectors: Q's remaining columns are the identity's
        pad = _f.zeros(tuple(input.shape[:-2]) + (m, m - k), dtype=input.dtype)
        reflectors = _f.cat([reflectors, pad], -1)
    q = householder_product(reflectors, tau)
    if transpose:
        q = q.mT
    return _to_out(_f.matmul(q, other) if left else _f.matmul(other, q), out)


def _result(name, values, out):
    """torch.return_types' named tuple of the values, or of the out tensors after copying into them."""
    if out is not None:
        for value, target in zip(values, out):
            _f._copy_to_out(value, target)
        values = tuple(out)
    return _TYPES[name](*values)


@checked_signature("linalg_ldl_factor_ex(Tensor A as input, *, bool hermitian, bool check_errors, Tensor[]? out)")
def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    """torch.linalg.ldl_factor_ex: (LD, pivots, info), LAPACK sytrf's compact L D L^T with Bunch-Kaufman
    pivots (1-based; negative for a 2x2 block) and info > 0 where D is singular."""
    LD, pivots, info = _f.linalg_ldl_factor_ex(A, hermitian=hermitian, check_errors=check_errors)
    return _result("linalg_ldl_factor_ex", (LD, pivots, info), out)


@checked_signature("linalg_ldl_factor(Tensor A as input, *, bool hermitian, Tensor[]? out)")
def ldl_factor(A, *, hermitian=False, out=None):
    """torch.linalg.ldl_factor: ldl_factor_ex, raising where a matrix's D is singular."""
    LD, pivots, info = _f.linalg_ldl_factor_ex(A, hermitian=hermitian, check_errors=False)
    codes = info.flatten().tolist()
    for b, code in enumerate(codes):
        if code > 0:
            batch = f"(Batch element {b}): " if A.dim() > 2 else ""
            raise RuntimeError(f"kiln.linalg.ldl_factor: {batch}The factorization could not be completed because the "
                               f"input is singular (the {code}-th diagonal element of D is zero).")
    return _result("linalg_ldl_factor", (LD, pivots), out)


@checked_signature("linalg_ldl_solve(Tensor LD, Tensor pivots, Tensor B, *, bool hermitian, Tensor? out)")
def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """torch.linalg.ldl_solve: X with A X = B from ldl_factor's (LD, pivots), batch dimensions broadcast."""
    if B.dim() < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(B.dim(), 1)}, "
                         f"{max(B.dim(), 1) - 1}], but got -2)")
    if LD.dim() >= 2 and B.dtype != LD.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {_word(B.dtype)} and A of "
                           f"type {_word(LD.dtype)} instead.")
    if LD.dim() >= 2:
        batch = _shape.broadcast_shapes(tuple(LD.shape[:-2]), tuple(B.shape[:-2]))
        LD = LD.expand(batch + tuple(LD.shape[-2:]))
        if pivots.dim() >= 1:
            pivots = pivots.expand(batch + (pivots.shape[-1],))
        B = B.expand(batch + tuple(B.shape[-2:]))
    return _to_out(_f.linalg_ldl_solve(LD, pivots, B, hermitian=hermitian), out)
