"""Converters: elementwise arithmetic and comparisons (broadcasting, Python
scalars), activations, matrix products, reductions, casts."""

from __future__ import annotations

import math

from kiln.onnx._builder import FLOAT_DTYPES, ONNX_DTYPES
from kiln.onnx.errors import UnsupportedOperatorError
from kiln.onnx._operands import computation_dtype, dim, operand, reduce
from kiln.onnx._registry import converts


def _scaled(cx, x: str, factor, dtype: str) -> str:
    return x if factor == 1 else cx.b.op("Mul", [x, cx.b.constant(factor, dtype)])


# --- arithmetic ------------------------------------------------------------------------------------------
@converts("kiln::add.Tensor", "kiln::add.Scalar", args="self other alpha")
def _add(cx, a):
    t = a.out_dtype()
    other = _scaled(cx, operand(cx, a, "other", t), a.value("alpha", 1), t)
    return cx.b.op("Add", [operand(cx, a, "self", t), other])


@converts("kiln::sub.Tensor", "kiln::sub.Scalar", args="self other alpha")
def _sub(cx, a):
    t = a.out_dtype()
    other = _scaled(cx, operand(cx, a, "other", t), a.value("alpha", 1), t)
    return cx.b.op("Sub", [operand(cx, a, "self", t), other])


@converts("kiln::rsub.Tensor", "kiln::rsub.Scalar", args="self other alpha")
def _rsub(cx, a):
    t = a.out_dtype()
    x = _scaled(cx, operand(cx, a, "self", t), a.value("alpha", 1), t)
    return cx.b.op("Sub", [operand(cx, a, "other", t), x])


def _binary(op_type):
    def convert(cx, a):
        t = a.out_dtype()
        return cx.b.op(op_type, [operand(cx, a, "self", t), operand(cx, a, "other", t)])
    return convert


converts("kiln::mul.Tensor", "kiln::mul.Scalar", args="self other")(_binary("Mul"))
converts("kiln::maximum", "kiln::max.other", args="self other")(_binary("Max"))
converts("kiln::minimum", "kiln::min.other", args="self other")(_binary("Min"))
converts("kiln::logical_and", args="self other")(_binary("And"))
converts("kiln::logical_or", args="self other")(_binary("Or"))


@converts("kiln::floor_divide", "kiln::floor_divide.Scalar", args="self other")
def _floor_divide(cx, a):
    return _divide(cx, a, "floor")


@converts("kiln::div.Tensor", "kiln::div.Scalar", "kiln::div.Tensor_mode", "kiln::div.Scalar_mode",
          args="self other rounding_mode")
def _div(cx, a):
    return _divide(cx, a, a.value("rounding_mode"))


def _divide(cx, a, mode):
    t = a.out_dtype()
    if mode is None or t in FLOAT_DTYPES:
        q = cx.b.op("Div", [operand(cx, a, "self", t), operand(cx, a, "other", t)])
        if mode == "floor":
            return cx.b.op("Floor", [q])
        if mode == "trunc":
            return cx.b.op("Where", [cx.b.op("Less", [q, cx.b.constant(0, t)]), cx.b.op("Ceil", [q]),
                                     cx.b.op("Floor", [q])])
        return q
    # Integer division with a rounding mode: computed in float64 (exact for the sizes models divide).
    q = cx.b.op("Div", [operand(cx, a, "self", "float64"), operand(cx, a, "other", "float64")])
    if mode == "floor":
        q = cx.b.op("Floor", [q])
    else:
        q = cx.b.op("Where", [cx.b.op("Less", [q, cx.b.constant(0, "float64")]), cx.b.op("Ceil", [q]),
                              cx.b.op("Floor", [q])])
    return cx.b.cast(q, "float64", t)


@converts("kiln::remainder.Tensor", "kiln::remainder.Scalar", "kiln::remainder.Scalar_Tensor", args="self other")
def _remainder(cx, a):
    """Python's remainder (the sign of the divisor): x - floor(x / y) * y for floats, Mod for integers."""
    t = a.out_dtype()
    x, y = operand(cx, a, "self", t), operand(cx, a, "other", t)
    if t not in FLOAT_DTYPES:
        return cx.b.op("Mod", [x, y], fmod=0)
    return cx.b.op("Sub", [x, cx.b.op("Mul", [cx.b.op("Floor", [cx.b.op("Div", [x, y])]), y])])


