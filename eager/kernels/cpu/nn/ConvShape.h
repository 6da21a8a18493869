// Convolution arguments: PyTorch's forward checks (with its words) and the
// geometry of one 2-d convolution that the im2col kernels and their loops share.
#pragma once

#include <cstdint>
#include <optional>

#include "eager/ops/Tensor.h"

namespace kiln::native {

/// a / b rounded toward negative infinity (C++ rounds toward zero): sliding-window
/// counts use it so that a window larger than its padded input counts 0 blocks,
/// not 1, as PyTorch's div_rtn.
[[nodiscard]] constexpr int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/// One 2-d convolution over a batched [batch, in_channels, height, width] input
/// and an [out_channels, in_channels / groups, kernel_h, kernel_w] weight.
struct Conv2dGeometry {
  int64_t batch = 0, in_channels = 0, height = 0, width = 0;
  int64_t out_channels = 0, kernel_h = 0, kernel_w = 0, groups = 1;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  int64_t out_h = 0, out_w = 0;

  [[nodiscard]] int64_t group_in() const { return in_channels / groups; }
  [[nodiscard]] int64_t group_out() const { return out_channels / groups; }
  /// Rows of a group's im2col matrix: group_in() * kernel_h * kernel_w.
  [[nodiscard]] int64_t col_rows() const { return group_in() * kernel_h * kernel_w; }
  [[nodiscard]] int64_t in_plane() const { return height * width; }
  [[nodiscard]] int64_t out_plane() const { return out_h * out_w; }
};

/// PyTorch's convolution checks on a batched input (N, C, spatial...) of any
/// spatial rank: stride, padding, dilation and groups values, the weight's rank
/// and channels, the bias, the dtypes, and a kernel larger than the padded
/// input. RuntimeError with PyTorch's wording.
void check_conv_forward(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups);

/// Every dilation value positive, with torch's words for a negative and for a zero value.
void check_dilation(IntArrayRef dilation, DType dtype);

/// The geometry of a checked 2-d convolution (4-d input and weight sizes).
[[nodiscard]] Conv2dGeometry conv2d_geometry(IntArrayRef input_sizes, IntArrayRef weight_sizes, IntArrayRef stride,
                                             IntArrayRef padding, IntArrayRef dilation, int64_t groups);

}  // namespace kiln::native
