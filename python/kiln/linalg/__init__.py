"""kiln.linalg, as torch.linalg: the norms (vector_norm, matrix_norm, norm),
multi_dot, matrix_power, matmul and vecdot; LU, solves, inverses and
determinants (_solve.py); lu, lu_solve, solve_ex, inv_ex (_lu.py); Cholesky, QR, eigh, SVD, triangular solves,
pinv, matrix_rank and lstsq (_decompositions.py); cond (_condition.py); ldl_factor(_ex) and ldl_solve
(_raw_factors.py). The other matrix products are kiln.mm and friends."""

from kiln._arguments import checked_signature as _checked_signature
from kiln._norms import linalg_norm as norm  # noqa: F401
from kiln._norms import matrix_norm, vector_norm  # noqa: F401
from kiln._products import matrix_power, multi_dot  # noqa: F401
from kiln._numeric import linalg_cross as cross  # noqa: F401
from kiln.linalg._solve import (  # noqa: F401
    LinAlgError, det, inv, lu_factor, lu_factor_ex, slogdet, solve,
)
from kiln.linalg._lu import inv_ex, lu, lu_solve, solve_ex  # noqa: F401
from kiln.linalg._decompositions import (  # noqa: F401
    cholesky, cholesky_ex, eig, eigh, eigvals, eigvalsh, lstsq, matrix_rank, pinv, qr, solve_triangular, svd,
    svdvals,
)
from kiln.linalg._condition import cond  # noqa: F401
from kiln.linalg._raw_factors import ldl_factor, ldl_factor_ex, ldl_solve  # noqa: F401
from kiln.linalg._matrix_functions import diagonal, householder_product, matrix_exp, tensorinv, tensorsolve, vander  # noqa: F401,E501

from kiln import _C as _kiln_C


@_checked_signature("linalg_matmul(Tensor input, Tensor other, *, Tensor? out)")
def matmul(input, other, *, out=None):
    """torch.linalg.matmul: kiln.matmul under its linalg name."""
    if out is not None:
        return _kiln_C._functions.matmul(input, other, out=out)
    return _kiln_C._functions.matmul(input, other)


@_checked_signature("linalg_vecdot(Tensor x, Tensor y, *, int dim, Tensor? out)")
def vecdot(x, y, *, dim=-1, out=None):
    """torch.linalg.vecdot for real tensors: sum(x * y) over dim, broadcasting the rest."""
    if x.dtype != y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{_dtype_word(x.dtype)} and y of type {_dtype_word(y.dtype)} instead")
    result = (x * y).sum(dim)
    if out is None:
        return result
    return _kiln_C._functions._copy_to_out(result, out)


def _dtype_word(dtype):
    words = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
             "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}
    return words[str(dtype).removeprefix("kiln.")]
