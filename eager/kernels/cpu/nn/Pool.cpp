// max_pool2d (with indices), avg_pool2d, adaptive_avg_pool2d and their backward
// ops on the CPU: PyTorch's argument checks and output sizes, compiled once;
// the loops are in per_capability/PoolKernel.cpp. The 1-d forms and max_pool2d
// without indices are composites at the end.
#include <algorithm>
#include <optional>
#include <tuple>

#include "eager/autograd/GradMode.h"
#include "eager/core/Error.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/copy/ShapeCopy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/nn/ConvShape.h"
#include "eager/kernels/cpu/nn/PoolStubs.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

KILN_DEFINE_DISPATCH(max_pool2d_fn, max_pool2d_stub);
KILN_DEFINE_DISPATCH(max_pool2d_backward_fn, max_pool2d_backward_stub);
KILN_DEFINE_DISPATCH(avg_pool2d_fn, avg_pool2d_stub);
KILN_DEFINE_DISPATCH(avg_pool2d_backward_fn, avg_pool2d_backward_stub);

// Note [Pooling windows]
// ----------------------
// Output sizes are PyTorch's: floor((in + 2 pad - dilation (k - 1) - 1
// [+ stride - 1 with ceil_mode]) / stride) + 1, less one in ceil_mode when the
// last window would start in the right padding; padding is at most half the
// (dilated) kernel, so every window holds an input element. max_pool2d visits
// the taps h0, h0 + dilation, ... inside the input (the padding is -inf); the
// first maximum wins, a NaN beats everything, and the index is the flat
// position h * W + w in the input plane. avg_pool2d's window is clipped to the
// padded input and then to the input; it divides by divisor_override, or by the
// padded window's size (count_include_pad), or by the clipped window's. An
// adaptive window along a dim is [floor(o * in / out), ceil((o + 1) * in / out)).
// The backward ops share each output's gradient over its window (max: to its
// index), accumulating one input plane per task in the compute type.

