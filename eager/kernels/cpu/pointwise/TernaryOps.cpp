// Ternary and scalar-parameterised pointwise ops: where, clamp/clip (scalar
// and tensor bounds), clamp_min, clamp_max, lerp, addcmul, addcdiv and
// masked_fill, with PyTorch's dtype rules and errors. Loops in
// per_capability/TernaryOpsKernel.cpp.
#include <cmath>
#include <limits>
#include <mutex>
#include <optional>

#include "eager/core/Error.h"
#include "eager/core/Warning.h"
#include "eager/kernels/TypePromotion.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/pointwise/BinaryOps.h"
#include "eager/kernels/cpu/pointwise/BinaryOpsStubs.h"
#include "eager/kernels/cpu/pointwise/TernaryOpsStubs.h"
#include "kiln/generated/IntoKernels.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

KILN_DEFINE_DISPATCH(ternary_fn, where_stub);
KILN_DEFINE_DISPATCH(ternary_fn, clamp_stub);
KILN_DEFINE_DISPATCH(clamp_scalar_fn, clamp_scalar_stub);
KILN_DEFINE_DISPATCH(ternary_scalar_fn, clamp_min_scalar_stub);
KILN_DEFINE_DISPATCH(ternary_scalar_fn, clamp_max_scalar_stub);
KILN_DEFINE_DISPATCH(ternary_scalar_fn, lerp_scalar_stub);
KILN_DEFINE_DISPATCH(ternary_fn, lerp_tensor_stub);
KILN_DEFINE_DISPATCH(ternary_scalar_fn, addcmul_stub);
KILN_DEFINE_DISPATCH(ternary_scalar_fn, addcdiv_stub);
KILN_DEFINE_DISPATCH(ternary_scalar_fn, masked_fill_stub);

namespace {

/// A tensor dtype promoted with a Python number, by category (Note [Promotion by category]).
DType promote_with_scalar(DType t, const Scalar& s) {
  const DType scalar = s.natural_dtype();
  return category(scalar) > category(t) ? scalar : t;
}

bool is_nan(const Scalar& s) { return s.is_floating_point() && std::isnan(s.to_double()); }

Tensor converted(const Tensor& t, DType dtype) { return t.dtype() == dtype ? t : to_dtype_copy(t, dtype); }

/// The strict check of PyTorch's unary ops: an out= tensor has exactly the result dtype.
void check_out_dtype(ResultInto into, const Tensor& out, DType expected) {
  KILN_CHECK(into != ResultInto::Out || out.dtype() == expected, "Found dtype ", scalar_type_name(out.dtype()),
             " but expected ", scalar_type_name(expected));
}

}  // namespace

// The kernels pointwise_binary.yaml's kernel_into names (Note [Generated entry points], tools/opgen/into.py).

// --- where ------------------------------------------------------------------------------

Tensor where_into(ResultInto into, const Tensor& out, const Tensor& condition, const Tensor& self,
                  const Tensor& other) {
  const DType result = result_type(self, other);
  KILN_CHECK(into != ResultInto::Out || out.dtype() == result, "Expected out type to be ", scalar_type_name(result),
             " but got ", scalar_type_name(out.dtype()));
  Tensor cond = condition;
  if (cond.dtype() == DType::UInt8) {
    static std::once_flag warned;
    std::call_once(warned, [] {
      KILN_WARN("where received a uint8 condition tensor. This behavior is deprecated and will be removed in a "
                "future version of kiln. Use a boolean condition instead.");
    });
    cond = to_dtype_copy(cond, DType::Bool);
  }
  KILN_CHECK(cond.dtype() == DType::Bool,
             "where expected condition to be a boolean tensor, but got a tensor with dtype ",
             scalar_type_name(condition.dtype()));
  auto iter = TensorIteratorConfig()
                  .set_op_name("where")
                  .add_output(out)
                  .add_const_input(cond)
                  .add_const_input(converted(self, result))
                  .add_const_input(converted(other, result))
                  .declare_static_dtype(result)
                  .build();
  where_stub(iter);
  return finish(iter, into);
}

// --- clamp ------------------------------------------------------------------------------

constexpr const char* kClampNeedsABound = "kiln.clamp: At least one of 'min' or 'max' must not be None";

