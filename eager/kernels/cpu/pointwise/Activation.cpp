// Activations and their backward ops: dtype and argument checks (PyTorch's
// messages) and the TensorIterator set-up, compiled once; the loops are in
// per_capability/ActivationKernel.cpp. relu6, selu and celu are CompositeImplicit
// over hardtanh and elu, as in PyTorch.
#include <optional>
#include <string_view>

#include "eager/core/Error.h"
#include "eager/kernels/cpu/pointwise/ActivationStubs.h"
#include "eager/kernels/cpu/pointwise/ComplexOps.h"
#include "eager/kernels/cpu/pointwise/UnaryOps.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

#define KILN_DEFINE_ACTIVATION_STUB_(op) KILN_DEFINE_DISPATCH(activation_fn, op##_stub);
KILN_FORALL_ACTIVATIONS(KILN_DEFINE_ACTIVATION_STUB_)
KILN_FORALL_ACTIVATION_BACKWARDS(KILN_DEFINE_ACTIVATION_STUB_)
#undef KILN_DEFINE_ACTIVATION_STUB_

namespace {

/// Which dtypes an activation takes, as PyTorch's kernels do.
enum class Accepts : uint8_t {
  Floating,          // NotImplementedError "<kernel>" not implemented for 'Int'
  NumbersNotBool,    // integers too; bool is an error of the op's own
};

/// The forward set-up: the loop computes in self's dtype.
Tensor run_activation(const DispatchStub<activation_fn>& stub, const char* name, const char* kernel_name,
                      Accepts accepts, ResultInto into, const Tensor& out, const Tensor& self,
                      const ActivationArgs& args) {
  if (into == ResultInto::InPlace && std::string_view(name) != "threshold") check_inplace(self, {});
  if (accepts == Accepts::Floating && !is_floating_point(self.dtype())) {
    fail_not_implemented(kernel_name, self.dtype());
  }
  auto iter = unary_same_dtype_iterator(name, into, out, self);
  stub(iter, args);
  return finish(iter, into);
}

/// The backward set-up: grad_output and the saved tensor promote to their common dtype.
Tensor run_backward(const DispatchStub<activation_fn>& stub, const char* name, const Tensor& grad_output,
                    const Tensor& saved, const ActivationArgs& args) {
  auto iter = binary_op_iterator(name, ResultInto::NewTensor, Tensor(), grad_output, saved);
  if (!is_floating_point(iter.common_dtype()) && std::string_view(name) != "threshold_backward") {
    fail_not_implemented(name, iter.common_dtype());
  }
  stub(iter, args);
  return iter.output();
}

/// PyTorch's Scalar conversion check: "value cannot be converted to type uint8_t without overflow".
void check_fits_integer(const Scalar& value, DType dtype) {
  const double v = value.to_double();
  double lo = 0;
  double hi = 0;
  const char* name = "";
  switch (dtype) {
    case DType::UInt8: lo = 0, hi = 255, name = "uint8_t"; break;
    case DType::Int8: lo = -128, hi = 127, name = "int8_t"; break;
    case DType::Int16: lo = -32768, hi = 32767, name = "int16_t"; break;
    case DType::Int32: lo = -2147483648.0, hi = 2147483647.0, name = "int"; break;
    default: return;  // int64: any integral Scalar fits
  }
  KILN_CHECK(v >= lo && v <= hi, "value cannot be converted to type ", name, " without overflow");
}

bool gelu_is_tanh(std::string_view approximate) {
  KILN_CHECK(approximate == "none" || approximate == "tanh", "approximate argument must be either none or tanh.");
  return approximate == "tanh";
}

Tensor relu_into(ResultInto into, const Tensor& out, const Tensor& self) {
  KILN_CHECK(self.dtype() != DType::Bool, "Boolean inputs not supported for relu");
  return run_activation(relu_stub, "relu", "relu_cpu", Accepts::NumbersNotBool, into, out, self, {});
}

Tensor hardtanh_into(ResultInto into, const Tensor& out, const Tensor& self, const Scalar& min_val,
                     const Scalar& max_val) {
  KILN_CHECK(self.dtype() != DType::Bool, "Bool inputs not supported for hardtanh");
  KILN_CHECK(!(self.dtype() == DType::UInt8 && (min_val.to_int64() < 0 || max_val.to_int64() < 0)),
             "cannot do hardtanh on an unsigned type with negative limits");
  return run_activation(hardtanh_stub, "hardtanh", "hardtanh_cpu", Accepts::NumbersNotBool, into, out, self,
                        {min_val, max_val, Scalar(), false});
}

Tensor threshold_into(ResultInto into, const Tensor& out, const Tensor& self, const Scalar& threshold,
                      const Scalar& value) {
  if (self.dtype() == DType::Bool) fail_not_implemented("threshold_cpu", DType::Bool);
  if (is_integral(self.dtype(), /*include_bool=*/false)) {
    check_fits_integer(threshold, self.dtype());
    check_fits_integer(value, self.dtype());
  }
  // PyTorch's threshold_ has no overlap check (an expanded self is written once per memory location).
  return run_activation(threshold_stub, "threshold", "threshold_cpu", Accepts::NumbersNotBool, into, out, self,
                        {threshold, value, Scalar(), false});
}

/// The forward of a floating-only activation with arguments `args`.
#define KILN_FLOATING_ACTIVATION_INTO_(op, kernel_name)                                                     \
  Tensor op##_into(ResultInto into, const Tensor& out, const Tensor& self, const ActivationArgs& args) {  \
    return run_activation(op##_stub, #op, kernel_name, Accepts::Floating, into, out, self, args);          \
  }
KILN_FLOATING_ACTIVATION_INTO_(gelu, "GeluKernelImpl")
KILN_FLOATING_ACTIVATION_INTO_(mish, "mish_cpu")
KILN_FLOATING_ACTIVATION_INTO_(softplus, "softplus_cpu")
KILN_FLOATING_ACTIVATION_INTO_(leaky_relu, "leaky_relu_cpu")
KILN_FLOATING_ACTIVATION_INTO_(elu, "elu_cpu")
KILN_FLOATING_ACTIVATION_INTO_(hardsigmoid, "hardsigmoid_cpu")
KILN_FLOATING_ACTIVATION_INTO_(hardswish, "hardswish_cpu")
#undef KILN_FLOATING_ACTIVATION_INTO_

/// silu also takes complex tensors: z sigmoid(z) on std::complex (ComplexOps.cpp).
Tensor silu_into(ResultInto into, const Tensor& out, const Tensor& self, const ActivationArgs& args) {
  if (is_complex(self.dtype())) return complex_unary_into("silu", into, out, self);
  return run_activation(silu_stub, "silu", "silu_cpu", Accepts::Floating, into, out, self, args);
}

ActivationArgs gelu_args(std::string_view approximate) { return {Scalar(), Scalar(), Scalar(), gelu_is_tanh(approximate)}; }

}  // namespace

