// The 2-d convolution kernel and its three backward ops on the CPU: argument
// checks, dtypes and the im2col + GEMM schedule, compiled once; the loops are
// in kernels/ConvKernel.cpp, the products in the BLAS (Blas.h).
#include <algorithm>
#include <optional>

#include "eager/core/Error.h"
#include "eager/kernels/cpu/Blas.h"
#include "eager/kernels/cpu/ConvShape.h"
#include "eager/kernels/cpu/ConvStubs.h"
#include "eager/kernels/cpu/Copy.h"
#include "eager/kernels/cpu/Factories.h"
#include "eager/kernels/cpu/ShapeCopy.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

KILN_DEFINE_DISPATCH(im2col_fn, im2col_stub);
KILN_DEFINE_DISPATCH(col2im_fn, col2im_stub);
KILN_DEFINE_DISPATCH(conv_fill_bias_fn, conv_fill_bias_stub);
KILN_DEFINE_DISPATCH(conv_bias_grad_fn, conv_bias_grad_stub);

// Note [Convolution as im2col and GEMM]
// -------------------------------------
// For one group g of a sample n, the convolution is one matrix product:
//   out[n, g] (OCg x L) = W_g (OCg x K) @ col_n (K x L),
// where K = Cg * KH * KW, L = OH * OW and col_n is im2col of the sample's group
// channels: row (c, kh, kw), column (oh, ow) holds the input pixel that tap
// reads, 0 in the padding. The backward ops are the two adjoint products:
//   grad_weight_g += grad_out[n, g] @ col_n^T        (summed over the batch)
//   dcol_n = W_g^T @ grad_out[n, g], grad_input[n, g] = col2im(dcol_n),
// col2im adding each dcol entry back to the pixel it was read from. im2col
// runs over a chunk of samples at once (one (sample, channel) plane per task,
// in parallel), into one buffer of at most kColBudgetBytes; the products run
// per sample, reading their operands in place through leading dimensions
// (the BLAS threads them), and write straight into the NCHW output, which
// holds the bias beforehand (beta = 1). A 1x1 kernel at stride 1 without
// padding skips im2col: the input plane is its own col. float16/bfloat16 are
// widened to float32 and the result rounded once, as PyTorch does on the CPU.
// Each plane of grad_input, each channel of grad_bias and each group of
// grad_weight is summed in one fixed order: no result depends on the thread
// count.

