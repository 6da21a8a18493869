"""torch's elementwise numerics that kiln composes over its ops: frexp,
ldexp (and ldexp_), gcd and lcm (and gcd_, lcm_), i0 (and i0_) and mvlgamma
(and mvlgamma_). frexp reads the exponent from the float64 bit pattern (exact
for every finite value, subnormals included) and scales the mantissa by two
exact powers of two, so its gradient is grad * 2^-exponent as torch's. gcd runs
Euclid's algorithm elementwise over the broadcast inputs (at most ~90 rounds
for int64), and lcm is |a / gcd * b|, with C's wrap-around where torch has it."""

from __future__ import annotations

from collections import namedtuple

from kiln import _C, return_types
from kiln._arguments import _require_tensor, checked_signature
from kiln._comparison import scalar_type_name
from kiln.special._modified_bessel_i import i0 as _special_i0
from kiln.special._gamma import multigammaln as _special_multigammaln
from kiln._dtypes import promote_types, result_type
from kiln._shape import broadcast_shapes, broadcast_tensors
from kiln.autograd.grad_mode import no_grad

_F = _C._functions

frexp_type = namedtuple("frexp", ["mantissa", "exponent"])
frexp_out_type = namedtuple("frexp_out", ["mantissa", "exponent"])
frexp_type.__module__ = frexp_out_type.__module__ = "kiln.return_types"
return_types.frexp, return_types.frexp_out = frexp_type, frexp_out_type

_INTEGER_NAMES = {"uint8", "int8", "int16", "int32", "int64"}


def _word(dtype):
    return scalar_type_name(dtype)


def _copy_out(result, out):
    return result if out is None else _C._functions._copy_to_out(result, out)


def _check_inplace_shape(self, shape):
    if tuple(shape) != tuple(self.shape):
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape {list(shape)}")


# --- frexp and ldexp --------------------------------------------------------------------------------------


def _frexp_exponent(input):
    """The int32 exponent e of each element (x = m 2^e, 0.5 <= |m| < 1); 0 for 0, inf and nan."""
    with no_grad():
        x = input.detach().to(_C.float64).contiguous()
        size = x.abs()
        subnormal = (size < 2.0 ** -1022) & (size > 0)
        x = _F.where(subnormal, x * 2.0 ** 54, x)
        field = (x.contiguous().view(_C.int64) >> 52) & 0x7FF
        exponent = field - 1022 - _F.where(subnormal, _F.full_like(field, 54), _F.zeros_like(field))
        special = (size == 0) | ~_F.isfinite(size)
        return _F.where(special, _F.zeros_like(exponent), exponent).to(_C.int32)


@checked_signature("frexp(Any input, *, Tensor[]? out)")
def frexp(input, *, out=None):
    """(mantissa, exponent) with input = mantissa * 2^exponent, |mantissa| in [0.5, 1), exponent int32;
    0, inf and nan keep their value with exponent 0."""
    _require_tensor(input, "frexp", "input", 1)
    if not input.dtype.is_floating_point:
        raise RuntimeError("kiln.frexp() only supports floating-point dtypes")
    exponent = _frexp_exponent(input)
    with no_grad():
        first = exponent >> 1  # 2^-e as two factors: each fits the dtype even where 2^-e alone does not
        scales = [_F.exp2(-part.to(_C.float64)).to(input.dtype) for part in (first, exponent - first)]
    mantissa = input * scales[0] * scales[1]
    if out is not None:
        mantissa_out, exponent_out = out
        _C._functions._copy_to_out(mantissa, mantissa_out)
        _C._functions._copy_to_out(exponent, exponent_out)
        return frexp_out_type(mantissa_out, exponent_out)
    return frexp_type(mantissa, exponent)


@checked_signature("ldexp(Any input, Any other, *, Tensor? out)")
def ldexp(input, other, *, out=None):
    """input * 2^other in the operands' promoted dtype (the default float dtype for integers); float16 and
    bfloat16 are computed in float32 and rounded once, as torch's."""
    _require_tensor(input, "ldexp", "input", 1)
    _require_tensor(other, "ldexp", "other", 2)
    dtype = result_type(input, other)
    if not dtype.is_floating_point:
        dtype = _C.get_default_dtype()
    compute = _C.float32 if dtype in (_C.float16, _C.bfloat16) else dtype
    result = input.to(compute) * _F.pow(2.0, other.to(compute))
    return _copy_out(result.to(dtype), out)


