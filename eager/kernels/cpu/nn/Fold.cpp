// im2col and col2im, the ops behind F.unfold and F.fold: PyTorch's shape
// checks and messages, dtypes, and the per-sample calls of the convolution's
// im2col/col2im loops (per_capability/ConvKernel.cpp).
#include <cstdint>

#include "eager/core/Error.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/copy/ShapeCopy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/nn/ConvShape.h"
#include "eager/kernels/cpu/nn/ConvStubs.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

// Note [unfold and fold]
// ----------------------
// unfold (im2col) of one sample [C, H, W] is the matrix [C * KH * KW, L] whose
// row (c, kh, kw) and column l = bh * BW + bw hold the pixel that tap reads for
// sliding block (bh, bw), 0 in the padding; L = BH * BW blocks with
// BH = (H + 2 ph - dh (KH - 1) - 1) / sh + 1 (and BW alike). It is exactly the
// convolution's im2col of a one-sample chunk (Note [Convolution as im2col and
// GEMM]), so both ops reuse those loops, one sample per call, the samples in
// parallel. fold (col2im) is the adjoint: each column entry is added back to
// the pixel it was read from, so overlapping blocks sum. PyTorch runs both for
// floating dtypes and bool (not integers); kiln computes float16/bfloat16 and
// bool in float32 (exact for the copies; bool's sum read back as "any").

namespace {

struct FoldArgs {
  int64_t kh, kw, dh, dw, ph, pw, sh, sw;
};

/// PyTorch's checks of kernel, dilation, padding and stride, in its order
/// (im2col checks stride last, col2im right after the kernel).
FoldArgs fold_args(IntArrayRef kernel, IntArrayRef dilation, IntArrayRef padding, IntArrayRef stride, bool fold) {
  KILN_CHECK(kernel.size() == 2 && dilation.size() == 2 && padding.size() == 2 && stride.size() == 2,
             fold ? "col2im" : "im2col", ": expected kernel_size, dilation, padding and stride of 2 values each");
  const FoldArgs a{kernel[0], kernel[1], dilation[0], dilation[1], padding[0], padding[1], stride[0], stride[1]};
  KILN_CHECK(a.kw > 0 && a.kh > 0, "kernel size should be greater than zero, but got kernel_height: ", a.kh,
             " kernel_width: ", a.kw);
  auto check_stride = [&] {
    KILN_CHECK(a.sw > 0 && a.sh > 0, "stride should be greater than zero, but got stride_height: ", a.sh,
               " stride_width: ", a.sw);
  };
  if (fold) check_stride();
  KILN_CHECK(a.dw > 0 && a.dh > 0, "dilation should be greater than zero, but got dilation_height: ", a.dh,
             " dilation_width: ", a.dw);
  KILN_CHECK(a.pw >= 0 && a.ph >= 0, "padding should be non-negative, but got pad_height: ", a.ph,
             " pad_width: ", a.pw);
  if (!fold) check_stride();
  return a;
}

/// Sliding blocks along one dim of `size` (may be below one).
int64_t blocks(int64_t size, int64_t pad, int64_t dilation, int64_t kernel, int64_t stride) {
  return floor_div(size + 2 * pad - (dilation * (kernel - 1) + 1), stride) + 1;
}

/// The geometry the im2col/col2im loops read: one group, batch samples of
/// [channels, height, width], the blocks as the output plane.
Conv2dGeometry fold_geometry(const FoldArgs& a, int64_t batch, int64_t channels, int64_t height, int64_t width) {
  Conv2dGeometry g;
  g.batch = batch;
  g.in_channels = channels;
  g.out_channels = channels;
  g.height = height;
  g.width = width;
  g.kernel_h = a.kh;
  g.kernel_w = a.kw;
  g.stride_h = a.sh;
  g.stride_w = a.sw;
  g.pad_h = a.ph;
  g.pad_w = a.pw;
  g.dilation_h = a.dh;
  g.dilation_w = a.dw;
  g.out_h = blocks(height, a.ph, a.dh, a.kh, a.sh);
  g.out_w = blocks(width, a.pw, a.dw, a.kw, a.sw);
  return g;
}

/// float32/float64 as they are; float16, bfloat16 and bool in float32;
/// integers: NotImplementedError with PyTorch's kernel name.
DType fold_compute_dtype(DType dtype, const char* kernel) {
  KILN_CHECK_NOT_IMPLEMENTED(is_floating_point(dtype) || dtype == DType::Bool, "\"", kernel,
                             "\" not implemented for '", scalar_type_name(dtype), "'");
  return dtype == DType::Float64 ? DType::Float64 : DType::Float32;
}

/// The size of dim d of t, or PyTorch's IndexError when t has no such dim.
int64_t size_at(const Tensor& t, int64_t d) {
  KILN_CHECK_INDEX(t.dim() > 0, "Dimension specified as ", d, " but tensor has no dimensions");
  KILN_CHECK_INDEX(d < t.dim(), "Dimension out of range (expected to be in range of [", -t.dim(), ", ",
                   t.dim() - 1, "], but got ", d, ")");
  return t.size(d);
}

/// fn(n) for every sample, in parallel when there is enough work per sample.
template <typename Fn>
void for_samples(int64_t batch, int64_t per_sample, Fn&& fn) {
  parallel_for(0, batch, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(per_sample, 1)),
               [&](int64_t begin, int64_t end) {
                 for (int64_t n = begin; n < end; ++n) fn(n);
               });
}

}  // namespace

