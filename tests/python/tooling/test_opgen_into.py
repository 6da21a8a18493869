"""opgen's `kernel_into` families (tools/opgen/into.py, Note [Generated entry points]):
one kernel per family, and the function, in-place and out= entry points written
from ops.yaml. Runs the generator on small YAML texts; needs no build."""

from __future__ import annotations

import pytest

from opgen_text import error_of, generate

ADD = """
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  dispatch:
    CPU: add_cpu
  kernel_into: add_into

- func: add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
  dispatch:
    CPU: add_scalar_cpu
  kernel_into: add_into

- func: add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
  variants: method
  dispatch:
    CPU: add_cpu_
  tags: [inplace]
  kernel_into: add_into

- func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: add_out_cpu
  kernel_into: add_into
"""


def test_one_kernel_declared_and_the_three_forms_generated():
    files = generate(ADD)
    h = files["IntoKernels.h"]
    # Hidden: the entry points call it directly, not through kiln_core's PLT.
    assert ("KILN_INTO_KERNEL Tensor add_into(ResultInto into, const Tensor& out, const Tensor& self, "
            "const Tensor& other, const Scalar& alpha);") in h
    assert '#define KILN_INTO_KERNEL __attribute__((visibility("hidden")))' in h
    cpp = files["IntoKernels.cpp"]
    assert "return add_into(ResultInto::NewTensor, Tensor(), self, other, alpha);" in cpp
    assert "return add_into(ResultInto::NewTensor, Tensor(), self, scalar_operand(other, self), alpha);" in cpp
    assert ("Tensor add_cpu_(const Tensor& self, const Tensor& other, const Scalar& alpha) {\n"
            "  return add_into(ResultInto::InPlace, self, self, other, alpha);") in cpp
    assert "return add_into(ResultInto::Out, out, self, other, alpha);" in cpp
    # The entry points are ordinary kernels: declared and registered as before.
    assert "Tensor add_out_cpu(const Tensor& self, const Tensor& other, const Scalar& alpha, const Tensor& out);" \
        in files["NativeFunctions.h"]
    assert "add_out_cpu" in files["RegisterOps.cpp"]


def test_arguments_pass_by_name_and_scalars_wrap_like_the_other_operand():
    text = """
    - func: p(int n, Tensor self) -> Tensor
      dispatch:
        CPU: p_cpu
      kernel_into: p_into
    - func: p_(Tensor(a!) self, int n) -> Tensor(a!)
      variants: method
      dispatch:
        CPU: p_cpu_
      kernel_into: p_into
    - func: w.self(Tensor condition, Tensor self, Tensor other) -> Tensor
      dispatch:
        CPU: w_cpu
      kernel_into: w_into
    - func: w.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor
      dispatch:
        CPU: w_other_cpu
      kernel_into: w_into
    - func: w.ScalarSelf(Tensor condition, Scalar self, Tensor other) -> Tensor
      dispatch:
        CPU: w_self_cpu
      kernel_into: w_into
    """
    cpp = generate(text)["IntoKernels.cpp"]
    assert "return p_into(ResultInto::InPlace, self, n, self);" in cpp
    assert "return w_into(ResultInto::NewTensor, Tensor(), condition, self, scalar_operand(other, self));" in cpp
    assert "return w_into(ResultInto::NewTensor, Tensor(), condition, scalar_operand(self, other), other);" in cpp


def test_without_kernel_into_nothing_is_generated():
    files = generate("- func: f(Tensor self) -> Tensor\n  dispatch:\n    CPU: f_cpu\n")
    assert "f_cpu" not in files["IntoKernels.cpp"]


ERRORS = [
    ("not an identifier", "- func: f(Tensor self) -> Tensor\n  dispatch:\n    CPU: f_cpu\n  kernel_into: f-into\n",
     ["f", "kernel_into must name a C++ function"]),
    ("no CPU kernel name", "- func: f(Tensor self) -> Tensor\n  dispatch:\n    CompositeImplicit: f\n"
     "  kernel_into: f_into\n", ["f", "needs 'CPU: <name>'"]),
    ("tuple return", "- func: f(Tensor self) -> (Tensor, Tensor)\n  dispatch:\n    CPU: f_cpu\n  kernel_into: f_into\n",
     ["f", "returns one Tensor"]),
    ("different inputs", "- func: f(Tensor self) -> Tensor\n  dispatch:\n    CPU: f_cpu\n  kernel_into: f_into\n"
     "- func: f.n(Tensor self, int n) -> Tensor\n  dispatch:\n    CPU: fn_cpu\n  kernel_into: f_into\n",
     ["f.n", "kernel_into f_into", "are not those of f"]),
    ("different types", "- func: f(Tensor self, int n) -> Tensor\n  dispatch:\n    CPU: f_cpu\n  kernel_into: f_into\n"
     "- func: f.x(Tensor self, float n) -> Tensor\n  dispatch:\n    CPU: fx_cpu\n  kernel_into: f_into\n",
     ["f.x", "'n' is float here but int in f"]),
]


@pytest.mark.parametrize("case, text, parts", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_name_the_op_and_the_reason(case, text, parts):
    message = error_of(text)
    for part in parts:
        assert part in message, message


MASKED_FILL = """
- func: masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor
  dispatch:
    CPU: masked_fill_cpu
  kernel_into: masked_fill_into
  tensor_as_scalar: masked_fill_value

- func: masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor
  dispatch:
    CPU: masked_fill_scalar_cpu
  kernel_into: masked_fill_into
"""


def test_tensor_as_scalar_reads_the_tensor_through_the_named_function():
    files = generate(MASKED_FILL)
    assert ("KILN_INTO_KERNEL Tensor masked_fill_into(ResultInto into, const Tensor& out, const Tensor& self, "
            "const Tensor& mask, const Scalar& value);") in files["IntoKernels.h"]
    assert "KILN_INTO_KERNEL Scalar masked_fill_value(const Tensor& value);" in files["IntoKernels.h"]
    assert ("  return masked_fill_into(ResultInto::NewTensor, Tensor(), self, mask, masked_fill_value(value));"
            in files["IntoKernels.cpp"])


def test_tensor_as_scalar_needs_kernel_into():
    text = MASKED_FILL.replace("  kernel_into: masked_fill_into\n  tensor_as_scalar", "  tensor_as_scalar")
    assert "tensor_as_scalar needs kernel_into" in error_of(text)