namespace {

constexpr int64_t kColBudgetBytes = int64_t{32} << 20;  // largest im2col buffer, 32 MiB

DType compute_dtype(DType dtype) { return dtype == DType::Float64 ? DType::Float64 : DType::Float32; }

void check_conv_dtype(DType dtype, const char* op) {
  KILN_CHECK_NOT_IMPLEMENTED(is_floating_point(dtype), "\"", op, "\" not implemented for '", scalar_type_name(dtype),
                             "'");
}

/// A contiguous tensor of `dtype` with t's values (t itself when it already is one).
Tensor dense_as(const Tensor& t, DType dtype) {
  return t.dtype() == dtype ? contiguous_values(t) : to_dtype_copy(t, dtype);
}

/// Samples per im2col chunk: as many as fit in kColBudgetBytes, at least one.
int64_t chunk_samples(const Conv2dGeometry& g, int64_t itemsize) {
  const int64_t per_sample = std::max<int64_t>(1, g.col_rows() * g.out_plane() * itemsize);
  return std::clamp<int64_t>(kColBudgetBytes / per_sample, 1, std::max<int64_t>(g.batch, 1));
}

/// Runs fn(chunk, col) for every chunk of samples and every group, col holding
/// the chunk's im2col of `input` (nullptr when the input is its own col, or
/// when `fill` is false: the caller writes col itself).
template <typename T, typename Fn>
void for_each_chunk(const Conv2dGeometry& g, const T* input, bool fill, Fn&& fn) {
  const int64_t per_chunk = chunk_samples(g, sizeof(T));
  const bool own_col = !g.is_pointwise();
  Tensor col;
  if (own_col) col = empty({g.col_rows() * per_chunk * g.out_plane()}, std::is_same_v<T, double> ? DType::Float64 : DType::Float32);
  for (int64_t first = 0; first < g.batch; first += per_chunk) {
    const int64_t count = std::min(per_chunk, g.batch - first);
    for (int64_t group = 0; group < g.groups; ++group) {
      const ConvChunk chunk{first, count, group};
      T* col_ptr = own_col ? col.data_ptr<T>() : nullptr;
      if (own_col && fill) im2col_stub(col.dtype(), input, col_ptr, g, chunk);
      fn(chunk, col_ptr);
    }
  }
}

/// Where sample n's col starts and its leading dimension: the chunk's buffer, or the input itself.
template <typename T>
struct ColView {
  const T* ptr;
  int64_t ld;
};

template <typename T>
ColView<T> col_of(const Conv2dGeometry& g, const T* input, const T* col, ConvChunk chunk, int64_t n) {
  const int64_t L = g.out_plane();
  if (col == nullptr) return {input + ((chunk.first + n) * g.in_channels + chunk.group * g.group_in()) * L, L};
  return {col + n * L, chunk.count * L};
}

template <typename T>
void forward_typed(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y, const Conv2dGeometry& g) {
  const T* in = x.data_ptr<T>();
  const T* wt = w.data_ptr<T>();
  T* out = y.data_ptr<T>();
  const int64_t L = g.out_plane(), K = g.col_rows(), ocg = g.group_out();
  const T beta = bias.defined() ? T(1) : T(0);
  for_each_chunk<T>(g, in, true, [&](ConvChunk chunk, const T* col) {
    if (chunk.group == 0 && bias.defined()) conv_fill_bias_stub(y.dtype(), bias.data_ptr(), out, g, chunk);
    for (int64_t n = 0; n < chunk.count; ++n) {
      const ColView<T> c = col_of(g, in, col, chunk, n);
      T* dst = out + ((chunk.first + n) * g.out_channels + chunk.group * ocg) * L;
      gemm_raw<T>(false, false, ocg, L, K, T(1), wt + chunk.group * ocg * K, K, c.ptr, c.ld, beta, dst, L);
    }
  });
}

template <typename T>
void backward_input_typed(const Tensor& gy, const Tensor& w, const Tensor& gx, const Conv2dGeometry& g) {
  const T* grad = gy.data_ptr<T>();
  const T* wt = w.data_ptr<T>();
  T* gin = gx.data_ptr<T>();
  const int64_t L = g.out_plane(), K = g.col_rows(), ocg = g.group_out();
  for_each_chunk<T>(g, gin, false, [&](ConvChunk chunk, T* col) {
    for (int64_t n = 0; n < chunk.count; ++n) {
      const T* src = grad + ((chunk.first + n) * g.out_channels + chunk.group * ocg) * L;
      T* dst = col != nullptr ? col + n * L
                              : gin + ((chunk.first + n) * g.in_channels + chunk.group * g.group_in()) * L;
      const int64_t ld = col != nullptr ? chunk.count * L : L;
      gemm_raw<T>(true, false, K, L, ocg, T(1), wt + chunk.group * ocg * K, K, src, L, T(0), dst, ld);
    }
    if (col != nullptr) col2im_stub(gx.dtype(), col, gin, g, chunk);
  });
}

template <typename T>
void backward_weight_typed(const Tensor& gy, const Tensor& x, const Tensor& gw, const Conv2dGeometry& g) {
  const T* grad = gy.data_ptr<T>();
  const T* in = x.data_ptr<T>();
  T* gwt = gw.data_ptr<T>();
  const int64_t L = g.out_plane(), K = g.col_rows(), ocg = g.group_out();
  for_each_chunk<T>(g, in, true, [&](ConvChunk chunk, const T* col) {
    for (int64_t n = 0; n < chunk.count; ++n) {
      const ColView<T> c = col_of(g, in, col, chunk, n);
      const T* src = grad + ((chunk.first + n) * g.out_channels + chunk.group * ocg) * L;
      const T beta = chunk.first + n == 0 ? T(0) : T(1);
      gemm_raw<T>(false, true, ocg, K, L, T(1), src, L, c.ptr, c.ld, beta, gwt + chunk.group * ocg * K, K);
    }
  });
}

template <typename Fn>
void visit_compute(DType dtype, Fn&& fn) {
  if (dtype == DType::Float64) {
    fn(double{});
  } else {
    fn(float{});
  }
}

/// The result in the caller's dtype (computed in `computed`'s).
Tensor finish(const Tensor& computed, DType dtype) {
  return computed.dtype() == dtype ? computed : to_dtype_copy(computed, dtype);
}

}  // namespace

Tensor convolution2d_cpu(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                         IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  KILN_CHECK(input.dim() == 4, "_convolution2d: expected a 4-d (batched) input, but got input of size ",
             input.sizes());
  check_conv_forward(input, weight, bias, stride, padding, dilation, groups);
  check_conv_dtype(input.dtype(), "_convolution2d");
  const Conv2dGeometry g = conv2d_geometry(input.sizes(), weight.sizes(), stride, padding, dilation, groups);
  const DType dtype = compute_dtype(input.dtype());
  const Tensor b = bias && bias->defined() ? dense_as(*bias, dtype) : Tensor();
  Tensor y = empty({g.batch, g.out_channels, g.out_h, g.out_w}, dtype, input.device());
  if (y.numel() == 0) return finish(y, input.dtype());
  if (g.col_rows() == 0) {  // no input channels: the output is the bias
    y = zeros(y.sizes(), dtype, input.device());
    if (b.defined()) conv_fill_bias_stub(dtype, b.data_ptr(), y.data_ptr(), g, ConvChunk{0, g.batch, 0});
    return finish(y, input.dtype());
  }
  const Tensor x = dense_as(input, dtype), w = dense_as(weight, dtype);
  visit_compute(dtype, [&](auto tag) { forward_typed<decltype(tag)>(x, w, b, y, g); });
  return finish(y, input.dtype());
}

