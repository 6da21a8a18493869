"""parameters_to_vector / vector_to_parameters: one flat vector of all parameters and back."""

from __future__ import annotations

from typing import Iterable

from kiln import _C
from kiln.autograd.grad_mode import no_grad

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters: Iterable) -> "_C.TensorBase":
    """The parameters flattened and concatenated (differentiable, like torch's)."""
    return _C._functions.cat([param.reshape(-1) for param in parameters])


def vector_to_parameters(vec, parameters: Iterable) -> None:
    """Writes slices of ``vec`` into the parameters, in place (torch rebinds each
    parameter's ``.data`` to a view of ``vec``; kiln copies the values)."""
    if not isinstance(vec, _C.TensorBase):
        raise TypeError(f"expected kiln.Tensor, but got: {type(vec).__module__}.{type(vec).__name__}")
    pointer = 0
    for param in parameters:
        count = param.numel()
        with no_grad():
            param.copy_(vec[pointer:pointer + count].view_as(param))
        pointer += count
