"""parameters_to_vector / vector_to_parameters: one flat vector of all parameters and back."""

from __future__ import annotations

from typing import Iterable

from kiln import _C

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters: Iterable) -> "_C.TensorBase":
    """The parameters flattened and concatenated (differentiable, like torch's)."""
    return _C._functions.cat([param.reshape(-1) for param in parameters])


def vector_to_parameters(vec, parameters: Iterable) -> None:
    """Writes slices of ``vec`` into the parameters' ``.data`` (shapes taken from the parameters)."""
    if not isinstance(vec, _C.TensorBase):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}".replace("torch.", "kiln."))
    pointer = 0
    for param in parameters:
        count = param.numel()
        param.data = vec[pointer:pointer + count].view_as(param).data
        pointer += count