Tensor im2col_cpu(const Tensor& self, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding,
                  IntArrayRef stride) {
  const FoldArgs a = fold_args(kernel_size, dilation, padding, stride, /*fold=*/false);
  const int64_t d = self.dim();
  // PyTorch reads sizes 1 and 2 before it checks the rank.
  const bool valid_dims = size_at(self, 1) != 0 && size_at(self, 2) != 0;
  KILN_CHECK((d == 3 && self.size(0) != 0 && valid_dims) || (d == 4 && valid_dims && self.size(3) != 0),
             "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
             "input, but got: ",
             self.sizes());
  const bool batched = d == 4;
  const int64_t batch = batched ? self.size(0) : 1, channels = self.size(d - 3);
  const Conv2dGeometry g = fold_geometry(a, batch, channels, self.size(d - 2), self.size(d - 1));
  KILN_CHECK(g.out_h >= 1 && g.out_w >= 1, "Given input with spatial size (", g.height, ", ", g.width,
             "), kernel_size=(", a.kh, ", ", a.kw, "), dilation=(", a.dh, ", ", a.dw, "), padding=(", a.ph, ", ",
             a.pw, "), calculated shape of the array of sliding blocks as (", g.out_h, ", ", g.out_w,
             "), but its components must be at least one.");
  const DType dtype = fold_compute_dtype(self.dtype(), "im2col_out_cpu");
  const int64_t rows = channels * a.kh * a.kw, L = g.out_plane();
  Tensor out = batched ? empty({batch, rows, L}, dtype, self.device()) : empty({rows, L}, dtype, self.device());
  if (out.numel() > 0 && !out.impl()->is_meta()) {  // meta: the checks above are the meta function
    const Tensor x = self.dtype() == dtype ? contiguous_values(self) : to_dtype_copy(self, dtype);
    const int64_t itemsize = dtype == DType::Float64 ? 8 : 4;
    auto* base = static_cast<char*>(out.data_ptr());
    for_samples(batch, rows * L, [&](int64_t n) {
      im2col_stub(dtype, x.data_ptr(), base + n * rows * L * itemsize, g, ConvChunk{n, 1, 0});
    });
  }
  if (dtype != self.dtype()) out = to_dtype_copy(out, self.dtype());
  return out;
}

Tensor col2im_cpu(const Tensor& self, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation,
                  IntArrayRef padding, IntArrayRef stride) {
  KILN_CHECK(output_size.size() == 2, "col2im: expected output_size of 2 values, but got ", output_size);
  const FoldArgs a = fold_args(kernel_size, dilation, padding, stride, /*fold=*/true);
  const int64_t d = self.dim();
  KILN_CHECK((d == 2 && self.size(0) != 0 && self.size(1) != 0) || (d == 3 && self.size(1) != 0 && self.size(2) != 0),
             "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions for "
             "input, but got: ",
             self.sizes());
  const bool batched = d == 3;
  const int64_t rows = self.size(d - 2), L = self.size(d - 1), batch = batched ? self.size(0) : 1;
  KILN_CHECK(rows % (a.kw * a.kh) == 0, "Expected size of input's dimension 1 to be divisible by the product of ",
             "kernel_size, but got input.size(1)=", rows, " and kernel_size=(", a.kh, ", ", a.kw, ").");
  const Conv2dGeometry g = fold_geometry(a, batch, rows / (a.kh * a.kw), output_size[0], output_size[1]);
  KILN_CHECK(L == g.out_h * g.out_w, "Given output_size=(", output_size[0], ", ", output_size[1],
             "), kernel_size=(", a.kh, ", ", a.kw, "), dilation=(", a.dh, ", ", a.dw, "), padding=(", a.ph, ", ",
             a.pw, "), stride=(", a.sh, ", ", a.sw, "), expected size of input's dimension 2 to match the ",
             "calculated number of sliding blocks ", g.out_h, " * ", g.out_w, " = ", g.out_h * g.out_w,
             ", but got input.size(2)=", L, ".");
  KILN_CHECK(g.out_h >= 1 && g.out_w >= 1, "Given output_size=(", output_size[0], ", ", output_size[1],
             "), kernel_size=(", a.kh, ", ", a.kw, "), dilation=(", a.dh, ", ", a.dw, "), padding=(", a.ph, ", ",
             a.pw, "), stride=(", a.sh, ", ", a.sw, "), calculated shape of the array of sliding blocks as (",
             g.out_h, ", ", g.out_w, "), which is too small (non-positive).");
  const DType dtype = fold_compute_dtype(self.dtype(), "col2im_out_cpu");
  Tensor out = batched ? empty({batch, g.in_channels, g.height, g.width}, dtype, self.device())
                       : empty({g.in_channels, g.height, g.width}, dtype, self.device());
  if (out.numel() > 0 && !out.impl()->is_meta()) {  // meta: the checks above are the meta function
    const Tensor col = self.dtype() == dtype ? contiguous_values(self) : to_dtype_copy(self, dtype);
    const int64_t itemsize = dtype == DType::Float64 ? 8 : 4;
    const auto* base = static_cast<const char*>(col.data_ptr());
    for_samples(batch, rows * L, [&](int64_t n) {
      col2im_stub(dtype, base + n * rows * L * itemsize, out.data_ptr(), g, ConvChunk{n, 1, 0});
    });
  }
  if (dtype != self.dtype()) out = to_dtype_copy(out, self.dtype());
  return out;
}

}  // namespace kiln::native
