"""The kernel math table (codegen/PointwiseMath.h) against eager: every op of
the table, compiled alone with the "default" backend under no_grad (one fused
LLVM kernel), equals the eager kernel over ordinary and special values (+-0,
+-inf, NaN, subnormals, integer min/max, division by zero) in float32,
float64, float16, bfloat16 and the integer dtypes where eager supports them.
Bit-identical except where Note [Compiled vector math] says otherwise."""

import numpy as np
import pytest

import kiln
from kiln import _C
from kiln.compiler._backends import kernel_counts

FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-40, -1e-40, float("inf"), float("-inf"), float("nan"),
          1e30, -1e30, 88.5, -100.0, 2.0, 1e-7, 7.25, 65504.0, 0.1]
FLOAT_DTYPES = [kiln.float32, kiln.float64, kiln.float16, kiln.bfloat16]
INT_DTYPES = [kiln.int8, kiln.uint8, kiln.int16, kiln.int32, kiln.int64]


def int_values(dtype):
    info = {kiln.int8: (-128, 127), kiln.uint8: (0, 255), kiln.int16: (-32768, 32767),
            kiln.int32: (-2**31, 2**31 - 1), kiln.int64: (-2**63, 2**63 - 1)}[dtype]
    vals = [0, 1, 2, 3, 7, 100, info[0], info[1], info[0] + 1, info[1] - 1]
    if info[0] < 0:
        vals += [-1, -2, -7, -100]
    return [v for v in vals if info[0] <= v <= info[1]]


def operands(dtype):
    """x, y covering every pair of the dtype's values (so division by zero, inf - inf, ... all occur)."""
    vals = FLOATS if dtype.is_floating_point else int_values(dtype)
    n = len(vals)
    xs = [vals[i] for i in range(n) for _ in range(n)]
    ys = [vals[j] for _ in range(n) for j in range(n)]
    return kiln.tensor(xs, dtype=kiln.float64).to(dtype), kiln.tensor(ys, dtype=kiln.float64).to(dtype)


K = kiln.ops.kiln

