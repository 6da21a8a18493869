"""kiln.nn.attention.bias: torch's causal attention biases, causal_upper_left and
causal_lower_right (CausalBias tensors of the two CausalVariant kinds).

How kiln's differ from torch's: torch's CausalBias is a placeholder tensor that
torch.nn.functional.scaled_dot_product_attention recognises through
``__torch_function__`` and turns into ``is_causal=True`` (upper-left) or a
lower-right kernel. kiln has no ``__torch_function__`` dispatch, so kiln's
CausalBias *is* the mask it stands for: a boolean [seq_len_q, seq_len_kv]
kiln tensor, True where a query may attend (``tril`` of ones, its diagonal
offset by ``seq_len_kv - seq_len_q`` for LOWER_RIGHT). Passed as ``attn_mask``
to kiln.nn.functional.scaled_dot_product_attention it gives the attention
torch's gives (fully masked rows, of a LOWER_RIGHT bias with
seq_len_q > seq_len_kv, come out as zeros in both). One difference remains:
with ``is_causal=True`` as well, torch raises ValueError ("CausalBias should
not be used with causal=True") and kiln's functional raises its RuntimeError
for an explicit mask with is_causal. ``CausalBias._dispatch`` (torch's entry
point) behaves exactly as torch's, that ValueError included.
"""

from __future__ import annotations

import warnings
from enum import IntEnum, auto
from typing import Optional

from kiln import _C
from kiln._tensor import Tensor
from kiln.nn.functional import scaled_dot_product_attention

__all__ = ["causal_upper_left", "causal_lower_right", "CausalVariant", "CausalBias"]


class CausalVariant(IntEnum):
    """UPPER_LEFT: ``tril(ones(L, S))``, the triangle aligned to the top-left corner (is_causal=True).
    LOWER_RIGHT: ``tril(ones(L, S), diagonal=S - L)``, aligned to the bottom-right corner.
    The two agree when L == S."""

    UPPER_LEFT = auto()
    LOWER_RIGHT = auto()


def _causal_mask(variant: CausalVariant, seq_len_q: int, seq_len_kv: int, device=None):
    ones = _C._functions.ones((seq_len_q, seq_len_kv), dtype=_C.bool, device=device or "cpu")
    offset = 0 if variant == CausalVariant.UPPER_LEFT else seq_len_kv - seq_len_q
    return ones.tril(offset)


class CausalBias(Tensor):
    """A causal attention bias: the boolean [seq_len_q, seq_len_kv] mask of ``variant``, with
    ``variant``, ``seq_len_q`` and ``seq_len_kv`` attributes (see the module docstring)."""

    def __new__(cls, variant: CausalVariant, seq_len_q: int, seq_len_kv: int):
        if not isinstance(variant, CausalVariant):
            raise AssertionError(f"variant must be a CausalVariant, got {type(variant).__name__}")
        bias = _C._make_subclass(cls, _causal_mask(variant, seq_len_q, seq_len_kv), False)
        bias.variant = variant
        bias.seq_len_q = seq_len_q
        bias.seq_len_kv = seq_len_kv
        if seq_len_q > seq_len_kv and variant == CausalVariant.LOWER_RIGHT:
            warnings.warn("Lower right causal bias will produce NaNs in the output when seq_len_q > seq_len_kv!",
                          stacklevel=3)
        return bias

    def __init__(self, variant: CausalVariant, seq_len_q: int, seq_len_kv: int) -> None:
        pass  # everything happens in __new__ (the tensor's values are made there)

    def _upper_left(self, device):
        return _causal_mask(CausalVariant.UPPER_LEFT, self.seq_len_q, self.seq_len_kv, device)

    def _lower_right(self, device):
        return _causal_mask(CausalVariant.LOWER_RIGHT, self.seq_len_q, self.seq_len_kv, device)

    def _materialize(self, device=None):
        """The mask as a plain boolean kiln tensor (on the CPU unless ``device``)."""
        if self.variant == CausalVariant.UPPER_LEFT:
            return self._upper_left(device)
        return self._lower_right(device)

    @staticmethod
    def _dispatch(query, key, value, attn_mask: "CausalBias", dropout_p: float = 0.0, is_causal: bool = False,
                  scale: Optional[float] = None, enable_gqa: bool = False):
        """torch's CausalBias attention: is_causal=True refused; an upper-left (or square) bias is
        is_causal attention; a lower-right one attends through its materialised mask."""
        if is_causal:
            raise ValueError("CausalBias should not be used with causal=True")
        if attn_mask.seq_len_q == attn_mask.seq_len_kv or attn_mask.variant == CausalVariant.UPPER_LEFT:
            return scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=dropout_p,
                                                is_causal=True, scale=scale, enable_gqa=enable_gqa)
        if attn_mask.variant == CausalVariant.LOWER_RIGHT:
            return scaled_dot_product_attention(query, key, value, attn_mask=attn_mask._materialize(query.device),
                                                dropout_p=dropout_p, is_causal=False, scale=scale,
                                                enable_gqa=enable_gqa)
        raise ValueError(f"CausalBias.variant must be a CausalVariant type, but found: {attn_mask.variant}")

    def __repr__(self) -> str:
        return self._materialize().__repr__()

    __str__ = __repr__


def causal_upper_left(*size) -> CausalBias:
    """The UPPER_LEFT causal bias of ``size`` = (seq_len_q, seq_len_kv): the is_causal=True mask."""
    if len(size) != 2:
        raise AssertionError("causal_upper_left only supports 2D tensors")
    seq_len_q, seq_len_kv = size
    return CausalBias(CausalVariant.UPPER_LEFT, seq_len_q, seq_len_kv)


def causal_lower_right(*size) -> CausalBias:
    """The LOWER_RIGHT causal bias of ``size`` = (seq_len_q, seq_len_kv): the triangle aligned to
    the bottom-right corner (each of the last seq_len_q keys' queries sees the keys up to its own)."""
    if len(size) != 2:
        raise AssertionError("causal_lower_right only supports 2D tensors")
    seq_len_q, seq_len_kv = size
    return CausalBias(CausalVariant.LOWER_RIGHT, seq_len_q, seq_len_kv)
