"""torch.linalg.cond: a matrix's condition number, from its singular values
(p None, 2, -2) or from a matrix norm of it and of its inverse.

Its own module because it composes both sides of a pair that must not import each
other: the matrix norms (kiln._norms, whose spectral norms take _decompositions'
svdvals) and the decompositions."""

from __future__ import annotations

from kiln._arguments import checked_signature
from kiln._norms import matrix_norm
from kiln.linalg._decompositions import _check_float, _out, svdvals
from kiln.linalg._solve import _check_square, inv


@checked_signature("linalg_cond(Tensor A as input, Any p, *, Tensor? out)")
def cond(A, p=None, *, out=None):
    """The condition number: S_max / S_min for p None or 2 (S_min / S_max for -2), else
    norm(A, p) * norm(inv(A), p)."""
    _check_float("cond", A)
    if p in (None, 2, -2):
        S = svdvals(A)
        result = S[..., 0] / S[..., -1] if p != -2 else S[..., -1] / S[..., 0]
        return _out(result, out)
    _check_square("linalg.cond", A)
    return _out(matrix_norm(A, p) * matrix_norm(inv(A), p), out)