// --- forward kernels ------------------------------------------------------------------------

Tensor relu_cpu(const Tensor& self) { return relu_into(ResultInto::NewTensor, Tensor(), self); }
Tensor relu_cpu_(const Tensor& self) { return relu_into(ResultInto::InPlace, self, self); }

Tensor relu6(const Tensor& self) { return kiln::hardtanh(self, 0, 6); }

Tensor hardtanh_cpu(const Tensor& self, const Scalar& min_val, const Scalar& max_val) {
  return hardtanh_into(ResultInto::NewTensor, Tensor(), self, min_val, max_val);
}
Tensor hardtanh_cpu_(const Tensor& self, const Scalar& min_val, const Scalar& max_val) {
  return hardtanh_into(ResultInto::InPlace, self, self, min_val, max_val);
}
Tensor hardtanh_out_cpu(const Tensor& self, const Scalar& min_val, const Scalar& max_val, const Tensor& out) {
  return hardtanh_into(ResultInto::Out, out, self, min_val, max_val);
}

Tensor gelu_cpu(const Tensor& self, std::string_view approximate) {
  return gelu_into(ResultInto::NewTensor, Tensor(), self, gelu_args(approximate));
}
Tensor gelu_out_cpu(const Tensor& self, std::string_view approximate, const Tensor& out) {
  return gelu_into(ResultInto::Out, out, self, gelu_args(approximate));
}