@checked_signature("ldexp_(Tensor self as input, Tensor other)")
def ldexp_(self, other):
    """In place: self *= 2^other (self must be floating point)."""
    _require_tensor(self, "ldexp_", "input", 1)
    _require_tensor(other, "ldexp_", "other", 1)
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"ldexp can't be cast to the desired output type {_word(self.dtype)}")
    result = ldexp(self, other)
    _check_inplace_shape(self, broadcast_shapes(tuple(self.shape), tuple(other.shape)))
    return self.copy_(result)


# --- gcd and lcm ------------------------------------------------------------------------------------------


def _integer_operands(op, input, other):
    _require_tensor(input, op, "input", 1)
    _require_tensor(other, op, "other", 2)
    dtype = promote_types(input.dtype, other.dtype)
    if str(dtype).removeprefix("kiln.") not in _INTEGER_NAMES:
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for '{_word(dtype)}'")
    return broadcast_tensors(input.to(dtype), other.to(dtype))


def _gcd(a, b):
    a, b = a.abs(), b.abs()
    one = _F.ones_like(a)
    while True:
        active = a != 0
        if not bool(active.any()):
            return b
        remainder = _F.fmod(b, _F.where(active, a, one))  # C's %: b % a
        a, b = _F.where(active, remainder, a), _F.where(active, a, b)


@checked_signature("gcd(Any input, Any other, *, Tensor? out)")
def gcd(input, other, *, out=None):
    """The greatest common divisor, elementwise over integer tensors (gcd(0, 0) = 0)."""
    a, b = _integer_operands("gcd", input, other)
    return _copy_out(_gcd(a, b), out)


def _lcm(a, b):
    dtype = a.dtype
    if dtype in (_C.int8, _C.int16, _C.uint8):  # C promotes these to int for a / g * b
        a, b = a.to(_C.int32), b.to(_C.int32)
    g = _gcd(a, b)
    zero = g == 0
    quotient = _F.div(a, _F.where(zero, _F.ones_like(g), g), rounding_mode="trunc")
    result = _F.where(zero, _F.zeros_like(g), (quotient * b).abs())
    return result.to(dtype)


@checked_signature("lcm(Tensor input, Tensor other, *, Tensor? out)")
def lcm(input, other, *, out=None):
    """The least common multiple |a / gcd(a, b) * b|, elementwise over integer tensors (0 when either is 0)."""
    a, b = _integer_operands("lcm", input, other)
    return _copy_out(_lcm(a, b), out)


@checked_signature("gcd_(Tensor self as input, Tensor other)")
def gcd_(self, other):
    a, b = _integer_operands("gcd", self, other)
    _check_inplace_shape(self, a.shape)
    return self.copy_(_gcd(a, b))


@checked_signature("lcm_(Tensor self as input, Tensor other)")
def lcm_(self, other):
    a, b = _integer_operands("lcm", self, other)
    _check_inplace_shape(self, a.shape)
    return self.copy_(_lcm(a, b))


# --- i0 and mvlgamma --------------------------------------------------------------------------------------


@checked_signature("i0(Tensor input, *, Tensor? out)")
def i0(input, *, out=None):
    """torch.i0: the modified Bessel function of the first kind of order 0 (kiln.special.i0)."""
    return _special_i0(input, out=out, _op="i0")


@checked_signature("i0_(Tensor self as input)")
def i0_(self):
    result = i0(self)
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"result type {_word(result.dtype)} can't be cast to the desired output type "
                           f"{_word(self.dtype)}")
    return self.copy_(result)


@checked_signature("mvlgamma(Tensor input, int p, *, Tensor? out)")
def mvlgamma(input, p, *, out=None):
    """torch.mvlgamma: the multivariate log-gamma function of dimension p (kiln.special.multigammaln)."""
    return _special_multigammaln(input, p, out=out, _op="mvlgamma")


def mvlgamma_(self, p):
    result = mvlgamma(self, p)
    if not self.dtype.is_floating_point:  # torch's words, which name the two dtypes the other way round
        raise RuntimeError(f"mvlgamma: result type {_word(self.dtype)} can't be cast to the desired output type "
                           f"{_word(result.dtype)}")
    return self.copy_(result)
