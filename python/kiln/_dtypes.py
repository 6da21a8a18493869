"""Type-promotion queries PyTorch exposes in Python: result_type, promote_types,
can_cast, and the is_floating_point / is_complex predicates. The promotion
itself is the C++ rule every op uses (Note [Promotion by category]): the
queries ask it through an add of empty operands, so they cannot disagree with
what an op would compute."""

from __future__ import annotations

import builtins

from kiln import _C


def _empty_like_for_promotion(value):
    """An empty stand-in with `value`'s promotion role: a tensor of its dtype with
    the same dimensionality class (0-dim or not), or the Python number itself."""
    if isinstance(value, _C.TensorBase):
        if value.dim() == 0:
            return _C._functions.empty([], dtype=value.dtype)
        return _C._functions.empty([0], dtype=value.dtype)
    if isinstance(value, (builtins.bool, builtins.int, builtins.float)):
        return value
    raise TypeError(f"result_type(): argument must be a Tensor or a Number, not {type(value).__name__}")


def result_type(tensor1, tensor2):
    """The dtype an arithmetic op on ``tensor1`` and ``tensor2`` (tensors or numbers) returns."""
    a, b = _empty_like_for_promotion(tensor1), _empty_like_for_promotion(tensor2)
    if isinstance(a, _C.TensorBase):
        return _C._functions.add(a, b).dtype
    if isinstance(b, _C.TensorBase):
        return _C._functions.add(b, a).dtype
    # two numbers: the category of the higher one, floats in the default dtype
    if isinstance(a, builtins.float) or isinstance(b, builtins.float):
        import kiln

        return kiln.get_default_dtype()
    if isinstance(a, builtins.bool) and isinstance(b, builtins.bool):
        return _C.bool
    return _C.int64


def promote_types(type1, type2):
    """The smallest dtype both ``type1`` and ``type2`` convert to without losing category."""
    return result_type(_C._functions.empty([0], dtype=type1), _C._functions.empty([0], dtype=type2))


def can_cast(from_, to):
    """Whether PyTorch's casting rules allow ``from_`` to ``to`` (no float to integer, nothing but bool to bool)."""
    if from_.is_floating_point and not to.is_floating_point:
        return False
    if from_ != _C.bool and to == _C.bool:
        return False
    return True


def is_floating_point(input) -> bool:
    """Whether ``input``'s dtype is a floating point type."""
    return input.dtype.is_floating_point


def is_complex(input) -> bool:
    """Whether ``input``'s dtype is complex (kiln has no complex dtypes: always False)."""
    return input.dtype.is_complex