#define KILN_PLAIN_ACTIVATION_KERNELS_(op)                                                                  \
  Tensor op##_cpu(const Tensor& self) { return op##_into(ResultInto::NewTensor, Tensor(), self, {}); }     \
  Tensor op##_cpu_(const Tensor& self) { return op##_into(ResultInto::InPlace, self, self, {}); }          \
  Tensor op##_out_cpu(const Tensor& self, const Tensor& out) { return op##_into(ResultInto::Out, out, self, {}); }
KILN_PLAIN_ACTIVATION_KERNELS_(silu)
KILN_PLAIN_ACTIVATION_KERNELS_(mish)
KILN_PLAIN_ACTIVATION_KERNELS_(hardsigmoid)
KILN_PLAIN_ACTIVATION_KERNELS_(hardswish)
#undef KILN_PLAIN_ACTIVATION_KERNELS_

Tensor softplus_cpu(const Tensor& self, const Scalar& beta, const Scalar& threshold) {
  return softplus_into(ResultInto::NewTensor, Tensor(), self, {beta, threshold, Scalar(), false});
}
Tensor softplus_out_cpu(const Tensor& self, const Scalar& beta, const Scalar& threshold, const Tensor& out) {
  return softplus_into(ResultInto::Out, out, self, {beta, threshold, Scalar(), false});
}

Tensor leaky_relu_cpu(const Tensor& self, const Scalar& negative_slope) {
  return leaky_relu_into(ResultInto::NewTensor, Tensor(), self, {negative_slope, Scalar(), Scalar(), false});
}
Tensor leaky_relu_cpu_(const Tensor& self, const Scalar& negative_slope) {
  return leaky_relu_into(ResultInto::InPlace, self, self, {negative_slope, Scalar(), Scalar(), false});
}
Tensor leaky_relu_out_cpu(const Tensor& self, const Scalar& negative_slope, const Tensor& out) {
  return leaky_relu_into(ResultInto::Out, out, self, {negative_slope, Scalar(), Scalar(), false});
}

Tensor elu_cpu(const Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale) {
  return elu_into(ResultInto::NewTensor, Tensor(), self, {alpha, scale, input_scale, false});
}
Tensor elu_cpu_(const Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale) {
  return elu_into(ResultInto::InPlace, self, self, {alpha, scale, input_scale, false});
}
Tensor elu_out_cpu(const Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale,
                   const Tensor& out) {
  return elu_into(ResultInto::Out, out, self, {alpha, scale, input_scale, false});
}

// SELU's constants (Klambauer et al. 2017), as PyTorch writes them.
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;

Tensor selu(const Tensor& self) { return kiln::elu(self, kSeluAlpha, kSeluScale, 1); }
Tensor selu_(const Tensor& self) { return kiln::elu_(self, kSeluAlpha, kSeluScale, 1); }

static double celu_inverse_alpha(const Scalar& alpha) {
  KILN_CHECK(alpha.to_double() != 0, "ZeroDivisionError: alpha cannot be 0 for CELU");
  return 1.0 / alpha.to_double();
}
Tensor celu(const Tensor& self, const Scalar& alpha) { return kiln::elu(self, alpha, 1, celu_inverse_alpha(alpha)); }
Tensor celu_(const Tensor& self, const Scalar& alpha) {
  return kiln::elu_(self, alpha, 1, celu_inverse_alpha(alpha));
}

Tensor threshold_cpu(const Tensor& self, const Scalar& threshold, const Scalar& value) {
  return threshold_into(ResultInto::NewTensor, Tensor(), self, threshold, value);
}
Tensor threshold_cpu_(const Tensor& self, const Scalar& threshold, const Scalar& value) {
  return threshold_into(ResultInto::InPlace, self, self, threshold, value);
}
Tensor threshold_out_cpu(const Tensor& self, const Scalar& threshold, const Scalar& value, const Tensor& out) {
  return threshold_into(ResultInto::Out, out, self, threshold, value);
}