# table op -> function of (x, y)
OPS = {
    "kiln::add.Tensor": lambda x, y: kiln.add(x, y),
    "kiln::add.Tensor alpha": lambda x, y: kiln.add(x, y, alpha=3),
    "kiln::add.Scalar": lambda x, y: x + 3,
    "kiln::add.Scalar float": lambda x, y: x + 2.5,
    "kiln::sub.Tensor": lambda x, y: kiln.sub(x, y),
    "kiln::sub.Tensor alpha": lambda x, y: kiln.sub(x, y, alpha=2),
    "kiln::sub.Scalar": lambda x, y: x - 3,
    "kiln::mul.Tensor": lambda x, y: x * y,
    "kiln::mul.Scalar": lambda x, y: x * 3,
    "kiln::mul.Scalar float": lambda x, y: x * 0.1,
    "kiln::div.Tensor": lambda x, y: x / y,
    "kiln::div.Scalar": lambda x, y: x / 3,
    "kiln::maximum": lambda x, y: kiln.maximum(x, y),
    "kiln::minimum": lambda x, y: kiln.minimum(x, y),
    "kiln::eq.Tensor": lambda x, y: x == y,
    "kiln::ne.Tensor": lambda x, y: x != y,
    "kiln::lt.Tensor": lambda x, y: x < y,
    "kiln::le.Tensor": lambda x, y: x <= y,
    "kiln::gt.Tensor": lambda x, y: x > y,
    "kiln::ge.Tensor": lambda x, y: x >= y,
    "kiln::eq.Scalar": lambda x, y: x == 2,
    "kiln::ne.Scalar": lambda x, y: x != 0.1,
    "kiln::lt.Scalar": lambda x, y: x < 0.5,
    "kiln::le.Scalar": lambda x, y: x <= 3,
    "kiln::gt.Scalar": lambda x, y: x > 0.1,
    "kiln::ge.Scalar": lambda x, y: x >= -1,
    "kiln::neg": lambda x, y: kiln.neg(x),
    "kiln::abs": lambda x, y: kiln.abs(x),
    "kiln::relu": lambda x, y: kiln.relu(x),
    "kiln::sqrt": lambda x, y: kiln.sqrt(x),
    "kiln::rsqrt": lambda x, y: kiln.rsqrt(x),
    "kiln::reciprocal": lambda x, y: kiln.reciprocal(x),
    "kiln::exp": lambda x, y: kiln.exp(x),
    "kiln::expm1": lambda x, y: kiln.expm1(x),
    "kiln::log": lambda x, y: kiln.log(x),
    "kiln::log2": lambda x, y: kiln.log2(x),
    "kiln::log10": lambda x, y: kiln.log10(x),
    "kiln::log1p": lambda x, y: kiln.log1p(x),
    "kiln::sin": lambda x, y: kiln.sin(x),
    "kiln::cos": lambda x, y: kiln.cos(x),
    "kiln::tan": lambda x, y: kiln.tan(x),
    "kiln::tanh": lambda x, y: kiln.tanh(x),
    "kiln::erf": lambda x, y: kiln.erf(x),
    "kiln::sigmoid": lambda x, y: kiln.sigmoid(x),
    "kiln::silu": lambda x, y: kiln.nn.functional.silu(x),
    "kiln::where.self": lambda x, y: kiln.where(x > y, x, y),
    "kiln::clamp": lambda x, y: kiln.clamp(x, -1, 3),
    "kiln::clamp min": lambda x, y: kiln.clamp(x, min=0.5),
    "kiln::clamp max": lambda x, y: kiln.clamp(x, max=2),
    "kiln::pow.Tensor_Scalar 2": lambda x, y: x ** 2,
    "kiln::pow.Tensor_Scalar 3": lambda x, y: x ** 3,
    "kiln::pow.Tensor_Scalar 0.5": lambda x, y: x ** 0.5,
    "kiln::pow.Tensor_Scalar -1": lambda x, y: x ** -1,
    "kiln::pow.Tensor_Scalar -0.5": lambda x, y: x ** -0.5,
    "kiln::pow.Tensor_Scalar 1.7": lambda x, y: x ** 1.7,
    "kiln::_to_copy float32": lambda x, y: x.to(kiln.float32),
    "kiln::_to_copy float64": lambda x, y: x.to(kiln.float64),
    "kiln::_to_copy float16": lambda x, y: x.to(kiln.float16),
    "kiln::_to_copy bfloat16": lambda x, y: x.to(kiln.bfloat16),
    "kiln::_to_copy int32": lambda x, y: x.to(kiln.int32),
    "kiln::_to_copy int8": lambda x, y: x.to(kiln.int8),
    "kiln::_to_copy int64": lambda x, y: x.to(kiln.int64),
    "kiln::_to_copy bool": lambda x, y: x.to(kiln.bool),
    # --- rounding, sign, predicates, unary math ---
    "kiln::absolute": lambda x, y: K.absolute(x),
    "kiln::negative": lambda x, y: K.negative(x),
    "kiln::floor": lambda x, y: K.floor(x),
    "kiln::ceil": lambda x, y: K.ceil(x),
    "kiln::round": lambda x, y: K.round(x),
    "kiln::round.decimals 2": lambda x, y: K.round.decimals(x, decimals=2),
    "kiln::round.decimals -1": lambda x, y: K.round.decimals(x, decimals=-1),
    "kiln::trunc": lambda x, y: K.trunc(x),
    "kiln::fix": lambda x, y: K.fix(x),
    "kiln::frac": lambda x, y: K.frac(x),
    "kiln::sign": lambda x, y: K.sign(x),
    "kiln::sgn": lambda x, y: K.sgn(x),
    "kiln::square": lambda x, y: K.square(x),
    "kiln::conj_physical": lambda x, y: K.conj_physical(x) * 1,
    "kiln::isnan": lambda x, y: K.isnan(x),
    "kiln::isinf": lambda x, y: K.isinf(x),
    "kiln::isfinite": lambda x, y: K.isfinite(x),
    "kiln::isposinf": lambda x, y: K.isposinf(x),
    "kiln::isneginf": lambda x, y: K.isneginf(x),
    "kiln::signbit": lambda x, y: K.signbit(x),
    "kiln::nan_to_num": lambda x, y: K.nan_to_num(x),
    "kiln::nan_to_num values": lambda x, y: K.nan_to_num(x, nan=1.5, posinf=100.0, neginf=-7.0),
    "kiln::logit": lambda x, y: K.logit(x),
    "kiln::logit eps": lambda x, y: K.logit(x, eps=0.1),
    "kiln::logical_not": lambda x, y: K.logical_not(x),
    "kiln::bitwise_not": lambda x, y: K.bitwise_not(x),
    "kiln::exp2": lambda x, y: K.exp2(x),
    "kiln::asin": lambda x, y: K.asin(x),
    "kiln::acos": lambda x, y: K.acos(x),
    "kiln::atan": lambda x, y: K.atan(x),
    "kiln::sinh": lambda x, y: K.sinh(x),
    "kiln::cosh": lambda x, y: K.cosh(x),
    "kiln::asinh": lambda x, y: K.asinh(x),
    "kiln::acosh": lambda x, y: K.acosh(x),
    "kiln::atanh": lambda x, y: K.atanh(x),
    "kiln::erfc": lambda x, y: K.erfc(x),
    "kiln::deg2rad": lambda x, y: K.deg2rad(x),
    "kiln::rad2deg": lambda x, y: K.rad2deg(x),
    # --- activations and their backward ops (y stands for the incoming gradient) ---
    "kiln::gelu": lambda x, y: K.gelu(x, approximate="none"),
    "kiln::gelu tanh": lambda x, y: K.gelu(x, approximate="tanh"),
    "kiln::gelu_backward": lambda x, y: K.gelu_backward(y, x, approximate="none"),
    "kiln::gelu_backward tanh": lambda x, y: K.gelu_backward(y, x, approximate="tanh"),
    "kiln::silu_backward": lambda x, y: K.silu_backward(y, x),
    "kiln::sigmoid_backward": lambda x, y: K.sigmoid_backward(y, x),
    "kiln::tanh_backward": lambda x, y: K.tanh_backward(y, x),
    "kiln::mish": lambda x, y: K.mish(x),
    "kiln::mish_backward": lambda x, y: K.mish_backward(y, x),
    "kiln::softplus": lambda x, y: K.softplus(x, 1, 20),
    "kiln::softplus beta": lambda x, y: K.softplus(x, 2, 5),
    "kiln::softplus_backward": lambda x, y: K.softplus_backward(y, x, 2, 5),
    "kiln::leaky_relu": lambda x, y: K.leaky_relu(x, 0.01),
    "kiln::leaky_relu_backward": lambda x, y: K.leaky_relu_backward(y, x, 0.2, False),
    "kiln::elu": lambda x, y: K.elu(x, 1, 1, 1),
    "kiln::elu scaled": lambda x, y: K.elu(x, 0.5, 2, 1.5),
    "kiln::selu": lambda x, y: K.selu(x),
    "kiln::celu": lambda x, y: K.celu(x, 2.0),
    "kiln::elu_backward": lambda x, y: K.elu_backward(y, 0.5, 2, 1.5, False, x),
    "kiln::elu_backward result": lambda x, y: K.elu_backward(y, 0.5, 2, 1.5, True, x),
    "kiln::hardsigmoid": lambda x, y: K.hardsigmoid(x),
    "kiln::hardswish": lambda x, y: K.hardswish(x),
    "kiln::hardsigmoid_backward": lambda x, y: K.hardsigmoid_backward(y, x),
    "kiln::hardswish_backward": lambda x, y: K.hardswish_backward(y, x),
    "kiln::hardtanh": lambda x, y: K.hardtanh(x, -1, 1),
    "kiln::hardtanh wide": lambda x, y: K.hardtanh(x, -2, 3),
    "kiln::relu6": lambda x, y: K.relu6(x),
    "kiln::hardtanh_backward": lambda x, y: K.hardtanh_backward(y, x, -1, 1),
    "kiln::threshold": lambda x, y: K.threshold(x, 2, -7),
    "kiln::threshold float": lambda x, y: K.threshold(x, 0.5, -2.5),
    "kiln::threshold_backward": lambda x, y: K.threshold_backward(y, x, 0),
    "kiln::logit_backward": lambda x, y: K.logit_backward(y, x),
    "kiln::logit_backward eps": lambda x, y: K.logit_backward(y, x, eps=0.1),
    # --- two and three inputs ---
    "kiln::rsub.Tensor": lambda x, y: K.rsub.Tensor(x, y, alpha=2),
    "kiln::rsub.Scalar": lambda x, y: K.rsub.Scalar(x, 3),
    "kiln::true_divide.Tensor": lambda x, y: K.true_divide.Tensor(x, y),
    "kiln::true_divide.Scalar": lambda x, y: K.true_divide.Scalar(x, 3),
    "kiln::floor_divide": lambda x, y: K.floor_divide(x, y),
    "kiln::floor_divide.Scalar": lambda x, y: K.floor_divide.Scalar(x, 3),
    "kiln::div.Tensor_mode trunc": lambda x, y: K.div.Tensor_mode(x, y, rounding_mode="trunc"),
    "kiln::div.Tensor_mode floor": lambda x, y: K.div.Tensor_mode(x, y, rounding_mode="floor"),
    "kiln::div.Tensor_mode none": lambda x, y: K.div.Tensor_mode(x, y, rounding_mode=None),
    "kiln::div.Scalar_mode": lambda x, y: K.div.Scalar_mode(x, -3, rounding_mode="floor"),
    "kiln::remainder.Tensor": lambda x, y: K.remainder.Tensor(x, y),
    "kiln::remainder.Scalar": lambda x, y: K.remainder.Scalar(x, 2.5),
    "kiln::remainder.Scalar_Tensor": lambda x, y: K.remainder.Scalar_Tensor(3, y),
    "kiln::fmod.Tensor": lambda x, y: K.fmod.Tensor(x, y),
    "kiln::fmod.Scalar": lambda x, y: K.fmod.Scalar(x, -2),
    "kiln::copysign.Tensor": lambda x, y: K.copysign.Tensor(x, y),
    "kiln::copysign.Scalar": lambda x, y: K.copysign.Scalar(x, -1.0),
    "kiln::pow.Tensor_Tensor": lambda x, y: K.pow.Tensor_Tensor(x, y),
    "kiln::pow.Scalar": lambda x, y: K.pow.Scalar(2.5, y),
    "kiln::pow.Scalar one": lambda x, y: K.pow.Scalar(1, y),
    "kiln::atan2": lambda x, y: K.atan2(x, y),
    "kiln::hypot": lambda x, y: K.hypot(x, y),
    "kiln::fmax": lambda x, y: K.fmax(x, y),
    "kiln::fmin": lambda x, y: K.fmin(x, y),
    "kiln::heaviside": lambda x, y: K.heaviside(x, y),
    "kiln::logical_and": lambda x, y: K.logical_and(x, y),
    "kiln::logical_or": lambda x, y: K.logical_or(x, y),
    "kiln::logical_xor": lambda x, y: K.logical_xor(x, y),
    "kiln::bitwise_and.Tensor": lambda x, y: K.bitwise_and.Tensor(x, y),
    "kiln::bitwise_and.Scalar": lambda x, y: K.bitwise_and.Scalar(x, 6),
    "kiln::bitwise_and.Scalar_Tensor": lambda x, y: K.bitwise_and.Scalar_Tensor(6, y),
    "kiln::bitwise_or.Tensor": lambda x, y: K.bitwise_or.Tensor(x, y),
    "kiln::bitwise_or.Scalar": lambda x, y: K.bitwise_or.Scalar(x, 6),
    "kiln::bitwise_or.Scalar_Tensor": lambda x, y: K.bitwise_or.Scalar_Tensor(6, y),
    "kiln::bitwise_xor.Tensor": lambda x, y: K.bitwise_xor.Tensor(x, y),
    "kiln::bitwise_xor.Scalar": lambda x, y: K.bitwise_xor.Scalar(x, 6),
    "kiln::bitwise_xor.Scalar_Tensor": lambda x, y: K.bitwise_xor.Scalar_Tensor(6, y),
    "kiln::bitwise_left_shift.Tensor": lambda x, y: K.bitwise_left_shift.Tensor(x, y),
    "kiln::bitwise_left_shift.Tensor_Scalar": lambda x, y: K.bitwise_left_shift.Tensor_Scalar(x, 3),
    "kiln::bitwise_left_shift.Scalar_Tensor": lambda x, y: K.bitwise_left_shift.Scalar_Tensor(3, y),
    "kiln::bitwise_right_shift.Tensor": lambda x, y: K.bitwise_right_shift.Tensor(x, y),
    "kiln::bitwise_right_shift.Tensor_Scalar": lambda x, y: K.bitwise_right_shift.Tensor_Scalar(x, 3),
    "kiln::bitwise_right_shift.Scalar_Tensor": lambda x, y: K.bitwise_right_shift.Scalar_Tensor(-100, y),
    "kiln::lerp.Scalar": lambda x, y: K.lerp.Scalar(x, y, 0.3),
    "kiln::lerp.Scalar large": lambda x, y: K.lerp.Scalar(x, y, 0.7),
    "kiln::lerp.Tensor": lambda x, y: K.lerp.Tensor(x, y, y),
    "kiln::addcmul": lambda x, y: K.addcmul(x, y, y, value=2),
    "kiln::addcdiv": lambda x, y: K.addcdiv(x, y, x, value=0.5),
    "kiln::masked_fill.Scalar": lambda x, y: K.masked_fill.Scalar(x, x > y, 2.5),
    "kiln::masked_fill.Scalar int": lambda x, y: K.masked_fill.Scalar(x, x > y, 3),
    "kiln::masked_fill.Tensor": lambda x, y: K.masked_fill.Tensor(x, x > y, kiln.tensor(1.5, dtype=kiln.float64)),
    "kiln::where.ScalarOther": lambda x, y: K.where.ScalarOther(x > y, x, 2.5),
    "kiln::where.ScalarSelf": lambda x, y: K.where.ScalarSelf(x > y, -1, y),
    "kiln::where.Scalar": lambda x, y: K.where.Scalar(x > y, 1.5, -2.0),
    "kiln::clamp.Tensor": lambda x, y: K.clamp.Tensor(x, y, x * 2),
    "kiln::clip.Tensor": lambda x, y: K.clip.Tensor(x, x * 0.5, y),
    "kiln::clamp_min.Tensor": lambda x, y: K.clamp_min.Tensor(x, y),
    "kiln::clamp_max.Tensor": lambda x, y: K.clamp_max.Tensor(x, y),
    "kiln::clamp_min": lambda x, y: K.clamp_min(x, 0.5),
    "kiln::clamp_max": lambda x, y: K.clamp_max(x, 2),
    "kiln::clip": lambda x, y: K.clip(x, -1, 3),
    "kiln::clamp nan": lambda x, y: kiln.clamp(x, min=float("nan")),
}