@converts("kiln::fmod.Tensor", "kiln::fmod.Scalar", args="self other")
def _fmod(cx, a):
    t = a.out_dtype()
    return cx.b.op("Mod", [operand(cx, a, "self", t), operand(cx, a, "other", t)], fmod=1)


def _bitwise(bool_op, int_op):
    def convert(cx, a):
        t = a.out_dtype()
        return cx.b.op(bool_op if t == "bool" else int_op, [operand(cx, a, "self", t), operand(cx, a, "other", t)])
    return convert


for _name, _bool_op, _int_op in (("and", "And", "BitwiseAnd"), ("or", "Or", "BitwiseOr"), ("xor", "Xor", "BitwiseXor")):
    converts(f"kiln::bitwise_{_name}.Tensor", f"kiln::bitwise_{_name}.Scalar", f"kiln::bitwise_{_name}.Scalar_Tensor",
             args="self other")(_bitwise(_bool_op, _int_op))
converts("kiln::logical_xor", args="self other")(_binary("Xor"))
converts("kiln::isnan", args="self")(lambda cx, a: cx.b.op("IsNaN", [a.tensor("self")]))
converts("kiln::isinf", args="self")(lambda cx, a: cx.b.op("IsInf", [a.tensor("self")]))


@converts("kiln::isfinite", args="self")
def _isfinite(cx, a):
    x = a.tensor("self")
    return cx.b.op("Not", [cx.b.op("Or", [cx.b.op("IsInf", [x]), cx.b.op("IsNaN", [x])])])


@converts("kiln::pow.Tensor_Scalar", "kiln::pow.Tensor_Tensor", "kiln::pow.Scalar", args="self exponent")
def _pow(cx, a):
    t = a.out_dtype()
    e = a.value("exponent")
    if e == 2 and not isinstance(e, bool):
        x = operand(cx, a, "self", t)
        return cx.b.op("Mul", [x, x])
    if e == 0.5:
        return cx.b.op("Sqrt", [operand(cx, a, "self", t)])
    return cx.b.op("Pow", [operand(cx, a, "self", t), operand(cx, a, "exponent", t)])


@converts("kiln::square", args="self")
def _square(cx, a):
    x = operand(cx, a, "self", a.out_dtype())
    return cx.b.op("Mul", [x, x])


def _compare(op_type, negate=False):
    def convert(cx, a):
        t = computation_dtype(a, "self", "other")
        r = cx.b.op(op_type, [operand(cx, a, "self", t), operand(cx, a, "other", t)])
        return cx.b.op("Not", [r]) if negate else r
    return convert


for _name, _op, _neg in (("eq", "Equal", False), ("ne", "Equal", True), ("lt", "Less", False),
                         ("le", "LessOrEqual", False), ("gt", "Greater", False), ("ge", "GreaterOrEqual", False)):
    converts(f"kiln::{_name}.Tensor", f"kiln::{_name}.Scalar", args="self other")(_compare(_op, _neg))


@converts("kiln::where.self", "kiln::where.ScalarOther", "kiln::where.ScalarSelf", "kiln::where.Scalar",
          args="condition self other")
def _where(cx, a):
    t = a.out_dtype()
    cond = operand(cx, a, "condition", "bool")
    return cx.b.op("Where", [cond, operand(cx, a, "self", t), operand(cx, a, "other", t)])


@converts("kiln::masked_fill.Scalar", "kiln::masked_fill.Tensor", args="self mask value")
def _masked_fill(cx, a):
    t = a.out_dtype()
    return cx.b.op("Where", [operand(cx, a, "mask", "bool"), operand(cx, a, "value", t), operand(cx, a, "self", t)])


@converts("kiln::clamp", "kiln::clamp.Tensor", args="self min max")
def _clamp(cx, a):
    t = a.out_dtype()
    x = operand(cx, a, "self", t)
    if a.has("min"):
        x = cx.b.op("Max", [x, operand(cx, a, "min", t)])
    if a.has("max"):
        x = cx.b.op("Min", [x, operand(cx, a, "max", t)])
    return x


