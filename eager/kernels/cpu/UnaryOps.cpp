// Unary pointwise math ops (neg, abs, sign, exp, log, trigonometric, rounding,
// the predicates isnan/isinf/..., nan_to_num, logit, round.decimals): dtype
// checks and the TensorIterator set-up, compiled once; the loops are in
// kernels/UnaryOpsKernel.cpp.
#include "eager/kernels/cpu/UnaryOps.h"
#include "eager/kernels/cpu/ComplexOps.h"

#include <limits>
#include <optional>

#include "eager/core/Error.h"
#include "eager/kernels/Resize.h"
#include "eager/kernels/Views.h"
#include "eager/kernels/cpu/Copy.h"
#include "eager/kernels/cpu/UnaryOpsStubs.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/IntoKernels.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

#define KILN_DEFINE_UNARY_STUB_(op) KILN_DEFINE_DISPATCH(unary_fn, op##_stub);
KILN_FORALL_UNARY_FLOAT_OPS(KILN_DEFINE_UNARY_STUB_)
KILN_FORALL_UNARY_SAME_DTYPE_OPS(KILN_DEFINE_UNARY_STUB_)
KILN_FORALL_UNARY_PREDICATES(KILN_DEFINE_UNARY_STUB_)
#undef KILN_DEFINE_UNARY_STUB_
KILN_DEFINE_DISPATCH(round_decimals_fn, round_decimals_stub);
KILN_DEFINE_DISPATCH(nan_to_num_fn, nan_to_num_stub);
KILN_DEFINE_DISPATCH(logit_fn, logit_stub);

// --- shared set-up (UnaryOps.h) ------------------------------------------------------

TensorIterator unary_float_iterator(const char* name, ResultInto into, const Tensor& out, const Tensor& self) {
  if (into == ResultInto::InPlace) check_inplace(self, {});
  return TensorIteratorConfig()
      .set_op_name(name)
      .add_output(out)
      .add_const_input(self)
      .promote_inputs_to_common_dtype(true)
      .promote_integer_inputs_to_float(true)
      .cast_common_dtype_to_outputs(true)
      .enforce_safe_casting_to_output(true)
      .resize_outputs(into != ResultInto::InPlace)
      .build();
}

TensorIterator unary_same_dtype_iterator(const char* name, ResultInto into, const Tensor& out, const Tensor& self) {
  KILN_CHECK(!out.defined() || out.dtype() == self.dtype(), "Found dtype ", scalar_type_name(out.dtype()),
             " but expected ", scalar_type_name(self.dtype()));
  return TensorIteratorConfig()
      .set_op_name(name)
      .add_output(out)
      .add_const_input(self)
      .resize_outputs(into != ResultInto::InPlace)
      .build();
}

TensorIterator unary_predicate_iterator(const char* name, ResultInto into, const Tensor& out, const Tensor& self) {
  KILN_CHECK(!out.defined() || out.dtype() == DType::Bool, name, " does not support non-boolean outputs.");
  return TensorIteratorConfig()
      .set_op_name(name)
      .add_output(out)
      .add_const_input(self)
      .declare_static_dtype(DType::Bool)
      .check_all_same_dtype(false)
      .resize_outputs(into != ResultInto::InPlace)
      .build();
}

// --- each op's kernel, the one that kernel_into names (Note [Generated entry points], tools/opgen/into.py) ---