// --- backward kernels ------------------------------------------------------------------------

Tensor threshold_backward_cpu(const Tensor& grad_output, const Tensor& self, const Scalar& threshold) {
  return run_backward(threshold_backward_stub, "threshold_backward", grad_output, self,
                      {threshold, Scalar(), Scalar(), false});
}
Tensor tanh_backward_cpu(const Tensor& grad_output, const Tensor& output) {
  return run_backward(tanh_backward_stub, "tanh_backward", grad_output, output, {});
}
Tensor sigmoid_backward_cpu(const Tensor& grad_output, const Tensor& output) {
  return run_backward(sigmoid_backward_stub, "sigmoid_backward", grad_output, output, {});
}
Tensor gelu_backward_cpu(const Tensor& grad_output, const Tensor& self, std::string_view approximate) {
  return run_backward(gelu_backward_stub, "gelu_backward", grad_output, self, gelu_args(approximate));
}
Tensor silu_backward_cpu(const Tensor& grad_output, const Tensor& self) {
  return run_backward(silu_backward_stub, "silu_backward", grad_output, self, {});
}
Tensor mish_backward_cpu(const Tensor& grad_output, const Tensor& self) {
  return run_backward(mish_backward_stub, "mish_backward", grad_output, self, {});
}
Tensor softplus_backward_cpu(const Tensor& grad_output, const Tensor& self, const Scalar& beta,
                             const Scalar& threshold) {
  return run_backward(softplus_backward_stub, "softplus_backward", grad_output, self,
                      {beta, threshold, Scalar(), false});
}
Tensor leaky_relu_backward_cpu(const Tensor& grad_output, const Tensor& self, const Scalar& negative_slope,
                               bool self_is_result) {
  KILN_CHECK(!self_is_result || negative_slope.to_double() >= 0.0,
             "In-place leakyReLu backward calculation is triggered with a negative slope which is not supported. "
             "This is caused by calling in-place forward function with a negative slope, please call out-of-place "
             "version instead. File an issue at https://github.com/pytorch/pytorch if you do require supporting "
             "in-place leakRelu backward calculation with negative slope");
  return run_backward(leaky_relu_backward_stub, "leaky_relu_backward", grad_output, self,
                      {negative_slope, Scalar(), Scalar(), false});
}
Tensor elu_backward_cpu(const Tensor& grad_output, const Scalar& alpha, const Scalar& scale,
                        const Scalar& input_scale, bool is_result, const Tensor& self_or_result) {
  KILN_CHECK(!is_result || alpha.to_double() >= 0.0,
             "In-place elu backward calculation is triggered with a negative slope which is not supported. This is "
             "caused by calling in-place forward function with a negative slope, please call out-of-place version "
             "instead.");
  return run_backward(elu_backward_stub, "elu_backward", grad_output, self_or_result,
                      {alpha, scale, input_scale, is_result});
}
Tensor hardtanh_backward_cpu(const Tensor& grad_output, const Tensor& self, const Scalar& min_val,
                             const Scalar& max_val) {
  return run_backward(hardtanh_backward_stub, "hardtanh_backward", grad_output, self,
                      {min_val, max_val, Scalar(), false});
}
Tensor hardsigmoid_backward_cpu(const Tensor& grad_output, const Tensor& self) {
  return run_backward(hardsigmoid_backward_stub, "hardsigmoid_backward", grad_output, self, {});
}
Tensor hardswish_backward_cpu(const Tensor& grad_output, const Tensor& self) {
  return run_backward(hardswish_backward_stub, "hardswish_backward", grad_output, self, {});
}
Tensor logit_backward_cpu(const Tensor& grad_output, const Tensor& self, std::optional<double> eps) {
  return run_backward(logit_backward_stub, "logit_backward", grad_output, self,
                      {Scalar(eps.value_or(-1.0)), Scalar(), Scalar(), false});
}

}  // namespace kiln::native
