"""The Tensor methods kiln.linalg provides, bound by ``bind`` (kiln/__init__.py calls it once):
the legacy torch.* spellings (Tensor.det, inverse, slogdet, logdet, cholesky, cholesky_solve,
cholesky_inverse, triangular_solve, qr, svd, pinverse, lu, lu_solve, geqrf, ormqr, orgqr, matrix_exp) and the
methods of the removed functions (lstsq, solve, symeig, eig: they raise torch's RuntimeError).

Imports: the kiln.linalg modules only.
"""

from __future__ import annotations

from kiln.linalg import _removed
from kiln.linalg._decompositions import (
    cholesky_inverse, cholesky_legacy, cholesky_solve, pinverse, qr_legacy, svd_legacy, triangular_solve,
)
from kiln.linalg._lu import lu_legacy, lu_solve_legacy
from kiln.linalg._matrix_functions import orgqr, tensor_matrix_exp
from kiln.linalg._raw_factors import geqrf, ormqr
from kiln.linalg._solve import det, inv, logdet, slogdet

_LEGACY = (("det", det), ("inverse", inv), ("slogdet", slogdet), ("logdet", logdet), ("cholesky", cholesky_legacy),
           ("cholesky_solve", cholesky_solve), ("cholesky_inverse", cholesky_inverse),
           ("triangular_solve", triangular_solve), ("qr", qr_legacy), ("svd", svd_legacy), ("pinverse", pinverse),
           ("lu", lu_legacy), ("lu_solve", lu_solve_legacy), ("geqrf", geqrf), ("ormqr", ormqr), ("orgqr", orgqr),
           ("matrix_exp", tensor_matrix_exp))
_REMOVED_METHODS = ("lstsq", "solve", "symeig", "eig")  # torch.Tensor has no matrix_rank


def bind_legacy(tensor_class) -> None:
    """Tensor.det, .inverse, ... .ormqr: the legacy linalg spellings (they replace any earlier binding)."""
    for name, fn in _LEGACY:
        setattr(tensor_class, name, fn)


def bind_removed(tensor_class) -> None:
    """Tensor.lstsq, .solve, .symeig, .eig (only where the class has none)."""
    for name in _REMOVED_METHODS:
        if not hasattr(tensor_class, name):
            setattr(tensor_class, name, getattr(_removed, name))


def bind(tensor_class) -> None:
    """Every Tensor method of kiln.linalg."""
    bind_legacy(tensor_class)
    bind_removed(tensor_class)