# (op, dtype) pairs whose compiled result is close to, not bit-identical with, eager's (none on this host:
# Note [Compiled vector math], codegen/llvm/VectorMath.h).
APPROXIMATE = set()
# (op, dtype) the table leaves to eager on purpose (the node stays an eager step: no kernel).
LEFT_TO_EAGER = {("kiln::pow.Tensor_Scalar", d) for d in [kiln.float16, kiln.bfloat16] + INT_DTYPES}
# Integer division and remainder raise ZeroDivisionError from inside eager's loop: integers stay eager.
LEFT_TO_EAGER |= {(op, d) for d in INT_DTYPES
                  for op in ["kiln::floor_divide.Scalar", "kiln::div.Scalar_mode", "kiln::fmod.Scalar"]}
# A float threshold on an integer tensor: eager converts it with Scalar::to<int>; the table takes integer ones only.
LEFT_TO_EAGER_CASES = {("kiln::threshold float", d) for d in INT_DTYPES}
# pow with a tensor exponent: float16/bfloat16 call the scalar std::pow, integers multiply (exactly) in eager.
LEFT_TO_EAGER |= {("kiln::pow.Tensor_Tensor", d) for d in [kiln.float16, kiln.bfloat16] + INT_DTYPES}
LEFT_TO_EAGER_CASES |= {("kiln::pow.Scalar", d) for d in [kiln.float16, kiln.bfloat16]}
# Float -> integer casts of out-of-range values are undefined in C++; eager's answer depends on its loop.
UNDEFINED_CASTS = ("kiln::_to_copy int32", "kiln::_to_copy int8", "kiln::_to_copy int64")


