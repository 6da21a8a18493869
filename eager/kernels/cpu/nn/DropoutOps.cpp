// dropout and native_dropout (eager/ops/nn.yaml), composed of dispatching ops.
#include <optional>
#include <tuple>

#include "eager/core/Error.h"
#include "eager/core/MemoryFormat.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

// Note [Dropout is composite]
// ---------------------------
// PyTorch's CPU dropout is a keep-mask and two multiplications; kiln composes
// it the same way from dispatching ops, so the forward needs no kernel of its
// own and the gradient (grad * mask * scale) comes from mul's formulas:
//   mask   = bernoulli_(1 - p) into a new contiguous bool tensor, drawn from
//            the default Philox generator (Note [Counter-based random numbers]),
//            so kiln.manual_seed replays it for any thread count;
//   output = input * mask * scale, scale = 1 / (1 - p), and 0 when p == 1 (the
//            mask is all false then, and NaN * 0 stays NaN as in PyTorch).
// native_dropout with train=False returns (input.clone(), ones); dropout with
// train=False, p == 0 or no elements returns its input itself, as at::dropout.

namespace {

void check_p(double p) {
  KILN_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
}

double keep_scale(double p) { return p == 1 ? 0.0 : 1.0 / (1.0 - p); }

Tensor keep_mask(const Tensor& input, double p) {
  return kiln::empty_like(input, DType::Bool, std::nullopt, MemoryFormat::Contiguous).bernoulli_(1.0 - p);
}

}  // namespace

std::tuple<Tensor, Tensor> native_dropout(const Tensor& input, double p, std::optional<bool> train) {
  check_p(p);
  if (train.has_value() && !*train) {
    return {kiln::clone(input), kiln::ones_like(input, DType::Bool, std::nullopt, MemoryFormat::Contiguous)};
  }
  const Tensor mask = keep_mask(input, p);
  return {input.mul(mask).mul_(keep_scale(p)), mask};
}

Tensor native_dropout_backward(const Tensor& grad_output, const Tensor& mask, double scale) {
  KILN_CHECK(mask.dtype() == DType::Bool, "Mask should be Bool Scalar Type", mask.dtype());
  // in place only where the product keeps the dtype: integer and bool gradients give a float, as PyTorch
  const Tensor masked = grad_output.mul(mask);
  return is_floating_point(masked.dtype()) || is_complex(masked.dtype()) ? masked.mul_(scale) : masked.mul(scale);
}

Tensor dropout(const Tensor& input, double p, bool train) {
  check_p(p);
  if (p == 0 || !train || input.numel() == 0) return input;
  if (p == 1) return input.mul(0.0);
  return std::get<0>(kiln::native_dropout(input, p, train));
}

Tensor dropout_(const Tensor& self, double p, bool train) {
  check_p(p);
  if (p == 0 || !train || self.numel() == 0) return self;
  if (p == 1) return self.mul_(0.0);
  return self.mul_(keep_mask(self, p)).mul_(keep_scale(p));
}

}  // namespace kiln::native
