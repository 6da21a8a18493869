"""Inputs the pointwise tests share (test_pointwise_binary.py and the other binary
suites, unary_cases.py): operand values of each dtype and value kind, built
identically as a kiln and a torch tensor, and Python numbers for Scalar operands."""

from __future__ import annotations

import numpy as np
import torch

import kiln
from torch_compare import kiln_dtype, torch_dtype

FLOATS = ("float32", "float64", "float16", "bfloat16")
INTS = ("int8", "int16", "int32", "int64", "uint8")

# --- inputs ------------------------------------------------------------------------

# Value kinds: what an operand may hold so both libraries are asked well-defined questions.
#   any: a spread of values (floats include nan, inf and -0.0)
#   nonzero: no zeros in integer dtypes (integer division by zero is its own test)
#   exponent: small exponents (integers -2..5, floats -2..2.5)
#   shift: shift counts -2..12 (past the width of int8 too)
#   weight: lerp weights in [-0.5, 1.5]
#   signed: any without NaN (copysign reads the sign bit, and torch's vectorised
#           float64 -> bfloat16 conversion makes NaNs with it set where kiln's does not)
KINDS = ("any", "nonzero", "exponent", "shift", "weight", "signed")

_INT_RANGES = {"int8": (-100, 100), "int16": (-3000, 3000), "int32": (-100000, 100000),
               "int64": (-10**12, 10**12), "uint8": (0, 255)}


def sample(dtype: str, shape: tuple, rng: np.random.Generator, kind: str = "any") -> np.ndarray:
    """Values for an operand of `dtype`, as float64, int64 or bool numpy data."""
    size = int(np.prod(shape)) if shape else 1
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    is_float = dtype in FLOATS
    if kind == "shift":
        return rng.integers(-2, 13, size=shape).astype(np.float64 if is_float else np.int64)
    if kind == "exponent":
        if is_float:
            return rng.integers(-4, 6, size=shape) * 0.5
        low = 0 if dtype == "uint8" else -2
        return rng.integers(low, 6, size=shape).astype(np.int64)
    if kind == "weight":
        return rng.integers(-2, 7, size=shape) * 0.25
    if is_float:
        values = rng.integers(-16, 17, size=shape) * 0.25
        if size >= 8:  # nan, infinities and a negative zero in every float operand big enough
            flat = values.reshape(-1)
            picks = rng.choice(size, size=4, replace=False)
            flat[picks] = [np.nan, np.inf, -np.inf, -0.0]
        if kind == "signed":
            values = np.where(np.isnan(values), -1.5, values)
        return values
    low, high = _INT_RANGES[dtype]
    values = rng.integers(low, high + 1, size=shape, dtype=np.int64)
    if kind == "nonzero":
        values[values == 0] = 1
    return values


def make_pair(data: np.ndarray, dtype: str):
    """(kiln tensor, torch tensor) with the same values converted to `dtype`."""
    t = torch.from_numpy(np.array(data)).to(torch_dtype(dtype))
    source = kiln.from_numpy(np.array(data))
    if str(source.dtype) == f"kiln.{dtype}":
        return source, t
    k = kiln.empty(list(data.shape), dtype=kiln_dtype(dtype))
    k.copy_(source)
    return k, t


def python_scalar(dtype: str, kind: str, category: str):
    """A Python number for a Scalar operand: an int, float or bool that suits `kind`."""
    if category == "bool":
        return True
    if kind == "shift":
        return 3 if category == "int" else 3.0
    if kind == "exponent":
        return 2 if category == "int" else 0.5
    if kind == "weight":
        return 0.75
    return 3 if category == "int" else -2.5