@converts("kiln::clamp_min", "kiln::clamp_min.Tensor", args="self min")
def _clamp_min(cx, a):
    t = a.out_dtype()
    return cx.b.op("Max", [operand(cx, a, "self", t), operand(cx, a, "min", t)])


@converts("kiln::clamp_max", "kiln::clamp_max.Tensor", args="self max")
def _clamp_max(cx, a):
    t = a.out_dtype()
    return cx.b.op("Min", [operand(cx, a, "self", t), operand(cx, a, "max", t)])


# --- unary and activations ----------------------------------------------------------------------------------
def _unary(op_type, **attrs):
    def convert(cx, a):
        return cx.b.op(op_type, [operand(cx, a, "self", a.out_dtype())], **attrs)
    return convert


for _name, _op in (("neg", "Neg"), ("abs", "Abs"), ("exp", "Exp"), ("log", "Log"), ("sqrt", "Sqrt"),
                   ("reciprocal", "Reciprocal"), ("sin", "Sin"), ("cos", "Cos"), ("tan", "Tan"), ("tanh", "Tanh"),
                   ("sigmoid", "Sigmoid"), ("relu", "Relu"), ("erf", "Erf"), ("floor", "Floor"), ("ceil", "Ceil"),
                   ("round", "Round"), ("sign", "Sign"), ("logical_not", "Not"), ("hardswish", "HardSwish"),
                   ("selu", "Selu"), ("softsign", "Softsign"), ("atan", "Atan"), ("asin", "Asin"),
                   ("acos", "Acos"), ("sinh", "Sinh"), ("cosh", "Cosh")):
    converts(f"kiln::{_name}", args="self")(_unary(_op))
converts("kiln::hardsigmoid", args="self")(_unary("HardSigmoid", alpha=1.0 / 6, beta=0.5))
converts("kiln::bitwise_not", args="self")(_unary("Not"))


@converts("kiln::rsqrt", args="self")
def _rsqrt(cx, a):
    return cx.b.op("Reciprocal", [cx.b.op("Sqrt", [operand(cx, a, "self", a.out_dtype())])])


@converts("kiln::log1p", args="self")
def _log1p(cx, a):
    t = a.out_dtype()
    return cx.b.op("Log", [cx.b.op("Add", [operand(cx, a, "self", t), cx.b.constant(1, t)])])


@converts("kiln::expm1", args="self")
def _expm1(cx, a):
    t = a.out_dtype()
    return cx.b.op("Sub", [cx.b.op("Exp", [operand(cx, a, "self", t)]), cx.b.constant(1, t)])


@converts("kiln::mish", args="self")
def _mish(cx, a):
    x = operand(cx, a, "self", a.out_dtype())
    return cx.b.op("Mul", [x, cx.b.op("Tanh", [cx.b.op("Softplus", [x])])])


@converts("kiln::trunc", args="self")
def _trunc(cx, a):
    t = a.out_dtype()
    x = operand(cx, a, "self", t)
    return cx.b.op("Where", [cx.b.op("Less", [x, cx.b.constant(0, t)]), cx.b.op("Ceil", [x]), cx.b.op("Floor", [x])])


@converts("kiln::silu", args="self")
def _silu(cx, a):
    x = operand(cx, a, "self", a.out_dtype())
    return cx.b.op("Mul", [x, cx.b.op("Sigmoid", [x])])


@converts("kiln::gelu", args="self approximate")
def _gelu(cx, a):
    t = a.out_dtype()
    x = operand(cx, a, "self", t)
    if cx.b.opset >= 20:
        return cx.b.op("Gelu", [x], approximate=a.value("approximate", "none"))
    c = lambda v: cx.b.constant(v, t)  # noqa: E731
    if a.value("approximate", "none") == "tanh":
        inner = cx.b.op("Mul", [c(math.sqrt(2 / math.pi)),
                                cx.b.op("Add", [x, cx.b.op("Mul", [c(0.044715), cx.b.op("Mul", [x, cx.b.op(
                                    "Mul", [x, x])])])])])
        return cx.b.op("Mul", [cx.b.op("Mul", [c(0.5), x]), cx.b.op("Add", [c(1), cx.b.op("Tanh", [inner])])])
    erf = cx.b.op("Erf", [cx.b.op("Div", [x, c(math.sqrt(2))])])
    return cx.b.op("Mul", [cx.b.op("Mul", [c(0.5), x]), cx.b.op("Add", [c(1), erf])])