namespace {

/// kernel, stride, padding and dilation of a 2-d pooling, each expanded to (h, w).
struct PoolArgs {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
};

int64_t pick(IntArrayRef v, size_t i) { return v.size() == 1 ? v[0] : v[i]; }

PoolArgs pool_args(const char* op, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                   IntArrayRef dilation) {
  KILN_CHECK(kernel_size.size() == 1 || kernel_size.size() == 2, op,
             ": kernel_size must either be a single int, or a tuple of two ints");
  KILN_CHECK(stride.empty() || stride.size() == 1 || stride.size() == 2, op,
             ": stride must either be omitted, a single int, or a tuple of two ints");
  KILN_CHECK(padding.size() == 1 || padding.size() == 2, op,
             ": padding must either be a single int, or a tuple of two ints");
  KILN_CHECK(dilation.size() == 1 || dilation.size() == 2, op,
             ": dilation must be either a single int, or a tuple of two ints");
  const IntArrayRef s = stride.empty() ? kernel_size : stride;
  return {pick(kernel_size, 0), pick(kernel_size, 1), pick(s, 0), pick(s, 1), pick(padding, 0),
          pick(padding, 1), pick(dilation, 0), pick(dilation, 1)};
}

/// PyTorch's pooling_output_shape.
int64_t pooled_size(int64_t in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode) {
  KILN_CHECK(stride != 0, "stride should not be zero");
  KILN_CHECK(pad >= 0, "pad must be non-negative, but got pad: ", pad);
  KILN_CHECK(pad <= ((kernel - 1) * dilation + 1) / 2,
             "pad should be at most half of effective kernel size, but got pad=", pad, ", kernel_size=", kernel,
             " and dilation=", dilation);
  int64_t out = floor_div(in + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0), stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

/// Which dtypes besides the floating ones a pooling kernel takes.
enum class PoolIntegers { None, Int64, All };

/// Rank and dtype: floating, or also int64 (avg_pool2d's forward, as PyTorch's
/// CPU kernel), or every integer dtype (max_pool2d's forward); never bool.
void check_pool_input(const Tensor& input, const char* op, PoolIntegers integers = PoolIntegers::None) {
  KILN_CHECK(input.dim() == 3 || input.dim() == 4, "non-empty 3D or 4D (batch mode) tensor expected for input");
  const DType t = input.dtype();
  const bool ok = is_floating_point(t) || (integers == PoolIntegers::All && t != DType::Bool) ||
                  (integers == PoolIntegers::Int64 && t == DType::Int64);
  KILN_CHECK_NOT_IMPLEMENTED(ok, "\"", op, "\" not implemented for '", scalar_type_name(input.dtype()), "'");
}

/// The geometry of a checked 2-d pooling of `input` (3-d or 4-d), PyTorch's pool2d_shape_check.
PoolGeometry pool_geometry(const Tensor& input, const PoolArgs& a, bool ceil_mode) {
  const int64_t d = input.dim();
  PoolGeometry g;
  g.in_h = input.size(d - 2);
  g.in_w = input.size(d - 1);
  g.out_h = pooled_size(g.in_h, a.kh, a.ph, a.sh, a.dh, ceil_mode);
  g.out_w = pooled_size(g.in_w, a.kw, a.pw, a.sw, a.dw, ceil_mode);
  KILN_CHECK(a.kw > 0 && a.kh > 0, "kernel size should be greater than zero, but got kH: ", a.kh, " kW: ", a.kw);
  KILN_CHECK(a.sw > 0 && a.sh > 0, "stride should be greater than zero, but got dH: ", a.sh, " dW: ", a.sw);
  KILN_CHECK(a.dh > 0 && a.dw > 0, "dilation should be greater than zero, but got dilationH: ", a.dh,
             " dilationW: ", a.dw);
  const bool valid_dims = input.size(1) != 0 && input.size(2) != 0;
  KILN_CHECK((d == 3 && input.size(0) != 0 && valid_dims) || (d == 4 && valid_dims && input.size(3) != 0),
             "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:",
             input.sizes());
  KILN_CHECK(a.kw / 2 >= a.pw && a.kh / 2 >= a.ph, "pad should be smaller than or equal to half of kernel size, ",
             "but got padW = ", a.pw, ", padH = ", a.ph, ", kW = ", a.kw, ", kH = ", a.kh);
  const int64_t channels = input.size(d - 3);
  KILN_CHECK(g.out_w >= 1 && g.out_h >= 1, "Given input size: (", channels, "x", g.in_h, "x", g.in_w,
             "). Calculated output size: (", channels, "x", g.out_h, "x", g.out_w, "). Output size is too small");
  g.planes = g.in_h * g.in_w == 0 ? 0 : input.numel() / (g.in_h * g.in_w);
  g.kernel_h = a.kh;
  g.kernel_w = a.kw;
  g.stride_h = a.sh;
  g.stride_w = a.sw;
  g.pad_h = a.ph;
  g.pad_w = a.pw;
  g.dilation_h = a.dh;
  g.dilation_w = a.dw;
  return g;
}

/// input's sizes with the last two replaced by (h, w).
DimVector pooled_sizes(const Tensor& input, int64_t h, int64_t w) {
  DimVector sizes(input.sizes());
  sizes[sizes.size() - 2] = h;
  sizes[sizes.size() - 1] = w;
  return sizes;
}

void check_grad_output(const Tensor& grad_output, const Tensor& self, const PoolGeometry& g, const char* op) {
  const DimVector expected = pooled_sizes(self, g.out_h, g.out_w);
  const IntArrayRef got = grad_output.sizes();
  KILN_CHECK(std::equal(expected.begin(), expected.end(), got.begin(), got.end()), op,
             ": expected grad_output of size ", IntArrayRef(expected), ", but got ", grad_output.sizes());
  KILN_CHECK(grad_output.dtype() == self.dtype(), op, ": expected grad_output of dtype ",
             scalar_type_name(self.dtype()), ", but got ", scalar_type_name(grad_output.dtype()));
}

/// Output sizes and window geometry of adaptive_avg_pool2d, PyTorch's checks.
PoolGeometry adaptive_geometry(const Tensor& input, IntArrayRef output_size) {
  KILN_CHECK(output_size.size() == 2, "adaptive_avg_pool2d: output_size must be 2");
  KILN_CHECK(output_size[0] >= 0 && output_size[1] >= 0,
             "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {",
             output_size[0], ", ", output_size[1], "}");
  const int64_t d = input.dim();
  KILN_CHECK(d == 3 || d == 4, "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got ", input.sizes());
  for (int64_t i = d - 2; i < d; ++i) {
    KILN_CHECK(input.size(i) > 0, "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch ",
               "dimensions, but input has sizes ", input.sizes(), " with dimension ", i, " being empty");
  }
  KILN_CHECK_NOT_IMPLEMENTED(is_floating_point(input.dtype()), "\"adaptive_avg_pool2d\" not implemented for '",
                             scalar_type_name(input.dtype()), "'");
  PoolGeometry g;
  g.in_h = input.size(d - 2);
  g.in_w = input.size(d - 1);
  g.out_h = output_size[0];
  g.out_w = output_size[1];
  g.planes = input.numel() / (g.in_h * g.in_w);
  return g;
}

}  // namespace

// --- max_pool2d -------------------------------------------------------------------

std::tuple<Tensor, Tensor> max_pool2d_with_indices_cpu(const Tensor& self, IntArrayRef kernel_size,
                                                       IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                                       bool ceil_mode) {
  const PoolArgs a = pool_args("max_pool2d", kernel_size, stride, padding, dilation);
  check_pool_input(self, "max_pool2d", PoolIntegers::All);
  const PoolGeometry g = pool_geometry(self, a, ceil_mode);
  const DimVector sizes = pooled_sizes(self, g.out_h, g.out_w);
  Tensor out = empty(sizes, self.dtype(), self.device());
  Tensor indices = empty(sizes, DType::Int64, self.device());
  if (out.numel() > 0) max_pool2d_stub(contiguous_values(self), out, indices, g);
  return {out, indices};
}

Tensor max_pool2d_with_indices_backward_cpu(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                                            IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                            bool ceil_mode, const Tensor& indices) {
  const PoolArgs a = pool_args("max_pool2d_with_indices_backward", kernel_size, stride, padding, dilation);
  check_pool_input(self, "max_pool2d_with_indices_backward");
  const PoolGeometry g = pool_geometry(self, a, ceil_mode);
  check_grad_output(grad_output, self, g, "max_pool2d_with_indices_backward");
  const IntArrayRef is = indices.sizes(), gs = grad_output.sizes();
  KILN_CHECK(std::equal(is.begin(), is.end(), gs.begin(), gs.end()) && indices.dtype() == DType::Int64,
             "max_pool2d_with_indices_backward: expected int64 indices of size ", grad_output.sizes(), ", but got ",
             scalar_type_name(indices.dtype()), " indices of size ", indices.sizes());
  Tensor grad_input = empty(self.sizes(), self.dtype(), self.device());
  if (grad_input.numel() == 0 || grad_input.impl()->is_meta()) return grad_input;  // Note [Stubs skip meta tensors]
  const bool ok = max_pool2d_backward_stub(contiguous_values(grad_output), contiguous_values(indices), grad_input, g);
  KILN_CHECK_INDEX(ok, "max_pool2d_with_indices_backward: an index is out of range for input planes of size ",
                   g.in_h, "x", g.in_w);
  return grad_input;
}

Tensor max_pool2d_without_indices_cpu(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                      IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  const PoolArgs a = pool_args("max_pool2d", kernel_size, stride, padding, dilation);
  check_pool_input(self, "max_pool2d", PoolIntegers::All);
  const PoolGeometry g = pool_geometry(self, a, ceil_mode);
  Tensor out = empty(pooled_sizes(self, g.out_h, g.out_w), self.dtype(), self.device());
  if (out.numel() > 0) max_pool2d_stub(contiguous_values(self), out, Tensor(), g);
  return out;
}

/// Indices only when autograd will need them, as PyTorch's CPU max_pool2d.
Tensor max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  if (!self.requires_grad() || !autograd::GradMode::is_enabled()) {
    return kiln::_max_pool2d_without_indices(self, kernel_size, stride, padding, dilation, ceil_mode);
  }
  return std::get<0>(kiln::max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode));
}

