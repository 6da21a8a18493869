"""Searching sorted boundaries and sets: torch.bucketize and torch.isin."""

from __future__ import annotations

from kiln import _C
from kiln._arguments import _require_tensor, checked_signature
from kiln._creation import tensor

_F = _C._functions


@checked_signature("bucketize(Any input, Tensor boundaries, *, bool out_int32, bool right, Tensor? out)")
def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The index of each input value's bucket among the sorted 1-D boundaries (searchsorted with the operands
    swapped)."""
    _require_tensor(boundaries, "bucketize", "boundaries", 2)
    if isinstance(input, bool) or not isinstance(input, (_C.TensorBase, int, float, complex)):
        raise TypeError(f"bucketize() received an invalid combination of arguments - got ({type(input).__name__}, "
                        f"Tensor), but expected one of:\n * (Tensor input, Tensor boundaries, *, "
                        f"bool out_int32 = False, bool right = False, Tensor out = None)\n"
                        f" * (Number self, Tensor boundaries, *, bool out_int32 = False, bool right = False)\n")
    if boundaries.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})")
    kwargs = {"out_int32": out_int32, "right": right}
    if out is not None:
        kwargs["out"] = out
    return _C._functions.searchsorted(boundaries, input, **kwargs)


@checked_signature("isin(Any elements, Any test_elements, *, bool assume_unique, bool invert)")
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of ``elements`` occurs in ``test_elements`` (either may be a scalar)."""
    if not isinstance(elements, _C.TensorBase) and not isinstance(test_elements, _C.TensorBase):
        raise TypeError("isin() received an invalid combination of arguments")
    if not isinstance(elements, _C.TensorBase):
        elements = tensor(elements, dtype=test_elements.dtype)
    if not isinstance(test_elements, _C.TensorBase):
        test_elements = tensor(test_elements, dtype=elements.dtype)
    test = test_elements.reshape(-1)
    if test.numel() == 0:
        found = _F.zeros(elements.shape, dtype=_C.bool)
    else:
        found = (elements.unsqueeze(-1) == test).any(-1)
    return ~found if invert else found