/// clamp with scalar bounds (also clamp_min / clamp_max with one bound). The
/// bounds take part in type promotion, by category; a NaN bound makes every
/// element NaN.
Tensor clamp_scalar_into(ResultInto into, const Tensor& out, const Tensor& self, const std::optional<Scalar>& min,
                         const std::optional<Scalar>& max) {
  KILN_CHECK(min.has_value() || max.has_value(), kClampNeedsABound);
  DType result = self.dtype();
  if (!is_floating_point(result)) {
    if (min) result = promote_with_scalar(result, *min);
    if (max) result = promote_with_scalar(result, *max);
    KILN_CHECK(result == self.dtype() || into != ResultInto::InPlace, "result type ", scalar_type_name(result),
               " can't be cast to the desired output type ", type_meta_name(self.dtype()));
  }
  if (into == ResultInto::InPlace) check_inplace(self, {});
  check_out_dtype(into, out, result);
  auto iter = TensorIteratorConfig()
                  .set_op_name("clamp")
                  .add_output(out)
                  .add_const_input(converted(self, result))
                  .resize_outputs(into != ResultInto::InPlace)
                  .build();
  if ((min && is_nan(*min)) || (max && is_nan(*max))) {
    fill_impl(iter.output(), Scalar(std::numeric_limits<double>::quiet_NaN()));
  } else if (min && max) {
    clamp_scalar_stub(iter, *min, *max);
  } else if (max) {
    clamp_max_scalar_stub(iter, *max);
  } else {
    clamp_min_scalar_stub(iter, *min);
  }
  return finish(iter, into);
}

/// clamp with tensor bounds: PyTorch's promotion over self and the bounds; one
/// bound runs maximum (min) or minimum (max).
Tensor clamp_tensor_into(ResultInto into, const Tensor& out, const Tensor& self, const std::optional<Tensor>& min,
                         const std::optional<Tensor>& max) {
  KILN_CHECK(min.has_value() || max.has_value(), kClampNeedsABound);
  if (into == ResultInto::InPlace) check_inplace(self, {min ? &*min : &self, max ? &*max : &self});
  TensorIteratorConfig config;
  config.set_op_name("clamp").add_output(out).add_const_input(self);
  if (min) config.add_const_input(*min);
  if (max) config.add_const_input(*max);
  auto iter = config.promote_inputs_to_common_dtype(true)
                  .cast_common_dtype_to_outputs(true)
                  .enforce_safe_casting_to_output(true)
                  .resize_outputs(into != ResultInto::InPlace)
                  .build();
  if (min && max) {
    clamp_stub(iter);
  } else if (min) {
    maximum_stub(iter);
  } else {
    minimum_stub(iter);
  }
  return finish(iter, into);
}

/// clamp_min and clamp_max with a Scalar bound are clamp with one bound.
Tensor clamp_min_into(ResultInto into, const Tensor& out, const Tensor& self, const Scalar& min) {
  return clamp_scalar_into(into, out, self, min, std::nullopt);
}

Tensor clamp_max_into(ResultInto into, const Tensor& out, const Tensor& self, const Scalar& max) {
  return clamp_scalar_into(into, out, self, std::nullopt, max);
}

Tensor clamp_min_tensor_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& min) {
  auto iter = binary_op_iterator("clamp_min", into, out, self, min);
  maximum_stub(iter);
  return finish(iter, into);
}

Tensor clamp_max_tensor_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& max) {
  auto iter = binary_op_iterator("clamp_max", into, out, self, max);
  minimum_stub(iter);
  return finish(iter, into);
}

// --- lerp -------------------------------------------------------------------------------

namespace {

void check_lerp_dtype(const Tensor& self, const Tensor& arg, const char* name) {
  KILN_CHECK(self.dtype() == arg.dtype(), "expected dtype ", type_meta_name(self.dtype()), " for `", name,
             "` but got dtype ", type_meta_name(arg.dtype()));
}

}  // namespace

Tensor lerp_scalar_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& end,
                        const Scalar& weight) {
  check_lerp_dtype(self, end, "end");
  auto iter = binary_op_iterator("lerp", into, out, self, end);  // checks an in-place self
  lerp_scalar_stub(iter, weight);
  return finish(iter, into);
}

