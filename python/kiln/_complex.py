"""Complex tensors at the Python level: torch.real / imag / conj / angle / polar /
complex / view_as_real / view_as_complex, the Tensor.real and Tensor.imag views, and
Tensor.__complex__. See Note [Complex dtypes] (eager/core/DType.h).

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

from kiln import _C
from kiln._api_extra2 import _require_tensor, _write_out
from kiln._comparison import scalar_type_name as _scalar_type_name

_functions = _C._functions


def _is_complex(t) -> bool:
    return t.dtype.is_complex


# --- views and parts --------------------------------------------------------------------------

def view_as_real(input):
    """torch.view_as_real: a complex tensor's [..., 2] real view (same memory)."""
    _require_tensor(input, "view_as_real")
    return _functions.view_as_real(input)


def view_as_complex(input):
    """torch.view_as_complex: a [..., 2] float/double tensor viewed as complex (same memory)."""
    _require_tensor(input, "view_as_complex")
    return _functions.view_as_complex(input)


def real(input):
    """torch.real: the real parts of a complex tensor as a view; a real tensor itself."""
    _require_tensor(input, "real")
    return _functions.view_as_real(input).select(-1, 0) if _is_complex(input) else input


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

def conj(input):
    """torch.conj: the complex conjugate (a new tensor in kiln); a real tensor itself."""
    _require_tensor(input, "conj")
    return _functions.conj_physical(input) if _is_complex(input) else input


def conj_physical(input, *, out=None):
    """torch.conj_physical: the conjugate of a complex tensor; a real tensor itself, as in torch."""
    _require_tensor(input, "conj_physical")
    return _write_out(_functions.conj_physical(input) if _is_complex(input) else input, out)


def conj_physical_(input):
    """torch.conj_physical_: conjugates a complex tensor in place; nothing to do on a real one."""
    _require_tensor(input, "conj_physical_")
    if _is_complex(input):
        input.copy_(_functions.conj_physical(input))
    return input


def resolve_conj(input):
    """torch.resolve_conj: ``input`` itself (kiln has no lazy conjugate bit to resolve)."""
    _require_tensor(input, "resolve_conj")
    return input


# --- magnitude and phase ------------------------------------------------------------------------

def angle_complex(input):
    """arg(z) of each element of a complex tensor: atan2(imag, real), in its real dtype."""
    pairs = _functions.view_as_real(input)
    return _functions.atan2(pairs.select(-1, 1), pairs.select(-1, 0))


def isreal(input):
    """torch.isreal: True where the imaginary part is 0 (everywhere for a real tensor)."""
    _require_tensor(input, "isreal")
    if not _is_complex(input):
        return _functions.ones_like(input, dtype=_C.bool)
    return _functions.view_as_real(input).select(-1, 1) == 0


def polar(abs, angle, *, out=None):
    """torch.polar: abs * (cos(angle) + i sin(angle)), complex64 for float32 inputs, complex128 for float64."""
    _check_parts("polar", abs, angle)
    result = _functions.view_as_complex(_functions.stack([abs * angle.cos(), abs * angle.sin()], -1))
    return _write_out(result, out)


def complex(real, imag, *, out=None):
    """torch.complex: real + i imag from two float (or two double) tensors, broadcast together."""
    _check_parts("complex", real, imag)
    real, imag = _functions.broadcast_tensors([real, imag])
    return _write_out(_functions.view_as_complex(_functions.stack([real, imag], -1)), out)


def _check_parts(name, first, second):
    _require_tensor(first, name)
    _require_tensor(second, name, "imag", 2)
    if first.dtype not in (_C.float32, _C.float64):
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{_scalar_type_name(first.dtype)} and {_scalar_type_name(second.dtype)}")
    if second.dtype is not first.dtype:
        raise RuntimeError(f"Expected object of scalar type {_scalar_type_name(first.dtype)} but got scalar type "
                           f"{_scalar_type_name(second.dtype)} for second argument")


# --- wrapping the real ops that have a complex meaning -----------------------------------------

def _with_complex_case(real_fn, complex_fn):
    def function(input, *args, **kwargs):
        if isinstance(input, _C.TensorBase) and input.dtype.is_complex:
            return complex_fn(input, *args, **kwargs)
        return real_fn(input, *args, **kwargs)

    function.__name__ = function.__qualname__ = getattr(real_fn, "__name__", complex_fn.__name__)
    function.__doc__ = getattr(real_fn, "__doc__", None)
    return function


def _unary_complex(fn):
    def complex_case(input, *, out=None):
        return _write_out(fn(input), out)

    return complex_case


FUNCTIONS = {fn.__name__: fn for fn in (view_as_real, view_as_complex, real, imag, conj, conj_physical,
                                        conj_physical_, resolve_conj, polar, complex, isreal)}


def install(namespace, tensor_class):
    """Puts the complex-aware functions in the kiln namespace and on Tensor (replacing the
    real-only versions), and gives angle its complex case (item and tolist handle complex
    tensors in C++)."""
    namespace.update(FUNCTIONS)
    for name, complex_fn in (("angle", angle_complex),):
        if name in namespace:
            namespace[name] = _with_complex_case(namespace[name], _unary_complex(complex_fn))
        method = getattr(tensor_class, name, None)
        if method is not None:
            setattr(tensor_class, name, _with_complex_case(method, complex_fn))
    for name in ("conj", "conj_physical", "conj_physical_", "resolve_conj", "isreal"):
        setattr(tensor_class, name, FUNCTIONS[name])
    tensor_class.is_complex = lambda self: self.dtype.is_complex
    tensor_class.__complex__ = lambda self: builtins.complex(self.item())
    real_property, imag_property = _part_properties()
    tensor_class.real = real_property
    tensor_class.imag = imag_property
