"""torch.norm, Tensor.norm and torch.linalg's norms over the linalg_vector_norm
op (eager/ops/reduction.yaml) and the reductions; matrix norms that need the
singular values (ord 2, -2, "nuc") come from linalg.svdvals; torch.norm_except_dim
(weight_norm's norm); and renorm (renorm_), each slice scaled down to a maximum norm."""

from __future__ import annotations

import math

from kiln import _C
from kiln._arguments import _require_tensor, checked_signature

_F = _C._functions


def _dims(dim):
    if dim is None:
        return None
    return [dim] if isinstance(dim, int) else list(dim)


def _check_identity_dims(x, ord, dim) -> None:
    """torch's refusal of a max/min-like norm (inf, negative ord) over an empty dim: it has no identity."""
    if dim is None or (not isinstance(dim, int) and len(dim) == 0):
        raise RuntimeError(f"linalg.vector_norm cannot compute the {ord:g} norm on an empty tensor because the "
                           f"operation does not have an identity")
    for d in [dim] if isinstance(dim, int) else dim:
        if x.dim() and x.shape[d % x.dim()] == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {ord:g} norm on the dimension {d}because this "
                               f"dimension is empty and the operation does not have an identity")


@checked_signature("linalg_vector_norm(Tensor x as input, Scalar ord, int[1]? dim, bool keepdim, *, "
                   "ScalarType? dtype, Tensor? out)")
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """torch.linalg.vector_norm: the ord-norm of x's elements over dim (all by default)."""
    if isinstance(ord, str):
        raise TypeError("linalg_vector_norm(): argument 'ord' must be Number, not str")
    if x.numel() == 0 and (ord < 0 or ord == math.inf):
        _check_identity_dims(x, ord, dim)
    if out is not None:
        return _F.linalg_vector_norm(x, ord, _dims(dim), keepdim, dtype=dtype, out=out)
    return _F.linalg_vector_norm(x, ord, _dims(dim), keepdim, dtype=dtype)


def _spectral_norm(A, ord, dim, keepdim):
    """ord 2 / -2 (largest / smallest singular value) or 'nuc' (their sum) over the two dims `dim`."""
    # Imported here, not at the top: kiln.linalg imports this module (its norm, vector_norm and
    # matrix_norm live here), so a module-level import of kiln.linalg would be a loop.
    from kiln.linalg._decompositions import svdvals

    d0, d1 = (d % A.dim() for d in dim)
    S = svdvals(A.movedim((d0, d1), (-2, -1)))
    if ord == 2 and S.shape[-1] == 0:  # an empty matrix's largest singular value: 0, as torch (-2 refuses)
        result = S.sum(-1)
    else:
        result = S.sum(-1) if ord == "nuc" else S.amax(-1) if ord == 2 else S.amin(-1)
    if keepdim:
        for d in sorted((d0, d1)):
            result = result.unsqueeze(d)
    return result


@checked_signature("linalg_matrix_norm(Tensor A as input, Any ord, int[] dim, bool keepdim, *, ScalarType? dtype, "
                   "Tensor? out)")
def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """torch.linalg.matrix_norm for ord 'fro', inf, -inf, 1, -1 over the two dims `dim`."""
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    dim = tuple(dim)
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(str(d) for d in dim)}")
    if dtype is not None:
        A = A.to(dtype)
    if ord == "fro":
        result = vector_norm(A, 2, dim, keepdim)
    elif ord == "nuc" or ord in (2, -2):
        result = _spectral_norm(A, ord, dim, keepdim)
    elif ord in (math.inf, -math.inf, 1, -1):
        # inf: the largest row sum of |A| (sum over dim[1], max over dim[0]); 1: the largest column sum.
        rows, cols = (dim[1], dim[0]) if abs(ord) == math.inf else (dim[0], dim[1])
        d0, d1 = (d % A.dim() for d in (rows, cols))
        sums = A.abs().sum(d0, keepdim=True)
        if ord > 0:  # the largest of no sums is 0 for torch (sums are >= 0); amin has no such identity
            result = sums.amax(d1, keepdim=True) if sums.shape[d1] else sums.sum(d1, keepdim=True)
        else:
            result = sums.amin(d1, keepdim=True)
        if not keepdim:
            for d in sorted((d0, d1), reverse=True):
                result = result.squeeze(d)
    else:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if out is not None:
        return _C._functions._copy_to_out(result, out)
    return result


@checked_signature("linalg_norm(Tensor A as input, Any ord, int[1]? dim, bool keepdim, *, Tensor? out, "
                   "ScalarType? dtype)")
def linalg_norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):
    """torch.linalg.norm: a vector norm over one dim (or all, for ord None), a matrix norm over two."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) == 2 or (dim is None and ord is not None and A.dim() == 2):
        return matrix_norm(A, "fro" if ord is None else ord, (-2, -1) if dim is None else dim, keepdim, dtype=dtype,
                           out=out)
    if dim is None and ord is not None and A.dim() != 1:
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                           f"Got {A.dim()}D.")
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: ord must be a number, got {ord}")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype, out=out)


@checked_signature("norm(Tensor input)")
def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """torch.norm: p 'fro' (2 over dim, all by default), 'nuc', or a number."""
    if p == "fro" or p is None:
        if dim is not None and not isinstance(dim, int) and len(dim) > 2:
            raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dim)} dimensions instead.")
        return vector_norm(input, 2, dim, keepdim, dtype=dtype, out=out)
    if p == "nuc":
        return matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim, dtype=dtype, out=out)
    if isinstance(p, str):
        raise RuntimeError(f"norm(): unsupported p {p!r}")
    return vector_norm(input, p, dim, keepdim, dtype=dtype, out=out)


def tensor_norm(self, p="fro", dim=None, keepdim=False, dtype=None):
    """Tensor.norm."""
    return norm(self, p, dim, keepdim, dtype=dtype)


@checked_signature("norm_except_dim(Tensor v, int pow, int dim)")
def norm_except_dim(v, pow=2, dim: int = 0):
    """torch.norm_except_dim: the ``pow``-norm over every dim but ``dim`` (kept as size-1 dims); dim=-1:
    the norm of everything, a 0-d tensor."""
    if dim == -1:
        return _F.linalg_vector_norm(v, float(pow), None, False)
    dim = dim % v.dim()
    others = [d for d in range(v.dim()) if d != dim]
    return _F.linalg_vector_norm(v, float(pow), others, True)


@checked_signature("renorm(Tensor input, Scalar p, int dim, Scalar maxnorm, *, Tensor? out)")
def renorm(input, p, dim, maxnorm, *, out=None):
    """Each slice along ``dim`` whose p-norm exceeds maxnorm scaled to norm maxnorm (factor maxnorm / (norm + 1e-7))."""
    _require_tensor(input, "renorm", "input", 1)
    if input.dim() < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} dimensions")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    dim = dim + input.dim() if -input.dim() <= dim < 0 else dim
    if not 0 <= dim < input.dim():
        raise IndexError(f"Dimension out of range (expected to be in range of [{-input.dim()}, {input.dim() - 1}], "
                         f"but got {dim})")
    others = [d for d in range(input.dim()) if d != dim]
    norm = vector_norm(input, p, dim=others, keepdim=True)
    factor = _F.where(norm > maxnorm, maxnorm / (norm + 1e-7), _F.ones_like(norm))
    result = input * factor
    return result if out is None else _C._functions._copy_to_out(result, out)


def renorm_(self, p, dim, maxnorm):
    return self.copy_(renorm(self, p, dim, maxnorm))
