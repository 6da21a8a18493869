// Binary arithmetic ops (add, sub, rsub, mul, div, true_divide, floor_divide,
// remainder, fmod, pow, maximum, minimum, fmax, fmin): argument checks and the
// TensorIterator set-up, compiled once; the loops are in
// per_capability/BinaryOpsKernel.cpp and per_capability/PowKernel.cpp. Also the set-up
// helpers every binary/ternary op file shares (BinaryOps.h).
#include "eager/kernels/cpu/pointwise/BinaryOps.h"

#include <algorithm>
#include <complex>
#include <cstring>
#include <utility>
#include <optional>
#include <string_view>

#include "eager/core/Error.h"
#include "eager/kernels/MemorySpan.h"
#include "eager/kernels/TypePromotion.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/pointwise/BinaryOpsStubs.h"
#include "kiln/generated/IntoKernels.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

KILN_DEFINE_DISPATCH(binary_alpha_fn, add_stub);
KILN_DEFINE_DISPATCH(binary_fn, mul_stub);
KILN_DEFINE_DISPATCH(binary_fn, div_true_stub);
KILN_DEFINE_DISPATCH(binary_fn, div_trunc_stub);
KILN_DEFINE_DISPATCH(binary_fn, div_floor_stub);
KILN_DEFINE_DISPATCH(binary_fn, remainder_stub);
KILN_DEFINE_DISPATCH(binary_fn, fmod_stub);
KILN_DEFINE_DISPATCH(binary_fn, maximum_stub);
KILN_DEFINE_DISPATCH(binary_fn, minimum_stub);
KILN_DEFINE_DISPATCH(binary_fn, fmax_stub);
KILN_DEFINE_DISPATCH(binary_fn, fmin_stub);
KILN_DEFINE_DISPATCH(binary_fn, pow_tensor_tensor_stub);
KILN_DEFINE_DISPATCH(unary_scalar_fn, pow_tensor_scalar_stub);

// --- shared set-up (BinaryOps.h) ----------------------------------------------------

Tensor scalar_operand(const Scalar& value, const Tensor& like) {
  // Made directly in the dtype the op will compute in (the wrapped number then
  // needs no conversion pass), converting as TensorIterator would: integers
  // wrap (uint8 + 300 is 44, as in PyTorch), floats round.
  // A bool stays bool: sub's checks read it (float_tensor - True is an error).
  // Beside a float16/bfloat16 CPU tensor a real number is made in float32: mul and the divisions read
  // it at that precision, the other ops convert it as TensorIterator converts any input (float32, then
  // the dtype, as PyTorch's double -> Half goes through float): Note [CPU scalars at opmath precision].
  DType dtype = value.is_bool() ? DType::Bool : result_type(like, value);
  const bool reduced_float = dtype == DType::Float16 || dtype == DType::BFloat16;
  if (reduced_float && !value.is_complex() && !like.impl()->is_meta() && like.device().is_cpu()) {
    dtype = DType::Float32;
  }
  // Beside a meta tensor the number stays a CPU 0-dim tensor, as PyTorch's wrapped numbers
  // (Note [TensorIterator on meta tensors]).
  Tensor t = empty({}, dtype, like.impl()->is_meta() ? Device() : like.device());
  visit_dtype_and_complex(dtype, [&](auto tag) {
    using T = decltype(tag);
    T v;
    if (value.is_complex()) {
      v = value.to<T>();  // real T only when the imaginary part is 0 (to<T> checks)
    } else if (value.is_floating_point()) {
      v = convert_element<T>(value.to_double());
    } else if (value.is_bool()) {
      v = convert_element<T>(value.to_bool());
    } else {
      v = convert_element<T>(value.to_int64());
    }
    std::memcpy(t.data_ptr(), &v, sizeof(T));
  });
  t.impl()->set_wrapped_number(true);
  return t;
}

namespace {

bool same_values(IntArrayRef a, IntArrayRef b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); }