// --- avg_pool2d -------------------------------------------------------------------

namespace {

PoolGeometry avg_geometry(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                          bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override,
                          const char* op, PoolIntegers integers = PoolIntegers::None) {
  const int64_t one[] = {1};
  const PoolArgs a = pool_args(op, kernel_size, stride, padding, IntArrayRef(one));
  KILN_CHECK(!divisor_override || *divisor_override != 0, "divisor must be not zero");
  // PyTorch reads the channel count as size(-3) first: an IndexError below 3 dims.
  const int64_t rank = std::max<int64_t>(self.dim(), 1);
  KILN_CHECK_INDEX(self.dim() >= 3, "Dimension out of range (expected to be in range of [", -rank,
                   ", ", rank - 1, "], but got -3)");
  check_pool_input(self, op, integers);
  PoolGeometry g = pool_geometry(self, a, ceil_mode);
  g.count_include_pad = count_include_pad;
  g.divisor = divisor_override.value_or(0);
  return g;
}

}  // namespace

Tensor avg_pool2d_cpu(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                      bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  const PoolGeometry g =
      avg_geometry(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, "avg_pool2d",
                   PoolIntegers::Int64);
  Tensor out = empty(pooled_sizes(self, g.out_h, g.out_w), self.dtype(), self.device());
  if (out.numel() > 0) avg_pool2d_stub(contiguous_values(self), out, g, false);
  return out;
}

