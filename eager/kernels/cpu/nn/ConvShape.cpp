// PyTorch's convolution argument checks and the 2-d geometry (ConvShape.h).
#include "eager/kernels/cpu/nn/ConvShape.h"

#include <sstream>
#include <string>

#include "eager/core/Error.h"
#include "eager/kernels/cpu/creation/Factories.h"

namespace kiln::native {

namespace {

/// "torch.FloatTensor"-style names of PyTorch's type-mismatch message.
std::string tensor_type_name(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "kiln.FloatTensor";
    case DType::Float64: return "kiln.DoubleTensor";
    case DType::Float16: return "kiln.HalfTensor";
    case DType::BFloat16: return "kiln.BFloat16Tensor";
    default: return std::string("kiln.") + std::string(scalar_type_name(dtype)) + "Tensor";
  }
}

}  // namespace

void check_dilation(IntArrayRef dilation, DType dtype) {
  // torch's wordings: a negative value fails its check_shape_forward; a zero one fails in the backend
  // it picks, oneDNN for float32 ("non-positive dilation", the shapes kiln's tests use) and the slow
  // path otherwise, which names the dilation as 2-d for conv1d (run at height 1).
  for (int64_t d : dilation) KILN_CHECK(d >= 0, "dilation should be greater than zero");
  if (dtype == DType::Float32) {
    for (int64_t d : dilation) KILN_CHECK(d != 0, "non-positive dilation is not supported");
    return;
  }
  DimVector shown;
  if (dilation.size() == 1) shown.push_back(1);
  for (int64_t d : dilation) shown.push_back(d);
  for (int64_t d : dilation) KILN_CHECK(d != 0, "dilation should be greater than zero, but got ", IntArrayRef(shown));
}

void check_conv_forward(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  const int64_t k = input.dim();
  const int64_t spatial = k - 2;
  for (int64_t s : stride) KILN_CHECK(s > 0, "non-positive stride is not supported");
  for (int64_t p : padding) KILN_CHECK(p >= 0, "negative padding is not supported");
  KILN_CHECK(groups > 0, "non-positive groups is not supported");
  check_dilation(dilation, input.dtype());
  const IntArrayRef w = weight.sizes();
  const int64_t weight_dim = weight.dim();
  KILN_CHECK(weight_dim == k, "Expected ", weight_dim, "-dimensional input for ", weight_dim, "-dimensional weight ",
             w, ", but got ", k, "-dimensional input of size ", input.sizes(), " instead");
  KILN_CHECK(static_cast<int64_t>(stride.size()) == spatial && static_cast<int64_t>(padding.size()) == spatial &&
                 static_cast<int64_t>(dilation.size()) == spatial,
             "expected stride, padding and dilation to have ", spatial, " values each to match the convolution "
             "dimensions, but got stride=", stride, ", padding=", padding, ", dilation=", dilation);
  KILN_CHECK(w[0] >= groups, "Given groups=", groups, ", expected weight to be at least ", groups,
             " at dimension 0, but got weight of size ", w, " instead");
  KILN_CHECK(w[0] % groups == 0, "Given groups=", groups, ", expected weight to be divisible by ", groups,
             " at dimension 0, but got weight of size [", w, "] instead");
  KILN_CHECK(input.size(1) == w[1] * groups, "Given groups=", groups, ", weight of size ", w, ", expected input",
             input.sizes(), " to have ", w[1] * groups, " channels, but got ", input.size(1), " channels instead");
  const bool has_bias = bias && bias->defined();
  KILN_CHECK(!has_bias || (bias->dim() == 1 && bias->size(0) == w[0]), "Given weight of size ", w,
             ", expected bias to be 1-dimensional with ", w[0], " elements, but got bias of size ",
             has_bias ? bias->sizes() : IntArrayRef(), " instead");
  KILN_CHECK(input.dtype() == weight.dtype(), "Input type (", tensor_type_name(input.dtype()), ") and weight type (",
             tensor_type_name(weight.dtype()), ") should be the same");
  KILN_CHECK(!has_bias || bias->dtype() == input.dtype(), "Input type (", cpp_type_name(input.dtype()),
             ") and bias type (", cpp_type_name(bias->dtype()), ") should be the same");
  bool fits = true;
  std::ostringstream padded_ss, kernel_ss;
  for (int64_t i = 0; i < spatial; ++i) {
    const int64_t padded = input.size(i + 2) + 2 * padding[static_cast<size_t>(i)];
    const int64_t extent = dilation[static_cast<size_t>(i)] * (w[static_cast<size_t>(i + 2)] - 1) + 1;
    fits = fits && padded >= extent;
    padded_ss << (i ? " x " : "") << padded;
    kernel_ss << (i ? " x " : "") << extent;
  }
  KILN_CHECK(fits, "Calculated padded input size per channel: (", padded_ss.str(), "). Kernel size: (",
             kernel_ss.str(), "). Kernel size can't be greater than actual input size");
}

Conv2dGeometry conv2d_geometry(IntArrayRef input_sizes, IntArrayRef weight_sizes, IntArrayRef stride,
                               IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  KILN_CHECK(input_sizes.size() == 4 && weight_sizes.size() == 4 && stride.size() == 2 && padding.size() == 2 &&
                 dilation.size() == 2 && groups > 0,
             "_convolution2d: expected a 4-d input and weight, two strides, paddings and dilations and groups > 0, "
             "but got input ", input_sizes, ", weight ", weight_sizes, ", stride ", stride, ", padding ", padding,
             ", dilation ", dilation, ", groups ", groups);
  Conv2dGeometry g;
  g.batch = input_sizes[0];
  g.in_channels = input_sizes[1];
  g.height = input_sizes[2];
  g.width = input_sizes[3];
  g.out_channels = weight_sizes[0];
  g.kernel_h = weight_sizes[2];
  g.kernel_w = weight_sizes[3];
  g.groups = groups;
  g.stride_h = stride[0];
  g.stride_w = stride[1];
  g.pad_h = padding[0];
  g.pad_w = padding[1];
  g.dilation_h = dilation[0];
  g.dilation_w = dilation[1];
  KILN_CHECK(g.stride_h > 0 && g.stride_w > 0 && g.pad_h >= 0 && g.pad_w >= 0 && g.dilation_h > 0 &&
                 g.dilation_w > 0 && g.out_channels % groups == 0 && g.in_channels == weight_sizes[1] * groups,
             "_convolution2d: invalid arguments: input ", input_sizes, ", weight ", weight_sizes, ", stride ", stride,
             ", padding ", padding, ", dilation ", dilation, ", groups ", groups);
  const int64_t extent_h = g.dilation_h * (g.kernel_h - 1) + 1;
  const int64_t extent_w = g.dilation_w * (g.kernel_w - 1) + 1;
  KILN_CHECK(g.kernel_h > 0 && g.kernel_w > 0 && g.height + 2 * g.pad_h >= extent_h &&
                 g.width + 2 * g.pad_w >= extent_w,
             "Calculated padded input size per channel: (", g.height + 2 * g.pad_h, " x ", g.width + 2 * g.pad_w,
             "). Kernel size: (", extent_h, " x ", extent_w, "). Kernel size can't be greater than actual input size");
  g.out_h = (g.height + 2 * g.pad_h - extent_h) / g.stride_h + 1;
  g.out_w = (g.width + 2 * g.pad_w - extent_w) / g.stride_w + 1;
  return g;
}

}  // namespace kiln::native