@converts("kiln::leaky_relu", args="self negative_slope")
def _leaky_relu(cx, a):
    return cx.b.op("LeakyRelu", [operand(cx, a, "self", a.out_dtype())],
                   alpha=float(a.value("negative_slope", 0.01)))


@converts("kiln::elu", args="self alpha scale input_scale")
def _elu(cx, a):
    t = a.out_dtype()
    if a.value("scale", 1) != 1 or a.value("input_scale", 1) != 1:
        x = operand(cx, a, "self", t)
        x = _scaled(cx, x, a.value("input_scale", 1), t)
        return _scaled(cx, cx.b.op("Elu", [x], alpha=float(a.value("alpha", 1))), a.value("scale", 1), t)
    return cx.b.op("Elu", [operand(cx, a, "self", t)], alpha=float(a.value("alpha", 1)))


@converts("kiln::celu", args="self alpha")
def _celu(cx, a):
    return cx.b.op("Celu", [operand(cx, a, "self", a.out_dtype())], alpha=float(a.value("alpha", 1)))


@converts("kiln::softplus", args="self beta threshold")
def _softplus(cx, a):
    t = a.out_dtype()
    x = operand(cx, a, "self", t)
    beta, threshold = a.value("beta", 1), a.value("threshold", 20)
    bx = _scaled(cx, x, beta, t)
    soft = cx.b.op("Softplus", [bx])
    if beta != 1:
        soft = cx.b.op("Div", [soft, cx.b.constant(beta, t)])
    return cx.b.op("Where", [cx.b.op("Greater", [bx, cx.b.constant(threshold, t)]), x, soft])


@converts("kiln::hardtanh", args="self min_val max_val")
def _hardtanh(cx, a):
    t = a.out_dtype()
    return cx.b.op("Clip", [operand(cx, a, "self", t), cx.b.constant(a.value("min_val", -1), t),
                            cx.b.constant(a.value("max_val", 1), t)])


@converts("kiln::relu6", args="self")
def _relu6(cx, a):
    t = a.out_dtype()
    return cx.b.op("Clip", [operand(cx, a, "self", t), cx.b.constant(0, t), cx.b.constant(6, t)])


@converts("kiln::threshold", args="self threshold value")
def _threshold(cx, a):
    t = a.out_dtype()
    x = operand(cx, a, "self", t)
    return cx.b.op("Where", [cx.b.op("Greater", [x, cx.b.constant(a.value("threshold"), t)]), x,
                             cx.b.constant(a.value("value"), t)])


# --- matrix products -----------------------------------------------------------------------------------------
converts("kiln::mm", "kiln::bmm", args="self mat2")(
    lambda cx, a: cx.b.op("MatMul", [a.tensor("self"), a.tensor("mat2")]))
converts("kiln::matmul", args="self other")(lambda cx, a: cx.b.op("MatMul", [a.tensor("self"), a.tensor("other")]))


@converts("kiln::addmm", "kiln::baddbmm", args="self mat1 mat2 beta alpha")
def _addmm(cx, a):
    t = a.out_dtype()
    product = _scaled(cx, cx.b.op("MatMul", [a.tensor("mat1"), a.tensor("mat2")]), a.value("alpha", 1), t)
    beta = a.value("beta", 1)
    if beta == 0:
        return product
    return cx.b.op("Add", [_scaled(cx, operand(cx, a, "self", t), beta, t), product])


# baddbmm's schema names its matrices batch1/batch2: the positional mapping above reads them as mat1/mat2.


@converts("kiln::linear", args="input weight bias")
def _linear(cx, a):
    wt = cx.b.op("Transpose", [a.tensor("weight")], perm=[1, 0])
    y = cx.b.op("MatMul", [a.tensor("input"), wt])
    bias = a.optional_tensor("bias")
    return cx.b.op("Add", [y, bias]) if bias is not None else y


# --- reductions ---------------------------------------------------------------------------------------------
def _dims(a, name="dim"):
    d = a.value(name)
    if d is None or d == []:
        return None
    return [dim(x, a.rank("self")) for x in ([d] if isinstance(d, int) else d)]


