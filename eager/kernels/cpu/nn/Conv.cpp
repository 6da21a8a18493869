// conv1d and conv2d (and their padding="same"/"valid" overloads): composites
// over _convolution2d with PyTorch's checks and messages.
#include <optional>
#include <string_view>

#include "eager/core/Error.h"
#include "eager/kernels/cpu/nn/ConvShape.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

// Note [conv1d and conv2d are composites]
// ---------------------------------------
// Both call the one CPU kernel, _convolution2d, through the dispatcher, so
// autograd records that op (its formulas are in eager/ops/conv.yaml) and the
// shape ops around it: an unbatched input gains its batch dim with unsqueeze
// (and loses it with squeeze), conv1d runs as a 2-d convolution of height 1
// (input and weight unsqueezed at dim -2, stride 1, padding 0 and dilation 1
// along it). padding="same" pads each side by half of dilation * (kernel - 1);
// when that total is odd PyTorch pads one more on the right, which is the same
// as padding the larger half on both sides and dropping the first output
// (narrow), so the kernel only ever sees symmetric padding. The checks run on
// the caller's shapes first, so errors name them as PyTorch does.

namespace {

/// A stride, padding or dilation list with one value per spatial dim: one value
/// is repeated, as PyTorch's expand_param_if_needed does (padding="same" words
/// the error as its own broadcast).
DimVector expand_param(IntArrayRef values, const char* name, int64_t spatial, bool same = false) {
  const auto n = static_cast<int64_t>(values.size());
  KILN_CHECK(!same || n == 1 || n == spatial, name, " cannot broadcast to ", spatial, " dimensions");
  KILN_CHECK(n == 1 || n == spatial, "expected ", name, " to be a single integer value or a list of ", spatial,
             " values to match the convolution dimensions, but got ", name, "=", values);
  DimVector out;
  for (int64_t i = 0; i < spatial; ++i) out.push_back(values[n == 1 ? 0 : static_cast<size_t>(i)]);
  return out;
}

/// input with a batch dim (unsqueezed when it has none); checks the rank first.
Tensor batched_input(const Tensor& input, int64_t spatial, const char* op) {
  const int64_t d = input.dim();
  KILN_CHECK(d == spatial + 1 || d == spatial + 2, "Expected ", spatial + 1, "D (unbatched) or ", spatial + 2,
             "D (batched) input to ", op, ", but got input of size: ", input.sizes());
  return d == spatial + 2 ? input : kiln::unsqueeze(input, 0);
}

/// torch checks the weight's rank before any other argument (at::convolution).
void check_weight_rank(const Tensor& weight) {
  KILN_CHECK(weight.dim() >= 3, "weight should have at least three dimensions");
}

/// The convolution of a batched, checked input (2-d, or 1-d through 2-d).
Tensor run_conv(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                IntArrayRef padding, IntArrayRef dilation, int64_t groups, int64_t spatial) {
  if (spatial == 2) return kiln::_convolution2d(x, weight, bias, stride, padding, dilation, groups);
  const DimVector s{1, stride[0]}, p{0, padding[0]}, d{1, dilation[0]};
  const Tensor y = kiln::_convolution2d(kiln::unsqueeze(x, 2), kiln::unsqueeze(weight, 2), bias, s, p, d, groups);
  return kiln::squeeze(y, 2);
}

Tensor conv_nd(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
               IntArrayRef padding, IntArrayRef dilation, int64_t groups, int64_t spatial, const char* op) {
  check_weight_rank(weight);
  const Tensor x = batched_input(input, spatial, op);
  const DimVector s = expand_param(stride, "stride", spatial), p = expand_param(padding, "padding", spatial);
  const DimVector d = expand_param(dilation, "dilation", spatial);
  check_conv_forward(x, weight, bias, s, p, d, groups);
  const Tensor y = run_conv(x, weight, bias, s, p, d, groups, spatial);
  return x.is_same(input) ? y : kiln::squeeze(y, 0);
}

Tensor conv_nd_padding(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                       IntArrayRef stride, std::string_view padding, IntArrayRef dilation, int64_t groups,
                       int64_t spatial, const char* op) {
  check_weight_rank(weight);
  const Tensor x = batched_input(input, spatial, op);
  const DimVector strides = expand_param(stride, "stride", spatial);
  const DimVector dilations = expand_param(dilation, "dilation", spatial, padding == "same");
  DimVector pad(static_cast<size_t>(spatial), 0);
  DimVector odd(static_cast<size_t>(spatial), 0);
  if (padding == "same") {
    for (int64_t s : strides) KILN_CHECK(s == 1, "padding='same' is not supported for strided convolutions");
    // torch's wording here (_convolution_mode) has no space before the weight's sizes.
    KILN_CHECK(weight.dim() == x.dim(), "Expected ", weight.dim(), "-dimensional input for ", weight.dim(),
               "-dimensional weight", weight.sizes(), ", but got ", x.dim(), "-dimensional input of size ", x.sizes(),
               " instead");
    check_dilation(dilations, x.dtype());
    for (int64_t i = 0; i < spatial; ++i) {
      const size_t u = static_cast<size_t>(i);
      const int64_t total = dilations[u] * (weight.size(i + 2) - 1);
      odd[u] = total % 2;
      pad[u] = total / 2 + odd[u];
    }
  } else {
    KILN_CHECK(padding == "valid", "Invalid padding string: '", padding, "'");
  }
  check_conv_forward(x, weight, bias, strides, pad, dilations, groups);
  Tensor y = run_conv(x, weight, bias, strides, pad, dilations, groups, spatial);
  for (int64_t i = 0; i < spatial; ++i) {
    const int64_t dim = 2 + i;
    if (odd[static_cast<size_t>(i)] != 0) y = kiln::narrow(y, dim, 1, y.size(dim) - 1);
  }
  return x.is_same(input) ? y : kiln::squeeze(y, 0);
}

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d");
}

Tensor conv2d_padding(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                      IntArrayRef stride, std::string_view padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd_padding(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d");
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d");
}

Tensor conv1d_padding(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                      IntArrayRef stride, std::string_view padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd_padding(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d");
}

}  // namespace kiln::native