bool same_geometry(const Tensor& a, const Tensor& b) {
  return a.data_ptr() == b.data_ptr() && same_values(a.sizes(), b.sizes()) && same_values(a.strides(), b.strides());
}

}  // namespace

void check_inplace(const Tensor& self, std::initializer_list<const Tensor*> inputs) {
  if (self.numel() > 1) {
    for (int64_t d = 0; d < self.dim(); ++d) {
      KILN_CHECK(!(self.size(d) > 1 && self.stride(d) == 0),
                 "unsupported operation: more than one element of the written-to tensor refers to a single memory "
                 "location. Please clone() the tensor before performing the operation.");
    }
  }
  DimVector shape(self.sizes());
  for (const Tensor* input : inputs) {
    if (self.numel() > 0 && input->numel() > 0 && input->storage() == self.storage() &&
        !same_geometry(*input, self)) {
      KILN_CHECK(!byte_spans_meet(self, *input),
                 "unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
                 "single memory location. Please clone() the tensor before performing the operation.");
    }
  }
  for (const Tensor* input : inputs) shape = broadcast_shapes(shape, input->sizes());
  KILN_CHECK(same_values(shape, self.sizes()), "output with shape ", self.sizes(),
             " doesn't match the broadcast shape ", shape);
}

TensorIterator binary_op_iterator(const char* name, ResultInto into, const Tensor& out, const Tensor& self,
                                  const Tensor& other, bool integer_to_float) {
  if (into == ResultInto::InPlace) check_inplace(self, {&other});
  return TensorIteratorConfig()
      .set_op_name(name)
      .add_output(out)
      .add_const_input(self)
      .add_const_input(other)
      .promote_inputs_to_common_dtype(true)
      .promote_integer_inputs_to_float(integer_to_float)
      .cast_common_dtype_to_outputs(true)
      .enforce_safe_casting_to_output(true)
      .resize_outputs(into != ResultInto::InPlace)
      .build();
}

TensorIterator comparison_op_iterator(const char* name, ResultInto into, const Tensor& out, const Tensor& self,
                                      const Tensor& other) {
  // PyTorch computes a non-bool out= in the common dtype and casts; computing
  // bool and casting gives the same 0s and 1s.
  if (into == ResultInto::InPlace) check_inplace(self, {&other});
  return TensorIteratorConfig()
      .set_op_name(name)
      .add_output(out)
      .add_const_input(self)
      .add_const_input(other)
      .promote_inputs_to_common_dtype(true)
      .declare_static_dtype(DType::Bool)
      .cast_common_dtype_to_outputs(true)
      .resize_outputs(into != ResultInto::InPlace)
      .build();
}

Tensor finish(const TensorIterator& iter, ResultInto into) {
  const Tensor& result = iter.output();
  if (into != ResultInto::NewTensor) result.impl()->bump_version();
  return result;
}

void fail_not_implemented(const char* kernel_name, DType dtype) {
  KILN_FAIL(NotImplemented, "\"", kernel_name, "\" not implemented for '", scalar_type_name(dtype), "'");
}

std::string_view type_meta_name(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float";
    case DType::Float64: return "double";
    case DType::Float16: return "kiln::Half";
    case DType::BFloat16: return "kiln::BFloat16";
    case DType::Int8: return "signed char";
    case DType::Int16: return "short int";
    case DType::Int32: return "int";
    case DType::Int64: return "long int";
    case DType::UInt8: return "unsigned char";
    case DType::Bool: return "bool";
    case DType::Complex64: return "c10::complex<float>";
    case DType::Complex128: return "c10::complex<double>";
  }
  return "unknown";
}

