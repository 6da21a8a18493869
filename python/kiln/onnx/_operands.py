"""Helpers the converters share: operands cast to a computation dtype, Python
scalars as constants, reductions across opsets, dims made non-negative."""

from __future__ import annotations

from kiln.onnx._builder import FLOAT_DTYPES
from kiln.onnx._registry import Tensor
from kiln.onnx._symbolic import SymInt


def operand(cx, a, name: str, dtype: str) -> str:
    """Argument ``name`` as an ONNX tensor of ``dtype``: a tensor cast, a scalar literal as a constant."""
    v = a.value(name)
    if isinstance(v, Tensor):
        return cx.b.cast(v, a.dtype(name), dtype)
    if isinstance(v, SymInt):  # a size of a dynamic axis used as a number (x / x.size(1))
        return cx.b.cast(cx.b.op("Reshape", [cx.b.scalar_int(v), cx.b.ints([])]), "int64", dtype)
    return cx.b.constant(v, dtype)


def computation_dtype(a, *names: str) -> str:
    """The dtype two operands meet in for a comparison (kiln's promotion, for the cases models use):
    a floating operand wins; a Python float with integer tensors gives float32; else the tensors' dtype."""
    tensor_dtypes = [a.dtype(n) for n in names if isinstance(a.value(n), Tensor)]
    floats = [d for d in tensor_dtypes if d in FLOAT_DTYPES]
    if floats:
        return max(floats, key=FLOAT_DTYPES.index) if len(set(floats)) == 1 else "float32"
    if any(isinstance(a.value(n), float) for n in names):
        return "float32"
    ints = [d for d in tensor_dtypes if d != "bool"]
    if ints:
        return "int64" if "int64" in ints else ints[0]
    if any(isinstance(a.value(n), int) and not isinstance(a.value(n), bool) for n in names):
        return "int64"
    return "bool"


def dim(d: int, rank: int) -> int:
    return d + rank if d < 0 else d


def reduce(cx, op_type: str, x: str, axes, keepdims: bool) -> str:
    """``op_type`` (ReduceSum, ReduceMean, ReduceMax, ...) over ``axes`` (None: all) across opsets: the axes are an
    input from opset 18 (13 for ReduceSum), an attribute before."""
    keep = 1 if keepdims else 0
    axes_input_since = 13 if op_type == "ReduceSum" else 18
    if axes is None:
        return cx.b.op(op_type, [x], keepdims=keep)
    axes = list(axes)
    if cx.b.opset >= axes_input_since:
        return cx.b.op(op_type, [x, cx.b.ints(axes)], keepdims=keep)
    return cx.b.op(op_type, [x], axes=axes, keepdims=keep)


def unsqueeze(cx, x: str, axes: list) -> str:
    return cx.b.op("Unsqueeze", [x, cx.b.ints(axes)])


def squeeze(cx, x: str, axes: list) -> str:
    return cx.b.op("Squeeze", [x, cx.b.ints(axes)])
