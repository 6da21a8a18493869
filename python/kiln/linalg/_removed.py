"""torch.lstsq / solve / symeig / eig / matrix_rank (and the Tensor methods lstsq, solve,
symeig, eig), which torch 2.13 keeps only to raise RuntimeError pointing at their linalg
replacements; kiln raises the same text with "kiln." for "torch.". kiln/__init__.py imports
them into the kiln namespace; linalg/_tensor_methods.py binds the methods.

Imports: nothing.
"""

from __future__ import annotations

_REMOVED = "This function was deprecated since version 1.9 and is now removed."

_LSTSQ_MESSAGE = (
    f"{_REMOVED} `kiln.lstsq` is deprecated in favor of `kiln.linalg.lstsq`.\n"
    "`kiln.linalg.lstsq` has reversed arguments and does not return the QR decomposition in the returned tuple "
    "(although it returns other information about the problem).\n\n"
    "To get the QR decomposition consider using `kiln.linalg.qr`.\n\n"
    "The returned solution in `kiln.lstsq` stored the residuals of the solution in the last m - n columns of the "
    "returned value whenever m > n. In kiln.linalg.lstsq, the residuals are in the field 'residuals' of the "
    "returned named tuple.\n\n"
    "The unpacking of the solution, as in\nX, _ = kiln.lstsq(B, A).solution[:A.size(1)]\nshould be replaced with:\n"
    "X = kiln.linalg.lstsq(A, B).solution")

_SOLVE_MESSAGE = (
    f"{_REMOVED} `kiln.solve` is deprecated in favor of `kiln.linalg.solve`. `kiln.linalg.solve` has its "
    "arguments reversed and does not return the LU factorization.\n\n"
    "To get the LU factorization see `kiln.lu`, which can be used with `kiln.lu_solve` or `kiln.lu_unpack`.\n"
    "X = kiln.solve(B, A).solution should be replaced with:\nX = kiln.linalg.solve(A, B)")

_SYMEIG_MESSAGE = (
    f"{_REMOVED} The default behavior has changed from using the upper triangular portion of the matrix by default "
    "to using the lower triangular portion.\n\n"
    "L, _ = kiln.symeig(A, upper=upper) should be replaced with:\n"
    "L = kiln.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\n"
    "L, V = kiln.symeig(A, eigenvectors=True) should be replaced with:\n"
    "L, V = kiln.linalg.eigh(A, UPLO='U' if upper else 'L')")

_EIG_MESSAGE = (
    f"{_REMOVED} `kiln.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than real tensors "
    "mimicking complex tensors.\n\n"
    "L, _ = kiln.eig(A) should be replaced with:\nL_complex = kiln.linalg.eigvals(A)\n\nand\n\n"
    "L, V = kiln.eig(A, eigenvectors=True) should be replaced with:\nL_complex, V_complex = kiln.linalg.eig(A)")

_MATRIX_RANK_MESSAGE = (
    f"{_REMOVED}\nPlease use the `kiln.linalg.matrix_rank` function instead. The parameter 'symmetric' was renamed "
    "in `kiln.linalg.matrix_rank()` to 'hermitian'.")


def lstsq(input, A, *, out=None):
    """torch.lstsq: removed; raises RuntimeError pointing at kiln.linalg.lstsq."""
    raise RuntimeError(_LSTSQ_MESSAGE)


def solve(input, A, *, out=None):
    """torch.solve: removed; raises RuntimeError pointing at kiln.linalg.solve."""
    raise RuntimeError(_SOLVE_MESSAGE)


def symeig(input, eigenvectors=False, upper=True, *, out=None):
    """torch.symeig: removed; raises RuntimeError pointing at kiln.linalg.eigh / eigvalsh."""
    raise RuntimeError(_SYMEIG_MESSAGE)


def eig(self, eigenvectors: bool = False, *, e=None, v=None):
    """torch.eig: removed; raises RuntimeError pointing at kiln.linalg.eig / eigvals."""
    raise RuntimeError(_EIG_MESSAGE)


def matrix_rank(input, tol=None, symmetric=False, *, out=None):
    """torch.matrix_rank: removed; raises RuntimeError pointing at kiln.linalg.matrix_rank."""
    raise RuntimeError(_MATRIX_RANK_MESSAGE)