/// A tensor weight has self's dtype, unless it is 0-dim: then it is promoted
/// with the others, and the result may be cast to an out= tensor.
Tensor lerp_tensor_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& end,
                        const Tensor& weight) {
  check_lerp_dtype(self, end, "end");
  if (into == ResultInto::InPlace) check_inplace(self, {&end, &weight});
  const bool promote_weight = weight.dim() == 0;
  if (!promote_weight) {
    check_lerp_dtype(self, weight, "weight");
    check_out_dtype(into, out, self.dtype());
  }
  auto iter = TensorIteratorConfig()
                  .set_op_name("lerp")
                  .add_output(out)
                  .add_const_input(self)
                  .add_const_input(end)
                  .add_const_input(weight)
                  .promote_inputs_to_common_dtype(promote_weight)
                  .cast_common_dtype_to_outputs(promote_weight)
                  .enforce_safe_casting_to_output(promote_weight)
                  .resize_outputs(into != ResultInto::InPlace)
                  .build();
  lerp_tensor_stub(iter);
  return finish(iter, into);
}

// --- addcmul, addcdiv ------------------------------------------------------------------------

namespace {

/// self + value * tensor1 * tensor2, or with `divide` self + value * tensor1 / tensor2.
Tensor addc_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& tensor1,
                 const Tensor& tensor2, const Scalar& value, bool divide) {
  if (divide) {
    KILN_CHECK(!(is_integral(tensor1.dtype(), /*include_bool=*/true) &&
                 is_integral(tensor2.dtype(), /*include_bool=*/true)),
               "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform "
               "a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + "
               "value * kiln.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * "
               "tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: "
               "(input + value * tensor1 / tensor2), for all dtypes.");
  }
  if (into == ResultInto::InPlace) check_inplace(self, {&tensor1, &tensor2});
  auto iter = TensorIteratorConfig()
                  .set_op_name(divide ? "addcdiv" : "addcmul")
                  .add_output(out)
                  .add_const_input(self)
                  .add_const_input(tensor1)
                  .add_const_input(tensor2)
                  .promote_inputs_to_common_dtype(true)
                  .cast_common_dtype_to_outputs(true)
                  .enforce_safe_casting_to_output(true)
                  .resize_outputs(into != ResultInto::InPlace)
                  .build();
  (divide ? addcdiv_stub : addcmul_stub)(iter, value);
  return finish(iter, into);
}

}  // namespace

Tensor addcmul_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& tensor1,
                    const Tensor& tensor2, const Scalar& value) {
  return addc_into(into, out, self, tensor1, tensor2, value, /*divide=*/false);
}

Tensor addcdiv_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& tensor1,
                    const Tensor& tensor2, const Scalar& value) {
  return addc_into(into, out, self, tensor1, tensor2, value, /*divide=*/true);
}

// --- masked_fill ------------------------------------------------------------------------------

/// self where mask is false, value where it is true; the mask broadcasts to
/// self (and, out of place, self to the mask). masked_fill has no out= form, so `out` is never used; masked_fill.Tensor reads its value through
/// masked_fill_value (tensor_as_scalar in ops.yaml).
Tensor masked_fill_into(ResultInto into, const Tensor&, const Tensor& self, const Tensor& mask, const Scalar& value) {
  KILN_CHECK(mask.dtype() == DType::Bool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
             type_meta_name(mask.dtype()));
  auto iter = TensorIteratorConfig()
                  .set_op_name("masked_fill")
                  .add_output(into == ResultInto::InPlace ? self : Tensor())
                  .add_const_input(self)
                  .add_const_input(mask)
                  .declare_static_dtype(self.dtype())
                  .resize_outputs(into != ResultInto::InPlace)
                  .build();
  masked_fill_stub(iter, value);
  return finish(iter, into);
}

Scalar masked_fill_value(const Tensor& value) {
  KILN_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
             value.dim(), " dimension(s).");
  return value.impl()->is_meta() ? zero_of_item_kind(value.dtype()) : tensor_item(value);
}

// --- the kernels ops.yaml names that opgen does not write ------------------------------------------

// clip is clamp (CompositeImplicit: it runs through clamp's kernels).
Tensor clip(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  return kiln::clamp(self, min, max);
}
Tensor clip_tensor(const Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  return kiln::clamp(self, min, max);
}
Tensor clip_(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  return self.clamp_(min, max);
}
Tensor clip_tensor_(const Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  return self.clamp_(min, max);
}
Tensor clip_out(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max,
                const Tensor& out) {
  return kiln::clamp_out(out, self, min, max);
}
Tensor clip_tensor_out(const Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max,
                       const Tensor& out) {
  return kiln::clamp_out(out, self, min, max);
}

}  // namespace kiln::native