def as_numpy(t):
    if t.dtype in (kiln.float16, kiln.bfloat16):
        return t.to(kiln.float32).numpy()
    return t.numpy()


def check_same(got, want, approximate, what):
    assert got.dtype == want.dtype, what
    assert got.shape == want.shape, what
    g, w = as_numpy(got), as_numpy(want)
    if approximate:
        np.testing.assert_allclose(g, w, rtol=2e-6 if got.dtype == kiln.float32 else 1e-2, atol=1e-30,
                                   err_msg=what)
        return
    same = (g == w) | (np.isnan(g) & np.isnan(w)) if g.dtype.kind == "f" else g == w
    if g.dtype.kind == "f":  # -0.0 and 0.0 compare equal: the signs must agree too (a NaN's sign is free)
        same &= (np.signbit(g) == np.signbit(w)) | np.isnan(w)
    bad = np.flatnonzero(~same)
    assert bad.size == 0, f"{what}: {bad.size} differ, first at {bad[:5]}: got {g.flat[bad[:5]]}, want {w.flat[bad[:5]]}"


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES, ids=str)
@pytest.mark.parametrize("case", list(OPS))
def test_op_matches_eager(case, dtype):
    fn = OPS[case]
    op = case.split(" ")[0]
    x, y = operands(dtype)
    if case in UNDEFINED_CASTS and dtype.is_floating_point:
        x, y = x.clamp(-100, 100).nan_to_num(), y.clamp(-100, 100).nan_to_num()
    try:
        with kiln.no_grad():
            want = fn(x, y)
    except (RuntimeError, TypeError, NotImplementedError):
        return  # eager does not run the op on this dtype: nothing to compare
    compiled = kiln.compile(fn)
    with kiln.no_grad():
        compiled(x, y)  # capture
        got = compiled(x, y)  # replay through the compiled graph
    counts = kernel_counts(compiled)
    assert len(counts) == 1 and counts[0] is not None, case
    recorded = next(iter(compiled.cache.values())).num_ops  # x.to(x.dtype) records nothing
    left_to_eager = (op, dtype) in LEFT_TO_EAGER or (case, dtype) in LEFT_TO_EAGER_CASES
    expected = 0 if left_to_eager or recorded == 0 else 1
    assert counts[0] == expected, f"{case} on {dtype}: {counts[0]} kernels"
    check_same(got, want, (op, dtype) in APPROXIMATE, f"{case} on {dtype}")


