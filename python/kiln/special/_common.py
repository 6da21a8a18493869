"""Shared plumbing for kiln.special's composite functions: argument checks with
torch's words, dtype promotion, float64 evaluation, polynomial evaluation and
out= handling. Nothing here is a torch function itself."""

from __future__ import annotations

import math

import kiln as _kiln_package  # its attributes are looked up per call: kiln/__init__.py is mid-import here
from kiln import _C

_f = _C._functions

FLOAT64_MAX = 1.7976931348623157e308
EULER_GAMMA = 0.57721566490153286061
SQRT_PI = math.sqrt(math.pi)
SQRT_2PI = math.sqrt(2 * math.pi)


def kiln():
    """The kiln package (kiln.where, kiln.lgamma, ...)."""
    return _kiln_package


def float_input(op, input):
    """``input`` as a floating tensor (integers and bool become the default dtype); torch's TypeError for a
    non-tensor."""
    if not isinstance(input, _C.TensorBase):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return input if input.dtype.is_floating_point else input.to(_kiln_package.get_default_dtype())


def is_tensor(value) -> bool:
    return isinstance(value, _C.TensorBase)


def check_tensor(op, value, name="input", position=1):
    """torch's TypeError for a non-tensor argument of a tensor-only function."""
    if not is_tensor(value):
        raise TypeError(f"{op}(): argument '{name}' (position {position}) must be Tensor, not {type(value).__name__}")
    return value


def _dtype_word(dtype) -> str:
    names = {"float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double", "int64": "Long",
             "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}
    return names.get(str(dtype).removeprefix("kiln."), str(dtype))


def not_implemented(kernel, dtype, device="cpu"):
    return NotImplementedError(f'"{kernel}_{device}" not implemented for \'{_dtype_word(dtype)}\'')


def float_dtype(op, tensor, half_ok=False):
    """The floating dtype torch computes ``op`` in for ``tensor``: integers and bool give the default
    dtype; half precision raises torch's NotImplementedError unless ``half_ok``."""
    k = kiln()
    dtype = tensor.dtype
    if not dtype.is_floating_point:
        return k.get_default_dtype()
    if dtype in (k.float16, k.bfloat16) and not half_ok:
        raise not_implemented(op, dtype, tensor.device.type)
    return dtype


def as64(tensor):
    """A detached float64 copy of ``tensor`` (no autograd history)."""
    return tensor.detach().to(kiln().float64)


def horner(coefficients, t):
    """sum_i coefficients[i] t^i (lowest order first)."""
    result = t * 0 + coefficients[-1]
    for c in reversed(coefficients[:-1]):
        result = result * t + c
    return result


def where(cond, a, b):
    return kiln().where(cond, a, b)


def finish(result, out):
    if out is not None:
        return _f._copy_to_out(result, out)
    return result


def max_item(tensor, default=0.0):
    """The largest value of ``tensor`` as a Python float (``default`` when empty)."""
    if tensor.numel() == 0:
        return default
    return float(tensor.max().item())


def any_item(mask) -> bool:
    return mask.numel() > 0 and bool(mask.any().item())


def binary_operands(op, a, b, *, kernel=None, half_ok=False, names=("input", "other"), scalars=True, detach=True):
    """Two operands as tensors of torch's result dtype (integers promote to the default dtype), broadcast
    together. ``scalars``: one (not both) may be a Python number, as torch's Tensor/Number overloads."""
    k = kiln()
    kernel = kernel or op
    a_tensor, b_tensor = is_tensor(a), is_tensor(b)
    if not scalars:
        check_tensor(op, a, names[0], 1)
        check_tensor(op, b, names[1], 2)
    elif not (a_tensor or b_tensor) or not all(
            is_tensor(v) or (isinstance(v, (int, float)) and not isinstance(v, complex)) for v in (a, b)):
        got = ", ".join(type(v).__name__ if not is_tensor(v) else "Tensor" for v in (a, b))
        raise TypeError(
            f"{op}() received an invalid combination of arguments - got ({got}), but expected one of:\n"
            f" * (Tensor {names[0]}, Tensor {names[1]}, *, Tensor out = None)\n"
            f" * (Number {'self' if names[0] == 'input' else names[0]}, Tensor {names[1]}, *, Tensor out = None)\n"
            f" * (Tensor {names[0]}, Number {names[1]}, *, Tensor out = None)\n")
    dtype = k.result_type(a, b)
    if not dtype.is_floating_point:
        dtype = k.get_default_dtype()
    if dtype in (k.float16, k.bfloat16) and not half_ok:
        raise not_implemented(kernel, dtype)
    device = a.device if a_tensor else b.device
    a = (a.detach() if detach else a).to(dtype) if a_tensor else k.tensor(float(a), dtype=dtype, device=device)
    b = (b.detach() if detach else b).to(dtype) if b_tensor else k.tensor(float(b), dtype=dtype, device=device)
    a, b = k.broadcast_tensors(a, b)
    return a, b, dtype
