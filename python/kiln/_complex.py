"""Complex tensors at the Python level: torch.real / imag / conj / angle / polar /
complex / view_as_real / view_as_complex / isreal, resolve_neg / is_conj / is_neg (kiln
has no conjugate or negative bits), the Tensor.real and Tensor.imag views, and
Tensor.is_complex / __complex__. See Note [Complex dtypes] (eager/core/DType.h).

The C++ core holds complex64 and complex128 tensors and has complex kernels for copies,
fills, add/sub/mul/div, neg, sum and the conjugate; gradients follow PyTorch's
convention (the conjugate Wirtinger derivative). What this module adds is composed from
those and from the real view, so it is differentiable with no formulas of its own:
real and imag are selects of view_as_real, angle is atan2(im, re), polar and complex
stack two real tensors and view the pairs as complex. (abs and sgn of complex tensors
are C++ kernels with formulas: eager/kernels/cpu/pointwise/ComplexOps.cpp.)

Knowing differences from torch: conj() of a complex tensor returns a new tensor (kiln has
no lazy conjugate bit), so writing into it does not write into its input and is_conj()
is always False. Python complex numbers are not yet taken as scalar operands or fill
values (TypeError, since kiln's C++ Scalar is real): write ``z * kiln.tensor(1j)``.
"""

from __future__ import annotations

import builtins
import math

from kiln import _C
from kiln._arguments import _require_tensor, _write_out, checked_signature
from kiln._comparison import scalar_type_name as _scalar_type_name
from kiln.autograd.function import Function

_functions = _C._functions


def _is_complex(t) -> bool:
    return t.dtype.is_complex


# --- views and parts --------------------------------------------------------------------------

@checked_signature("view_as_real(Tensor input)")
def view_as_real(input):
    """torch.view_as_real: a complex tensor's [..., 2] real view (same memory)."""
    _require_tensor(input, "view_as_real")
    return _functions.view_as_real(input)


@checked_signature("view_as_complex(Tensor input)")
def view_as_complex(input):
    """torch.view_as_complex: a [..., 2] float/double tensor viewed as complex (same memory)."""
    _require_tensor(input, "view_as_complex")
    return _functions.view_as_complex(input)


@checked_signature("real(Tensor input)")
def real(input):
    """torch.real: the real parts of a complex tensor as a view; a real tensor itself."""
    _require_tensor(input, "real")
    return _functions.view_as_real(input).select(-1, 0) if _is_complex(input) else input


@checked_signature("imag(Tensor input)")
def imag(input):
    """torch.imag: the imaginary parts of a complex tensor as a view; torch's error for a real one."""
    _require_tensor(input, "imag")
    if not _is_complex(input):
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return _functions.view_as_real(input).select(-1, 1)


def _part_properties():
    def set_real(self, value):
        real(self).copy_(value)

    def set_imag(self, value):
        imag(self).copy_(value)

    return (property(real, set_real, doc="Tensor.real: the real parts (a view); a real tensor itself."),
            property(imag, set_imag, doc="Tensor.imag: the imaginary parts of a complex tensor (a view)."))


# --- conjugates ---------------------------------------------------------------------------------

@checked_signature("conj(Tensor input)")
def conj(input):
    """torch.conj: the complex conjugate (a new tensor in kiln); a real tensor itself."""
    _require_tensor(input, "conj")
    return _functions.conj_physical(input) if _is_complex(input) else input


@checked_signature("conj_physical(Tensor input, *, Tensor? out)")
def conj_physical(input, *, out=None):
    """torch.conj_physical: the conjugate of a complex tensor; a real tensor itself, as in torch."""
    _require_tensor(input, "conj_physical")
    return _write_out(_functions.conj_physical(input) if _is_complex(input) else input, out)


@checked_signature("conj_physical_(Tensor input)")
def conj_physical_(input):
    """torch.conj_physical_: conjugates a complex tensor in place; nothing to do on a real one."""
    _require_tensor(input, "conj_physical_")
    if _is_complex(input):
        input.copy_(_functions.conj_physical(input))
    return input


@checked_signature("resolve_conj(Tensor input)")
def resolve_conj(input):
    """torch.resolve_conj: ``input`` itself (kiln has no lazy conjugate bit to resolve)."""
    _require_tensor(input, "resolve_conj")
    return input


# --- magnitude and phase ------------------------------------------------------------------------

def angle_complex(input):
    """arg(z) of each element of a complex tensor: atan2(imag, real), in its real dtype."""
    pairs = _functions.view_as_real(input)
    return _functions.atan2(pairs.select(-1, 1), pairs.select(-1, 0))