def test_every_table_op_is_tested():
    tested = {case.split(" ")[0] for case in OPS}
    assert set(_C._runtime.pointwise_math_ops()) == tested


@pytest.mark.parametrize("dtype", [kiln.float16, kiln.bfloat16], ids=str)
def test_a_wider_zero_dim_input_rounds_to_the_result_dtype_first(dtype):
    """A float64 0-dim tensor beside a float16/bfloat16 one does not promote the result; TensorIterator
    converts it to the result dtype before the loop widens it to float, so the kernel rounds it too
    (add); mul reads it at float precision from its own dtype (Note [CPU scalars at opmath precision])."""
    x = kiln.tensor([1.0, -3.0, 100.0, 0.1], dtype=kiln.float64).to(dtype)
    # Just above a rounding tie of the dtype: it rounds up to 1 + ulp, which float32 arithmetic would miss.
    ulp = 2 ** -10 if dtype == kiln.float16 else 2 ** -7
    s = kiln.tensor(1 + ulp / 2 + ulp / 8, dtype=kiln.float64)

    def fn(x, s):
        return x * s + s

    compiled = kiln.compile(fn)
    with kiln.no_grad():
        want = fn(x, s)
        compiled(x, s)
        got = compiled(x, s)
    assert kernel_counts(compiled) == [1]
    check_same(got, want, False, f"x * s + s on {dtype}")