Scalar tensor_item(const Tensor& t) {
  KILN_CHECK(t.numel() == 1, "a Tensor with ", t.numel(), " elements cannot be converted to Scalar");
  return visit_dtype_and_complex(t.dtype(), [&](auto tag) -> Scalar {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, t.data_ptr(), sizeof(T));
    if constexpr (is_complex_v<T>) {  // a complex value then fails its conversion as torch's does
      return Scalar(std::complex<double>(v.real(), v.imag()));
    } else if constexpr (std::is_same_v<T, bool>) {
      return Scalar(v);
    } else if constexpr (std::is_integral_v<T>) {
      return Scalar(static_cast<int64_t>(v));
    } else if constexpr (std::is_floating_point_v<T>) {
      return Scalar(static_cast<double>(v));
    } else {
      return Scalar(static_cast<double>(static_cast<float>(v)));  // float16/bfloat16 via float
    }
  });
}

Scalar zero_of_item_kind(DType dtype) {
  if (is_complex(dtype)) return Scalar(std::complex<double>(0.0, 0.0));
  if (dtype == DType::Bool) return Scalar(false);
  if (is_floating_point(dtype)) return Scalar(0.0);
  return Scalar(int64_t{0});
}

// --- add, sub, rsub -------------------------------------------------------------------

namespace {

void check_alpha(DType dtype, const Scalar& alpha) {
  KILN_CHECK(!alpha.is_bool() || dtype == DType::Bool, "Boolean alpha only supported for Boolean results.");
  KILN_CHECK(!alpha.is_complex() || is_complex(dtype),
             "For non-complex input tensors, argument alpha must not be a complex number.");
  KILN_CHECK(is_floating_point(dtype) || is_complex(dtype) || alpha.is_integral() || alpha.is_bool() ||
                 alpha.is_complex(),
             "For integral input tensors, argument alpha must not be a floating point number.");
}

void check_sub(const Tensor& self, const Tensor& other) {
  KILN_CHECK(self.dtype() != DType::Bool || other.dtype() != DType::Bool,
             "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
             "`logical_xor()` operator instead.");
  KILN_CHECK(self.dtype() != DType::Bool && other.dtype() != DType::Bool,
             "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a "
             "mask, use the `~` or `logical_not()` operator instead.");
}

}  // namespace

/// out = self + alpha * other.
Tensor add_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other, const Scalar& alpha) {
  auto iter = binary_op_iterator("add", into, out, self, other);
  check_alpha(iter.common_dtype(), alpha);
  add_stub(iter, alpha);
  return finish(iter, into);
}

/// out = self - alpha * other: PyTorch's add kernel with -alpha, after sub's own checks.
Tensor sub_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other, const Scalar& alpha) {
  check_sub(self, other);
  auto iter = binary_op_iterator("sub", into, out, self, other);
  check_alpha(iter.common_dtype(), alpha);
  add_stub(iter, alpha.negated());
  return finish(iter, into);
}

// --- the ops whose kernel is one stub --------------------------------------------------

namespace {

template <auto& stub>
Tensor run_binary(const char* name, ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other,
                  bool integer_to_float = false) {
  auto iter = binary_op_iterator(name, into, out, self, other, integer_to_float);
  stub(iter);
  return finish(iter, into);
}

}  // namespace

Tensor mul_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other) {
  return run_binary<mul_stub>("mul", into, out, self, other);
}
Tensor div_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other) {
  return run_binary<div_true_stub>("div", into, out, self, other, /*integer_to_float=*/true);
}
Tensor floor_divide_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other) {
  return run_binary<div_floor_stub>("floor_divide", into, out, self, other);
}
Tensor remainder_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other) {
  return run_binary<remainder_stub>("remainder", into, out, self, other);
}
Tensor fmod_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other) {
  return run_binary<fmod_stub>("fmod", into, out, self, other);
}

/// div with rounding_mode None (true division), "trunc" or "floor".
Tensor div_mode_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other,
                     std::optional<std::string_view> rounding_mode) {
  if (!rounding_mode.has_value()) return div_into(into, out, self, other);
  if (*rounding_mode == "trunc") return run_binary<div_trunc_stub>("div", into, out, self, other);
  if (*rounding_mode == "floor") return run_binary<div_floor_stub>("div", into, out, self, other);
  KILN_FAIL(Runtime, "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", *rounding_mode,
            "'");
}