Tensor avg_pool2d_backward_cpu(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                               IntArrayRef stride, IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                               std::optional<int64_t> divisor_override) {
  const PoolGeometry g = avg_geometry(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                      divisor_override, "avg_pool2d_backward");
  check_grad_output(grad_output, self, g, "avg_pool2d_backward");
  Tensor grad_input = empty(self.sizes(), self.dtype(), self.device());
  if (grad_input.numel() > 0) avg_pool2d_backward_stub(contiguous_values(grad_output), grad_input, g, false);
  return grad_input;
}

// --- adaptive_avg_pool2d ----------------------------------------------------------

Tensor adaptive_avg_pool2d_cpu(const Tensor& self, IntArrayRef output_size) {
  const PoolGeometry g = adaptive_geometry(self, output_size);
  Tensor out = empty(pooled_sizes(self, g.out_h, g.out_w), self.dtype(), self.device());
  if (out.numel() > 0) avg_pool2d_stub(contiguous_values(self), out, g, true);
  return out;
}

Tensor adaptive_avg_pool2d_backward_cpu(const Tensor& grad_output, const Tensor& self) {
  KILN_CHECK(grad_output.dim() == self.dim() && grad_output.dim() >= 2,
             "_adaptive_avg_pool2d_backward: expected grad_output with the input's rank, but got ",
             grad_output.sizes(), " for input ", self.sizes());
  const int64_t d = grad_output.dim();
  const int64_t out_size[] = {grad_output.size(d - 2), grad_output.size(d - 1)};
  const PoolGeometry g = adaptive_geometry(self, IntArrayRef(out_size));
  check_grad_output(grad_output, self, g, "_adaptive_avg_pool2d_backward");
  Tensor grad_input = empty(self.sizes(), self.dtype(), self.device());
  if (grad_input.numel() > 0) avg_pool2d_backward_stub(contiguous_values(grad_output), grad_input, g, true);
  return grad_input;
}

// --- the 1-d forms: composites over the 2-d ops on a height-1 view ----------------

namespace {

void check_one(IntArrayRef values, const char* op, const char* name, bool may_be_empty) {
  KILN_CHECK(values.size() == 1 || (may_be_empty && values.empty()), op, "() argument '", name,
             "' should contain one int (got ", values.size(), ")");
}

/// torch's max_pool1d input check: 2-D, or 3-D with a batch dim that may be 0, the other dims non-zero.
void check_max_pool1d_input(const Tensor& self) {
  KILN_CHECK((self.dim() == 2 && self.size(0) != 0 && self.size(1) != 0) ||
                 (self.dim() == 3 && self.size(1) != 0 && self.size(2) != 0),
             "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, but got:",
             self.sizes());
}

}  // namespace