def _reduction(op_type):
    def convert(cx, a):
        t = a.out_dtype()
        x = operand(cx, a, "self", t) if op_type in ("ReduceSum", "ReduceMean", "ReduceProd") else a.tensor("self")
        return reduce(cx, op_type, x, _dims(a), bool(a.value("keepdim", False)))
    return convert


converts("kiln::sum", "kiln::sum.dim_IntList", args="self dim keepdim dtype")(_reduction("ReduceSum"))
converts("kiln::mean", "kiln::mean.dim", args="self dim keepdim dtype")(_reduction("ReduceMean"))
converts("kiln::prod", "kiln::prod.dim_int", args="self dim keepdim dtype")(_reduction("ReduceProd"))
converts("kiln::amax", "kiln::max", args="self dim keepdim")(_reduction("ReduceMax"))
converts("kiln::amin", "kiln::min", args="self dim keepdim")(_reduction("ReduceMin"))
converts("kiln::logsumexp", args="self dim keepdim")(_reduction("ReduceLogSumExp"))


def _arg_reduction(op_type):
    def convert(cx, a):
        x = a.tensor("self")
        d = a.value("dim")
        keep = 1 if a.value("keepdim", False) else 0
        if d is None:
            x = cx.b.op("Reshape", [x, cx.b.ints([-1])])
            return cx.b.op(op_type, [x], axis=0, keepdims=0)
        return cx.b.op(op_type, [x], axis=dim(d, a.rank("self")), keepdims=keep)
    return convert


converts("kiln::argmax", args="self dim keepdim")(_arg_reduction("ArgMax"))
converts("kiln::argmin", args="self dim keepdim")(_arg_reduction("ArgMin"))


def _value_and_index(reduce_op, arg_op):
    def convert(cx, a):
        x = a.tensor("self")
        d = dim(a.value("dim"), a.rank("self"))
        keep = bool(a.value("keepdim", False))
        values = reduce(cx, reduce_op, x, [d], keep)
        indices = cx.b.op(arg_op, [x], axis=d, keepdims=1 if keep else 0)
        return [values, indices]
    return convert


converts("kiln::max.dim", args="self dim keepdim")(_value_and_index("ReduceMax", "ArgMax"))
converts("kiln::min.dim", args="self dim keepdim")(_value_and_index("ReduceMin", "ArgMin"))


def _moment(take_sqrt):
    def convert(cx, a):
        x = a.tensor("self")
        dims = _dims(a)
        keep = bool(a.value("keepdim", False))
        correction = a.value("correction")
        if correction is None:
            correction = 1 if a.value("unbiased", True) else 0
        mean = reduce(cx, "ReduceMean", x, dims, True)
        centered = cx.b.op("Sub", [x, mean])
        sq = reduce(cx, "ReduceSum", cx.b.op("Mul", [centered, centered]), dims, keep)
        shape = cx.b.op("Shape", [x])
        if dims is None:
            count = cx.b.op("ReduceProd", [shape], keepdims=0)
        else:
            count = cx.b.op("ReduceProd", [cx.b.op("Gather", [shape, cx.b.ints(dims)], axis=0)], keepdims=0)
        t = a.out_dtype()
        denominator = cx.b.op("Sub", [cx.b.cast(count, "int64", t), cx.b.constant(correction, t)])
        var = cx.b.op("Div", [sq, denominator])
        return cx.b.op("Sqrt", [var]) if take_sqrt else var
    return convert


converts("kiln::var", "kiln::var.dim", "kiln::var.correction", args="self dim unbiased keepdim")(_moment(False))
converts("kiln::std", "kiln::std.dim", "kiln::std.correction", args="self dim unbiased keepdim")(_moment(True))


@converts("kiln::cumsum", args="self dim dtype")
def _cumsum(cx, a):
    t = a.out_dtype()
    return cx.b.op("CumSum", [operand(cx, a, "self", t), cx.b.constant(dim(a.value("dim"), a.rank("self")), "int64")])