// --- pow ------------------------------------------------------------------------------

Tensor pow_into(ResultInto into, const Tensor& out, const Tensor& base, const Tensor& exponent) {
  return run_binary<pow_tensor_tensor_stub>("pow", into, out, base, exponent);
}

namespace {

/// PyTorch's Scalar::equal: a bool scalar equals only a bool.
bool scalar_equals(const Scalar& s, double value) { return !s.is_bool() && s.equals(value); }

}  // namespace

Tensor pow_scalar_exponent_into(ResultInto into, const Tensor& out, const Tensor& base, const Scalar& exponent) {
  KILN_CHECK(!(is_integral(base.dtype(), /*include_bool=*/true) && exponent.is_integral() && exponent.to_int64() < 0),
             "Integers to negative integer powers are not allowed.");
  const DType common = result_type(base, exponent);
  const Tensor converted = base.dtype() == common ? base : to_dtype_copy(base, common);
  auto iter = TensorIteratorConfig()
                  .set_op_name("pow")
                  .add_output(out)
                  .add_const_input(converted)
                  .cast_common_dtype_to_outputs(true)
                  .enforce_safe_casting_to_output(true)
                  .resize_outputs(into != ResultInto::InPlace)
                  .build();
  if (scalar_equals(exponent, 0.0) || (exponent.is_bool() && !exponent.to_bool())) {
    fill_impl(iter.output(), Scalar(int64_t{1}));
  } else if (scalar_equals(exponent, 1.0) || (exponent.is_bool() && exponent.to_bool())) {
    copy_(iter.output(), converted);
  } else {
    pow_tensor_scalar_stub(iter, exponent);
  }
  return finish(iter, into);
}

/// Scalar ** Tensor: 1 ** anything is 1 (PyTorch skips the kernel); otherwise
/// the scalar is a wrapped number and the Tensor ** Tensor kernel runs.
Tensor pow_scalar_base_into(ResultInto into, const Tensor& out, const Scalar& base, const Tensor& exponent) {
  const Tensor wrapped = scalar_operand(base, exponent);
  if (!scalar_equals(base, 1.0)) return pow_into(into, out, wrapped, exponent);
  auto iter = binary_op_iterator("pow", into, out, wrapped, exponent);
  fill_impl(iter.output(), Scalar(int64_t{1}));
  return finish(iter, into);
}

// --- maximum, minimum, fmax, fmin -------------------------------------------------------

Tensor maximum_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other) {
  return run_binary<maximum_stub>("maximum", into, out, self, other);
}
Tensor minimum_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other) {
  return run_binary<minimum_stub>("minimum", into, out, self, other);
}
Tensor fmax_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other) {
  return run_binary<fmax_stub>("fmax", into, out, self, other);
}
Tensor fmin_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other) {
  return run_binary<fmin_stub>("fmin", into, out, self, other);
}

// rsub swaps its operands into sub's kernel (no in-place or out= form to generate).
// rsub is sub with its operands swapped (rsub.Scalar's `other` arrives as a
// wrapped number: Note [Generated entry points]).
Tensor rsub_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return sub_into(into, out, other, self, alpha);
}

// true_divide is div (CompositeImplicit: it runs through div's kernels).
Tensor true_divide(const Tensor& self, const Tensor& other) { return kiln::div(self, other); }
Tensor true_divide_scalar(const Tensor& self, const Scalar& other) { return kiln::div(self, other); }
Tensor true_divide_(const Tensor& self, const Tensor& other) { return self.div_(other); }
Tensor true_divide_scalar_(const Tensor& self, const Scalar& other) { return self.div_(other); }
Tensor true_divide_out(const Tensor& self, const Tensor& other, const Tensor& out) {
  return kiln::div_out(out, self, other);
}

}  // namespace kiln::native
