// Activations and their backward ops: dtype and argument checks (PyTorch's
// messages) and the TensorIterator set-up, compiled once; the loops are in
// kernels/ActivationKernel.cpp. relu6, selu and celu are CompositeImplicit
// over hardtanh and elu, as in PyTorch.
#include <optional>
#include <string_view>

#include "eager/core/Error.h"
#include "eager/kernels/cpu/ActivationStubs.h"
#include "eager/kernels/cpu/ComplexOps.h"
#include "eager/kernels/cpu/UnaryOps.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/IntoKernels.h"
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

ActivationArgs gelu_args(std::string_view approximate) { return {Scalar(), Scalar(), Scalar(), gelu_is_tanh(approximate)}; }

}  // namespace

// --- forward kernels: the ones activation.yaml's kernel_into names ----------------------------
// (Note [Generated entry points], tools/opgen/into.py)

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

Tensor gelu_into(ResultInto into, const Tensor& out, const Tensor& self, std::string_view approximate) {
  return run_activation(gelu_stub, "gelu", "GeluKernelImpl", Accepts::Floating, into, out, self,
                        gelu_args(approximate));
}

Tensor mish_into(ResultInto into, const Tensor& out, const Tensor& self) {
  return run_activation(mish_stub, "mish", "mish_cpu", Accepts::Floating, into, out, self, {});
}

Tensor hardsigmoid_into(ResultInto into, const Tensor& out, const Tensor& self) {
  return run_activation(hardsigmoid_stub, "hardsigmoid", "hardsigmoid_cpu", Accepts::Floating, into, out, self, {});
}

Tensor hardswish_into(ResultInto into, const Tensor& out, const Tensor& self) {
  return run_activation(hardswish_stub, "hardswish", "hardswish_cpu", Accepts::Floating, into, out, self, {});
}

/// silu also takes complex tensors: z sigmoid(z) on std::complex (ComplexOps.cpp).
Tensor silu_into(ResultInto into, const Tensor& out, const Tensor& self) {
  if (is_complex(self.dtype())) return complex_unary_into("silu", into, out, self);
  return run_activation(silu_stub, "silu", "silu_cpu", Accepts::Floating, into, out, self, {});
}

Tensor softplus_into(ResultInto into, const Tensor& out, const Tensor& self, const Scalar& beta,
                     const Scalar& threshold) {
  return run_activation(softplus_stub, "softplus", "softplus_cpu", Accepts::Floating, into, out, self,
                        {beta, threshold, Scalar(), false});
}

Tensor leaky_relu_into(ResultInto into, const Tensor& out, const Tensor& self, const Scalar& negative_slope) {
  return run_activation(leaky_relu_stub, "leaky_relu", "leaky_relu_cpu", Accepts::Floating, into, out, self,
                        {negative_slope, Scalar(), Scalar(), false});
}

Tensor elu_into(ResultInto into, const Tensor& out, const Tensor& self, const Scalar& alpha, const Scalar& scale,
                const Scalar& input_scale) {
  return run_activation(elu_stub, "elu", "elu_cpu", Accepts::Floating, into, out, self,
                        {alpha, scale, input_scale, false});
}

// --- forward kernels ops.yaml names (CompositeImplicit) ----------------------------------------

Tensor relu6(const Tensor& self) { return kiln::hardtanh(self, 0, 6); }

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