#define KILN_UNARY_FLOAT_INTO_(op)                                                   \
  Tensor op##_into(ResultInto into, const Tensor& out, const Tensor& self) {         \
    if (is_complex(self.dtype())) return complex_unary_into(#op, into, out, self);  \
    auto iter = unary_float_iterator(#op, into, out, self);                          \
    op##_stub(iter);                                                                  \
    return finish(iter, into);                                                        \
  }
KILN_FORALL_UNARY_FLOAT_OPS(KILN_UNARY_FLOAT_INTO_)
#undef KILN_UNARY_FLOAT_INTO_

namespace {

/// PyTorch's per-op dtype rules of the same-dtype ops, checked before the loop.
void check_same_dtype_op(const char* name, const Tensor& self) {
  if (self.dtype() != DType::Bool) return;
  const std::string_view op(name);
  KILN_CHECK(op != "neg",
             "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, "
             "use the `~` or `logical_not()` operator instead.");
  if (op == "abs") fail_not_implemented("abs_cpu", DType::Bool);
  if (op == "frac") fail_not_implemented("frac_cpu", DType::Bool);
  if (op == "floor") fail_not_implemented("floor_vml_cpu", DType::Bool);
  if (op == "ceil") fail_not_implemented("ceil_vml_cpu", DType::Bool);
  if (op == "round") fail_not_implemented("round_vml_cpu", DType::Bool);
  if (op == "trunc") fail_not_implemented("trunc_vml_cpu", DType::Bool);
}

}  // namespace

#define KILN_UNARY_SAME_DTYPE_INTO_(op)                                              \
  Tensor op##_into(ResultInto into, const Tensor& out, const Tensor& self) {         \
    if (#op == std::string_view("abs") && is_complex(self.dtype())) {                 \
      return complex_abs_into(into, out, self);                                       \
    }                                                                                 \
    if (#op != std::string_view("neg") && into == ResultInto::InPlace) {               \
      check_inplace(self, {}); /* PyTorch checks overlap first, neg's bool rule before */ \
    }                                                                                 \
    check_same_dtype_op(#op, self);                                                   \
    if (#op == std::string_view("neg") && into == ResultInto::InPlace) check_inplace(self, {}); \
    if (#op == std::string_view("frac") && !is_floating_point(self.dtype())) {        \
      fail_not_implemented("frac_cpu", self.dtype());                                 \
    }                                                                                 \
    auto iter = unary_same_dtype_iterator(#op, into, out, self);                      \
    op##_stub(iter);                                                                  \
    return finish(iter, into);                                                        \
  }
KILN_UNARY_SAME_DTYPE_INTO_(neg)
KILN_UNARY_SAME_DTYPE_INTO_(abs)
KILN_UNARY_SAME_DTYPE_INTO_(sign)
KILN_UNARY_SAME_DTYPE_INTO_(floor)
KILN_UNARY_SAME_DTYPE_INTO_(ceil)
KILN_UNARY_SAME_DTYPE_INTO_(round)
KILN_UNARY_SAME_DTYPE_INTO_(trunc)
KILN_UNARY_SAME_DTYPE_INTO_(frac)
#undef KILN_UNARY_SAME_DTYPE_INTO_

/// sgn of a real tensor is sign.
Tensor sgn_into(ResultInto into, const Tensor& out, const Tensor& self) {
  return is_complex(self.dtype()) ? complex_sgn_into(into, out, self) : sign_into(into, out, self);
}

/// square is pow(self, 2): bool squares as int64, and out= takes any safe cast.
Tensor square_into(ResultInto into, const Tensor& out, const Tensor& self) {
  if (into == ResultInto::InPlace) check_inplace(self, {});
  if (is_complex(self.dtype())) return complex_unary_into("square", into, out, self);
  const Tensor input = self.dtype() == DType::Bool ? to_dtype_copy(self, DType::Int64) : self;
  auto iter = TensorIteratorConfig()
                  .set_op_name("square")
                  .add_output(out)
                  .add_const_input(input)
                  .cast_common_dtype_to_outputs(true)
                  .enforce_safe_casting_to_output(true)
                  .resize_outputs(into != ResultInto::InPlace)
                  .build();
  square_stub(iter);
  return finish(iter, into);
}

#define KILN_UNARY_PREDICATE_INTO_(op)                                               \
  Tensor op##_into(ResultInto into, const Tensor& out, const Tensor& self) {         \
    auto iter = unary_predicate_iterator(#op, into, out, self);                       \
    op##_stub(iter);                                                                  \
    return finish(iter, into);                                                        \
  }
KILN_FORALL_UNARY_PREDICATES(KILN_UNARY_PREDICATE_INTO_)
#undef KILN_UNARY_PREDICATE_INTO_

Tensor round_decimals_into(ResultInto into, const Tensor& out, const Tensor& self, int64_t decimals) {
  if (into == ResultInto::InPlace) check_inplace(self, {});
  if (!is_floating_point(self.dtype())) fail_not_implemented("round_cpu", self.dtype());
  auto iter = unary_same_dtype_iterator("round", into, out, self);
  round_decimals_stub(iter, decimals);
  return finish(iter, into);
}

Tensor nan_to_num_into(ResultInto into, const Tensor& out, const Tensor& self, std::optional<double> nan,
                       std::optional<double> posinf, std::optional<double> neginf) {
  KILN_CHECK(!out.defined() || out.dtype() == self.dtype(), "nan_to_num: dtype of out: ",
             scalar_type_name(out.dtype()), " should be same as input: ", scalar_type_name(self.dtype()));
  if (is_complex(self.dtype())) {
    // The real and imaginary parts each, as PyTorch: on the [..., 2] real views.
    if (into == ResultInto::InPlace) check_inplace(self, {});
    Tensor result = into == ResultInto::InPlace ? self : empty(self.sizes(), self.dtype(), self.device());
    nan_to_num_into(ResultInto::Out, view_as_real_impl(result), view_as_real_impl(self.contiguous()), nan, posinf,
                    neginf);
    if (into == ResultInto::InPlace) self.impl()->bump_version();
    return into == ResultInto::Out ? copy_castable_to_out(result, out) : result;
  }
  if (!is_floating_point(self.dtype())) {  // nothing to replace: PyTorch copies (in place: self onto itself)
    if (into == ResultInto::InPlace) {
      self.impl()->bump_version();
      return self;
    }
  }
  if (into == ResultInto::InPlace) check_inplace(self, {});
  auto iter = TensorIteratorConfig()
                  .set_op_name("nan_to_num")
                  .add_output(out)
                  .add_const_input(self)
                  .resize_outputs(into != ResultInto::InPlace)
                  .build();
  nan_to_num_stub(iter, nan.value_or(0.0), posinf, neginf);
  return finish(iter, into);
}

Tensor logit_into(ResultInto into, const Tensor& out, const Tensor& self, std::optional<double> eps) {
  auto iter = unary_float_iterator("logit", into, out, self);
  logit_stub(iter, eps);
  return finish(iter, into);
}

// Aliases (CompositeImplicit): the op they name does the work and records the gradient.
Tensor negative(const Tensor& self) { return kiln::neg(self); }
Tensor negative_(const Tensor& self) { return kiln::neg_(self); }
Tensor negative_out(const Tensor& self, const Tensor& out) { return kiln::neg_out(out, self); }
Tensor absolute(const Tensor& self) { return kiln::abs(self); }
Tensor absolute_(const Tensor& self) { return kiln::abs_(self); }
Tensor absolute_out(const Tensor& self, const Tensor& out) { return kiln::abs_out(out, self); }
Tensor fix(const Tensor& self) { return kiln::trunc(self); }
Tensor fix_(const Tensor& self) { return kiln::trunc_(self); }
Tensor fix_out(const Tensor& self, const Tensor& out) { return kiln::trunc_out(out, self); }

}  // namespace kiln::native
