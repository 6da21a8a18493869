// Logical ops (logical_and/or/xor/not: bool results, or converted into an
// out= tensor of any dtype) and bitwise ops (bitwise_and/or/xor/not and the
// shifts: integers and bool, PyTorch's type promotion), with their Scalar,
// in-place and out= forms.
#include "eager/core/Error.h"
#include "eager/kernels/cpu/BinaryOps.h"
#include "eager/kernels/cpu/LogicalOpsStubs.h"
#include "kiln/generated/IntoKernels.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

KILN_DEFINE_DISPATCH(logical_fn, logical_stub);
KILN_DEFINE_DISPATCH(logical_unary_fn, logical_not_stub);
KILN_DEFINE_DISPATCH(logical_fn, bitwise_stub);
KILN_DEFINE_DISPATCH(logical_unary_fn, bitwise_not_stub);
KILN_DEFINE_DISPATCH(shift_fn, shift_stub);

namespace {

template <LogicalOp kOp>
Tensor logical_into(const char* name, ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other) {
  auto iter = comparison_op_iterator(name, into, out, self, other);
  logical_stub(iter, kOp);
  return finish(iter, into);
}

template <LogicalOp kOp>
Tensor bitwise_into(const char* name, ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other) {
  auto iter = binary_op_iterator(name, into, out, self, other);
  bitwise_stub(iter, kOp);
  return finish(iter, into);
}

template <bool kLeft>
Tensor shift_into(const char* name, ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other) {
  auto iter = binary_op_iterator(name, into, out, self, other);
  shift_stub(iter, kLeft);
  return finish(iter, into);
}

}  // namespace

// The kernels pointwise_binary.yaml's kernel_into names (Note [Generated entry points], tools/opgen/into.py).
#define KILN_DEFINE_INTO(op, body)                                                            \
  Tensor op##_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other) { \
    return body(#op, into, out, self, other);                                                  \
  }
KILN_DEFINE_INTO(logical_and, logical_into<LogicalOp::And>)
KILN_DEFINE_INTO(logical_or, logical_into<LogicalOp::Or>)
KILN_DEFINE_INTO(logical_xor, logical_into<LogicalOp::Xor>)
KILN_DEFINE_INTO(bitwise_and, bitwise_into<LogicalOp::And>)
KILN_DEFINE_INTO(bitwise_or, bitwise_into<LogicalOp::Or>)
KILN_DEFINE_INTO(bitwise_xor, bitwise_into<LogicalOp::Xor>)
KILN_DEFINE_INTO(bitwise_left_shift, shift_into<true>)
KILN_DEFINE_INTO(bitwise_right_shift, shift_into<false>)
#undef KILN_DEFINE_INTO

/// logical_not: bool, or converted into out= / in-place tensors of any dtype.
Tensor logical_not_into(ResultInto into, const Tensor& out, const Tensor& self) {
  auto iter = TensorIteratorConfig()
                  .set_op_name("logical_not")
                  .add_output(out)
                  .add_const_input(self)
                  .declare_static_dtype(DType::Bool)
                  .cast_common_dtype_to_outputs(true)
                  .resize_outputs(into != ResultInto::InPlace)
                  .build();
  logical_not_stub(iter);
  return finish(iter, into);
}

/// bitwise_not is a strict unary op: an out= tensor must have self's dtype.
Tensor bitwise_not_into(ResultInto into, const Tensor& out, const Tensor& self) {
  KILN_CHECK(!out.defined() || out.dtype() == self.dtype(), "Found dtype ", scalar_type_name(out.dtype()),
             " but expected ", scalar_type_name(self.dtype()));
  auto iter = TensorIteratorConfig()
                  .set_op_name("bitwise_not")
                  .add_output(out)
                  .add_const_input(self)
                  .resize_outputs(into != ResultInto::InPlace)
                  .build();
  bitwise_not_stub(iter);
  return finish(iter, into);
}

}  // namespace kiln::native
