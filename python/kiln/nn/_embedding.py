"""F.embedding (the C++ embedding op) and F.one_hot. F.embedding_bag is in _embedding_bag.py.

Imports: kiln.nn._ops only.
"""

from __future__ import annotations

from typing import Optional

from kiln.nn._ops import functions as _functions


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
        raise NotImplementedError("kiln.nn.functional.embedding: max_norm is not supported yet")
    if sparse:
        raise NotImplementedError("kiln.nn.functional.embedding: sparse gradients are not supported")
    return _functions.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)


def one_hot(tensor, num_classes: int = -1):
    return _functions.one_hot(tensor, num_classes)