std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  check_one(kernel_size, "max_pool1d", "kernel_size", false);
  check_one(stride, "max_pool1d", "stride", true);
  check_one(padding, "max_pool1d", "padding", false);
  check_one(dilation, "max_pool1d", "dilation", false);
  check_max_pool1d_input(self);
  const int64_t k[] = {1, kernel_size[0]}, p[] = {0, padding[0]}, d[] = {1, dilation[0]};
  const int64_t s[] = {1, stride.empty() ? kernel_size[0] : stride[0]};
  const auto [out, indices] = kiln::max_pool2d_with_indices(kiln::unsqueeze(self, -2), IntArrayRef(k),
                                                            IntArrayRef(s), IntArrayRef(p), IntArrayRef(d), ceil_mode);
  return {kiln::squeeze(out, -2), kiln::squeeze(indices, -2)};
}

Tensor max_pool1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  check_max_pool1d_input(self);
  check_one(kernel_size, "max_pool1d", "kernel_size", false);
  check_one(padding, "max_pool1d", "padding", false);
  KILN_CHECK(kernel_size[0] > 0, "max_pool1d() kernel_size must be greater than zero, but got ", kernel_size[0]);
  KILN_CHECK(padding[0] >= 0, "max_pool1d() padding must be non-negative, but got ", padding[0]);
  KILN_CHECK(padding[0] <= kernel_size[0] / 2,
             "max_pool1d() padding should be at most half of kernel size, but got padding=", padding[0],
             " and kernel_size=", kernel_size[0]);
  // torch's max_pool1d checks (MaxPooling.cpp) before max_pool2d words them its own way
  check_one(stride, "max_pool1d", "stride", true);
  check_one(dilation, "max_pool1d", "dilation", false);
  const int64_t step = stride.empty() ? kernel_size[0] : stride[0];
  KILN_CHECK(step > 0, "max_pool1d() stride must be greater than zero, but got ", step);
  KILN_CHECK(dilation[0] > 0, "max_pool1d() dilation must be greater than zero, but got ", dilation[0]);
  const int64_t width = pooled_size(self.size(-1), kernel_size[0], padding[0], step, dilation[0], ceil_mode);
  KILN_CHECK(width > 0, "max_pool1d() Invalid computed output size: ", width);
  return std::get<0>(kiln::max_pool1d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode));
}

Tensor avg_pool1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  bool ceil_mode, bool count_include_pad) {
  check_one(kernel_size, "avg_pool1d", "kernel_size", false);
  check_one(stride, "avg_pool1d", "stride", true);
  check_one(padding, "avg_pool1d", "padding", false);
  KILN_CHECK(self.dim() == 2 || self.dim() == 3, "avg_pool1d() Expected 2D or 3D input, but got ", self.sizes());
  const int64_t k[] = {1, kernel_size[0]}, p[] = {0, padding[0]};
  const int64_t s[] = {1, stride.empty() ? kernel_size[0] : stride[0]};
  const Tensor out = kiln::avg_pool2d(kiln::unsqueeze(self, -2), IntArrayRef(k), IntArrayRef(s), IntArrayRef(p),
                                      ceil_mode, count_include_pad, std::nullopt);
  return kiln::squeeze(out, -2);
}

Tensor adaptive_avg_pool1d(const Tensor& self, IntArrayRef output_size) {
  check_one(output_size, "adaptive_avg_pool1d", "output_size", false);
  KILN_CHECK(self.dim() == 2 || self.dim() == 3, "adaptive_avg_pool1d(): Expected 2 to 3 dimensions, but got ",
             self.dim(), "-dimensional tensor for argument #1 'input' (while checking arguments for "
             "adaptive_avg_pool1d)");
  const int64_t o[] = {1, output_size[0]};
  return kiln::squeeze(kiln::adaptive_avg_pool2d(kiln::unsqueeze(self, -2), IntArrayRef(o)), -2);
}

}  // namespace kiln::native
