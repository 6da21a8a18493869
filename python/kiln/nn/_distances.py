"""The distance functions of kiln.nn.functional: pairwise_distance, cosine_similarity and
pdist, over the linalg_vector_norm op (through _normalization._norm).

Imports: kiln._C, kiln._creation, kiln._comparison, kiln._dtypes, kiln.autograd.grad_mode,
kiln.nn._ops and kiln.nn._normalization only.
"""

from __future__ import annotations

import numpy as np

from kiln import _C
from kiln._arguments import checked_signature
from kiln._comparison import scalar_type_name
from kiln._creation import tensor
from kiln._dtypes import result_type
from kiln.autograd.grad_mode import no_grad
from kiln.nn._normalization import _norm
from kiln.nn._ops import reduce_sum
from kiln.nn._ops import functions as _functions


@checked_signature("pairwise_distance(Tensor x1, Tensor x2, float p, float eps, bool keepdim)")
def pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-06, keepdim: bool = False):
    dim = -1 if max(x1.dim(), x2.dim()) > 0 else 0
    return _norm(x1 - x2 + eps, p, dim, keepdim)


@checked_signature("cosine_similarity(Tensor x1, Tensor x2, int dim, float eps)")
def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-08):
    """As torch's: the operands broadcast first (a size-1 dim of x2 along `dim` counts once per element of
    x1's), each is divided by its own norm clamped to eps (the clamp outside autograd), then summed."""
    common = result_type(x1, x2)
    if not common.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{scalar_type_name(common)}")
    # Only integer and bool operands are cast (the norms need floats); a float16 one keeps its precision.
    x1, x2 = (x if x.dtype.is_floating_point else x.to(common) for x in (x1, x2))
    x1, x2 = _C._functions.broadcast_tensors([x1, x2])
    # clones: the in-place clamp must not touch the norms their own backward saved
    n1 = _norm(x1, 2, dim, True).clone()
    n2 = _norm(x2, 2, dim, True).clone()
    with no_grad():
        n1.clamp_min_(eps)
        n2.clamp_min_(eps)
    return reduce_sum((x1 / n1) * (x2 / n2), dim, False)


@checked_signature("pdist(Tensor input, float p)")
def pdist(input, p: float = 2):
    """The p-norm distances between the rows of an [N, M] input, for i < j in row-major order: [N (N - 1) / 2]."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    rows, cols = np.triu_indices(input.shape[0], 1)
    first = input.index_select(0, tensor(rows.tolist(), dtype=_C.int64))
    second = input.index_select(0, tensor(cols.tolist(), dtype=_C.int64))
    return _functions.linalg_vector_norm(first - second, float(p), [1], False)