def _all_any(is_all):
    def convert(cx, a):
        x = cx.b.cast(a.tensor("self"), a.dtype("self"), "int64")
        x = cx.b.op("Not", [cx.b.op("Equal", [x, cx.b.constant(0, "int64")])])
        x = cx.b.cast(x, "bool", "int64")
        d = a.value("dim")
        dims = None if d is None else [dim(d, a.rank("self"))]
        r = reduce(cx, "ReduceMin" if is_all else "ReduceMax", x, dims, bool(a.value("keepdim", False)))
        return cx.b.cast(r, "int64", "bool")
    return convert


converts("kiln::all", "kiln::all.dim", args="self dim keepdim")(_all_any(True))
converts("kiln::any", "kiln::any.dim", args="self dim keepdim")(_all_any(False))


# --- casts -----------------------------------------------------------------------------------------------------
@converts("kiln::_to_copy", args="self")
def _to_copy(cx, a):
    t = a.out_dtype()
    if t not in ONNX_DTYPES:
        raise UnsupportedOperatorError(f"kiln.onnx.export: _to_copy to {t} has no ONNX type")
    return cx.b.op("Cast", [a.tensor("self")], to=ONNX_DTYPES[t]) if a.dtype("self") != t else cx.b.op(
        "Identity", [a.tensor("self")])


@converts("kiln::linalg_vector_norm", args="self ord dim keepdim dtype")
def _vector_norm(cx, a):
    t = a.out_dtype()
    x = operand(cx, a, "self", t)
    order = a.value("ord", 2)
    dims, keep = _dims(a), bool(a.value("keepdim", False))
    if order == 2:
        return reduce(cx, "ReduceL2", x, dims, keep)
    if order == 1:
        return reduce(cx, "ReduceL1", x, dims, keep)
    if order == float("inf"):
        return reduce(cx, "ReduceMax", cx.b.op("Abs", [x]), dims, keep)
    if order == float("-inf"):
        return reduce(cx, "ReduceMin", cx.b.op("Abs", [x]), dims, keep)
    if order == 0:
        nonzero = cx.b.cast(cx.b.op("Not", [cx.b.op("Equal", [x, cx.b.constant(0, t)])]), "bool", t)
        return reduce(cx, "ReduceSum", nonzero, dims, keep)
    powered = cx.b.op("Pow", [cx.b.op("Abs", [x]), cx.b.constant(order, t)])
    return cx.b.op("Pow", [reduce(cx, "ReduceSum", powered, dims, keep), cx.b.constant(1.0 / order, t)])


@converts("kiln::addcmul", "kiln::addcdiv", args="self tensor1 tensor2 value")
def _addc(cx, a):
    t = a.out_dtype()
    combine = "Mul" if a.node.kind == "kiln::addcmul" else "Div"
    term = cx.b.op(combine, [operand(cx, a, "tensor1", t), operand(cx, a, "tensor2", t)])
    return cx.b.op("Add", [operand(cx, a, "self", t), _scaled(cx, term, a.value("value", 1), t)])


@converts("kiln::lerp.Scalar", "kiln::lerp.Tensor", args="self end weight")
def _lerp(cx, a):
    t = a.out_dtype()
    x = operand(cx, a, "self", t)
    step = cx.b.op("Sub", [operand(cx, a, "end", t), x])
    return cx.b.op("Add", [x, cx.b.op("Mul", [operand(cx, a, "weight", t), step])])


@converts("kiln::topk", args="self k dim largest sorted")
def _topk(cx, a):
    axis = dim(a.value("dim", -1), a.rank("self"))
    values, indices = cx.b.op("TopK", [a.tensor("self"), cx.b.ints([a.value("k")])], outputs=2, axis=axis,
                              largest=1 if a.value("largest", True) else 0, sorted=1)
    return [values, indices]


@converts("kiln::sort", "kiln::sort.stable", args="self dim descending")
def _sort(cx, a):
    """A sort as a TopK of the whole axis (ONNX TopK keeps equal values in index order, as a stable sort)."""
    descending = a.value("descending", False)
    axis = dim(a.value("dim", -1), a.rank("self"))
    length = cx.b.op("Shape", [a.tensor("self")], start=axis, end=axis + 1)
    values, indices = cx.b.op("TopK", [a.tensor("self"), length], outputs=2, axis=axis,
                              largest=1 if descending else 0, sorted=1)
    return [values, indices]