@checked_signature("isreal(Tensor input)")
def isreal(input):
    """torch.isreal: True where the imaginary part is 0 (everywhere for a real tensor)."""
    _require_tensor(input, "isreal")
    if not _is_complex(input):
        return _functions.ones_like(input, dtype=_C.bool)
    return _functions.view_as_real(input).select(-1, 1) == 0


@checked_signature("polar(Any abs, Any angle, *, Tensor? out)")
def polar(abs, angle, *, out=None):
    """torch.polar: abs * (cos(angle) + i sin(angle)), complex64 for float32 inputs, complex128 for float64."""
    _check_parts("polar", abs, angle)
    result = _functions.view_as_complex(_functions.stack([abs * angle.cos(), abs * angle.sin()], -1))
    return _write_out(result, out)


@checked_signature("complex(Tensor real, Tensor imag, *, Tensor? out)")
def complex(real, imag, *, out=None):
    """torch.complex: real + i imag from two float (or two double) tensors, broadcast together."""
    _check_parts("complex", real, imag)
    wanted = _C.complex128 if real.dtype == _C.float64 else _C.complex64
    if out is not None and out.dtype != wanted:
        raise RuntimeError(f"Expected object of scalar type {_scalar_type_name(wanted)} but got scalar type "
                           f"{_scalar_type_name(out.dtype)} for argument 'out'")
    real, imag = _functions.broadcast_tensors([real, imag])
    return _write_out(_functions.view_as_complex(_functions.stack([real, imag], -1)), out)


def _check_parts(name, first, second):
    _require_tensor(first, name)
    _require_tensor(second, name, "imag", 2)
    if first.dtype not in (_C.float32, _C.float64) or second.dtype not in (_C.float16, _C.float32, _C.float64):
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{_scalar_type_name(first.dtype)} and {_scalar_type_name(second.dtype)}")
    if second.dtype is not first.dtype:
        raise RuntimeError(f"Expected object of scalar type {_scalar_type_name(first.dtype)} but got scalar type "
                           f"{_scalar_type_name(second.dtype)} for second argument")


# --- angle ---------------------------------------------------------------------------------------

class Angle(Function):
    """angle of a real tensor: pi below zero, 0 elsewhere, NaN kept; its gradient is zero."""

    @staticmethod
    def forward(ctx, x):
        result = _functions.zeros_like(x).masked_fill(x < 0, math.pi)
        return _functions.where(x.isnan(), x, result)

    @staticmethod
    def backward(ctx, grad):
        return _functions.zeros_like(grad)


@checked_signature("angle(Any input, *, Tensor? out)")
def angle(input, *, out=None):
    """torch.angle: arg(z) of a complex tensor (atan2(imag, real), in its real dtype); for a
    real tensor pi where ``input`` < 0, 0 elsewhere (-0.0 included), NaN where NaN, with
    integer and bool inputs giving the default dtype and a zero gradient."""
    if isinstance(input, _C.TensorBase) and input.dtype.is_complex:
        return _write_out(angle_complex(input), out)
    _require_tensor(input, "angle")
    x = input if input.dtype.is_floating_point else input.to(_C.get_default_dtype())
    return _write_out(Angle.apply(x), out)


# --- the bits kiln does not have ------------------------------------------------------------------

@checked_signature("resolve_neg(Tensor input)")
def resolve_neg(input):
    """torch.resolve_neg: ``input`` itself (no negative bit to resolve)."""
    _require_tensor(input, "resolve_neg")
    return input


@checked_signature("is_conj(Tensor input)")
def is_conj(input):
    """torch.is_conj: False (kiln has no lazy conjugate bit)."""
    _require_tensor(input, "is_conj")
    return False


@checked_signature("is_neg(Tensor input)")
def is_neg(input):
    """torch.is_neg: False (kiln has no negative bits)."""
    _require_tensor(input, "is_neg")
    return False


# --- Tensor methods and properties ----------------------------------------------------------------

def tensor_is_conj(self):
    """Tensor.is_conj: False (kiln has no lazy conjugate bit)."""
    return False


def tensor_is_neg(self):
    """Tensor.is_neg: False (kiln has no negative bits)."""
    return False


def tensor_is_complex(self):
    """Tensor.is_complex: whether the dtype is complex64 or complex128."""
    return self.dtype.is_complex


def tensor_complex(self):
    """Tensor.__complex__: the one element as a Python complex."""
    return builtins.complex(self.item())


REAL_PROPERTY, IMAG_PROPERTY = _part_properties()
