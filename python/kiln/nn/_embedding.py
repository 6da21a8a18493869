"""F.embedding (the C++ embedding op) and F.one_hot. F.embedding_bag is in _embedding_bag.py.

Imports: kiln._C, kiln._statistics (unique), kiln.autograd.grad_mode and kiln.nn._ops only.
"""

from __future__ import annotations

from typing import Optional

from kiln import _C
from kiln._arguments import _require_bool, checked_signature
from kiln._statistics import unique
from kiln.autograd.grad_mode import no_grad
from kiln.nn._ops import functions as _functions


def renorm_rows(weight, indices, max_norm: float, norm_type: float):
    """torch.embedding_renorm_: each row of ``weight`` that ``indices`` names, whose norm exceeds max_norm,
    scaled in place (no gradient) by max_norm / (norm + 1e-7) (a float64 factor rounded to weight's dtype)."""
    with no_grad():
        rows = unique(indices.reshape(-1).to(_C.int64))
        if rows.numel() == 0:
            return weight
        picked = weight.index_select(0, rows)
        norms = _functions.linalg_vector_norm(picked, float(norm_type), [1], True).to(_C.float64)
        scale = _functions.where(norms > max_norm, max_norm / (norms + 1e-7), _functions.ones_like(norms))
        weight.index_copy_(0, rows, picked * scale.to(weight.dtype))
    return weight


@checked_signature("embedding_renorm_(Tensor self, Tensor indices, float max_norm, float norm_type)", forwarded=True)
def _renorm_as_called(weight, indices, max_norm, norm_type):
    """renorm_rows as F.embedding calls torch.embedding_renorm_: positionally, through its argument parser."""
    return renorm_rows(weight, indices, max_norm, norm_type)


@checked_signature("embedding(Tensor input, Tensor weight)")
def embedding(input, weight, padding_idx: Optional[int] = None, max_norm: Optional[float] = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False):
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = weight.size(0) + padding_idx
    else:
        padding_idx = -1
    if max_norm is not None:
        _renorm_as_called(weight, input, max_norm, norm_type)
    for position, name, value in ((4, "scale_grad_by_freq", scale_grad_by_freq), (5, "sparse", sparse)):
        _require_bool(value, "embedding", name, position)  # torch.embedding's positions, as F.embedding calls it
    if sparse:
        raise NotImplementedError("kiln.nn.functional.embedding: sparse gradients are not supported")
    return _functions.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)


@checked_signature("one_hot(Tensor tensor as input, int num_classes)")
def one_hot(tensor, num_classes: int = -1):
    return _functions.one_hot(tensor, num_classes)