Tensor conv2d_backward_input_cpu(const Tensor& grad_output, const Tensor& weight, IntArrayRef input_sizes,
                                 IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  check_conv_dtype(grad_output.dtype(), "_conv2d_backward_input");
  const Conv2dGeometry g = conv2d_geometry(input_sizes, weight.sizes(), stride, padding, dilation, groups);
  KILN_CHECK(grad_output.dim() == 4 && grad_output.size(0) == g.batch && grad_output.size(1) == g.out_channels &&
                 grad_output.size(2) == g.out_h && grad_output.size(3) == g.out_w,
             "_conv2d_backward_input: expected grad_output of size [", g.batch, ", ", g.out_channels, ", ", g.out_h,
             ", ", g.out_w, "], but got ", grad_output.sizes());
  KILN_CHECK(grad_output.dtype() == weight.dtype(), "_conv2d_backward_input: expected grad_output and weight of one ",
             "dtype, but got ", scalar_type_name(grad_output.dtype()), " and ", scalar_type_name(weight.dtype()));
  const DType dtype = compute_dtype(grad_output.dtype());
  Tensor gx = empty(input_sizes, dtype, grad_output.device());
  if (gx.numel() == 0) return finish(gx, grad_output.dtype());
  if (g.out_channels == 0 || g.out_plane() == 0) return finish(zeros(input_sizes, dtype), grad_output.dtype());
  const Tensor gy = dense_as(grad_output, dtype), w = dense_as(weight, dtype);
  visit_compute(dtype, [&](auto tag) { backward_input_typed<decltype(tag)>(gy, w, gx, g); });
  return finish(gx, grad_output.dtype());
}

Tensor conv2d_backward_weight_cpu(const Tensor& grad_output, const Tensor& input, IntArrayRef weight_sizes,
                                  IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  check_conv_dtype(grad_output.dtype(), "_conv2d_backward_weight");
  const Conv2dGeometry g = conv2d_geometry(input.sizes(), weight_sizes, stride, padding, dilation, groups);
  KILN_CHECK(grad_output.dim() == 4 && grad_output.size(0) == g.batch && grad_output.size(1) == g.out_channels &&
                 grad_output.size(2) == g.out_h && grad_output.size(3) == g.out_w,
             "_conv2d_backward_weight: expected grad_output of size [", g.batch, ", ", g.out_channels, ", ", g.out_h,
             ", ", g.out_w, "], but got ", grad_output.sizes());
  KILN_CHECK(grad_output.dtype() == input.dtype(), "_conv2d_backward_weight: expected grad_output and input of one ",
             "dtype, but got ", scalar_type_name(grad_output.dtype()), " and ", scalar_type_name(input.dtype()));
  const DType dtype = compute_dtype(grad_output.dtype());
  if (g.batch == 0 || g.out_plane() == 0 || g.out_channels == 0 || g.col_rows() == 0) {
    return finish(zeros(weight_sizes, dtype), grad_output.dtype());
  }
  Tensor gw = empty(weight_sizes, dtype, grad_output.device());
  const Tensor gy = dense_as(grad_output, dtype), x = dense_as(input, dtype);
  visit_compute(dtype, [&](auto tag) { backward_weight_typed<decltype(tag)>(gy, x, gw, g); });
  return finish(gw, grad_output.dtype());
}

Tensor conv2d_backward_bias_cpu(const Tensor& grad_output) {
  KILN_CHECK(grad_output.dim() >= 2, "_conv2d_backward_bias: expected grad_output with a channel dim, but got size ",
             grad_output.sizes());
  check_conv_dtype(grad_output.dtype(), "_conv2d_backward_bias");
  const DType dtype = compute_dtype(grad_output.dtype());
  const int64_t batch = grad_output.size(0), channels = grad_output.size(1);
  const int64_t plane = channels == 0 || batch == 0 ? 0 : grad_output.numel() / (batch * channels);
  Tensor gb = empty({channels}, dtype, grad_output.device());
  if (channels == 0) return finish(gb, grad_output.dtype());
  const Tensor gy = dense_as(grad_output, dtype);
  conv_bias_grad_stub(dtype, gy.data_ptr(), gb.data_ptr(), batch, channels, plane);
  return finish(gb, grad_output.dtype());
}

}  // namespace kiln::native
