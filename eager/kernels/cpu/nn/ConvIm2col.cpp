// The 2-d convolution kernel and its three backward ops on the CPU: argument
// checks, dtypes and the im2col + GEMM schedule, compiled once; the loops are
// in per_capability/ConvKernel.cpp, the products in the BLAS (linalg/Blas.h).
#include <algorithm>
#include <cstdlib>
#include <optional>

#include "eager/core/Error.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/copy/ShapeCopy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/linalg/Blas.h"
#include "eager/kernels/cpu/nn/ConvOneDnn.h"
#include "eager/kernels/cpu/nn/ConvShape.h"
#include "eager/kernels/cpu/nn/ConvStubs.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

KILN_DEFINE_DISPATCH(im2col_fn, im2col_stub);
KILN_DEFINE_DISPATCH(conv_direct_int64_fn, conv_direct_int64_stub);
KILN_DEFINE_DISPATCH(col2im_fn, col2im_stub);
KILN_DEFINE_DISPATCH(conv_scatter_fn, conv_scatter_stub);
KILN_DEFINE_DISPATCH(conv_gather_fn, conv_gather_stub);
KILN_DEFINE_DISPATCH(conv_bias_grad_fn, conv_bias_grad_stub);

// Note [Convolution as im2col and GEMM]
// -------------------------------------
// For one group g and a chunk of samples, the convolution is one matrix product
//   rows_g (OCg x nb*L) = W_g (OCg x K) @ col (K x nb*L),
// where K = Cg * KH * KW, L = OH * OW and col is im2col of the chunk's group
// channels: row (c, kh, kw), column (n, oh, ow) holds the input pixel that tap
// reads for that sample, 0 in the padding. rows_g is then moved into the NCHW
// output with the bias added (conv_scatter). The backward ops are the two
// adjoint products over the same layouts, grad_output gathered into rows_g:
//   grad_weight_g (+)= rows_g @ col^T                 (summed over the chunks)
//   dcol = W_g^T @ rows_g, grad_input = col2im(dcol),
// col2im adding each dcol entry back to the pixel it was read from. A sample's
// rows_g block is also a contiguous [OCg, L] block of the NCHW tensor, so with
// planes of kDirectPlane outputs or more the forward and the input gradient
// run one product per sample on the tensor itself (leading dim L; the
// forward's bias as one more weight column against a row of ones in col),
// skipping the move through rows; smaller planes keep
// one GEMM per chunk and group, large enough for the BLAS. This path serves
// float64 and the float32 passes oneDNN is not given (onednn_for below: one
// input channel per group forward, fewer than 16 for the input gradient).
// With several chunks and threads,
// the chunks run in parallel (parallel_for), each product on one BLAS thread
// (sync_blas_threads inside a parallel region): measured at [64, 32, 14, 14] on 2 threads, TBB tasks
// between threaded BLAS calls made the convolution slower than on one thread.
// With one chunk the BLAS threads its product. A chunk is as many
// samples as fit col and rows in kColBudgetBytes, small enough to stay in
// cache between im2col and the GEMM (measured: 32 MiB chunks ran 2x slower at
// [64, 32, 14, 14]); a larger sample is a chunk by itself. im2col, col2im and
// the moves run one (sample, channel) plane per task (in parallel when the
// chunks are not). grad_weight sums per-chunk partial products in chunk order.
// float16/bfloat16 are widened to float32 and the result rounded once, as
// PyTorch does on the CPU. kiln's loops sum each plane of grad_input and each
// channel of grad_bias in one fixed order; the BLAS's products (as
// kiln.matmul's) may differ in the last bits between thread counts.

namespace {

constexpr int64_t kColBudgetBytes = int64_t{2} << 20;  // col + rows of a chunk, 2 MiB: they stay in cache

/// The three products of a convolution, for choosing where each runs.
enum class ConvPass { Forward, BackwardInput, BackwardWeight };

/// Whether a float32 pass goes to oneDNN (Note [Convolution on oneDNN]): the
/// forward for two or more input channels per group, the input gradient for
/// sixteen or more (oneDNN's kernels work on blocks of 16 channels), the weight
/// gradient always. At one channel (MNIST's first layer, [64, 1, 28, 28] ->
/// 32) the im2col path measured 2.3x faster forward and 4x faster
/// backward-input than oneDNN; between 2 and 16 channels the thresholds are
/// not measured. KILN_CONV_IM2COL=1 in the environment (read once) keeps every
/// pass on im2col, for the comparison in README.md.
bool onednn_for(DType compute, ConvPass pass, const Conv2dGeometry& g) {
  static const bool im2col_only = [] {
    const char* v = std::getenv("KILN_CONV_IM2COL");
    return v != nullptr && v[0] == '1';
  }();
  if (compute != DType::Float32 || im2col_only) return false;
  switch (pass) {
    case ConvPass::Forward: return g.group_in() >= 2;
    case ConvPass::BackwardInput: return g.group_in() >= 16;
    case ConvPass::BackwardWeight: return true;
  }
  return false;
}

DType compute_dtype(DType dtype) { return dtype == DType::Float64 ? DType::Float64 : DType::Float32; }

void check_conv_dtype(DType dtype, const char* op) {
  KILN_CHECK_NOT_IMPLEMENTED(is_floating_point(dtype), "\"", op, "\" not implemented for '", scalar_type_name(dtype),
                             "'");
}

/// A contiguous tensor of `dtype` with t's values (t itself when it already is one).
Tensor dense_as(const Tensor& t, DType dtype) {
  return t.dtype() == dtype ? contiguous_values(t) : to_dtype_copy(t, dtype);
}

/// Samples per chunk: as many as fit col and rows in kColBudgetBytes, at least one.
int64_t chunk_samples(const Conv2dGeometry& g, int64_t itemsize) {
  const int64_t per_sample = std::max<int64_t>(1, (g.col_rows() + g.group_out()) * g.out_plane() * itemsize);
  return std::clamp<int64_t>(kColBudgetBytes / per_sample, 1, std::max<int64_t>(g.batch, 1));
}

/// The two chunk buffers: col [K + 1, nb * L] (the last row for the forward's
/// bias, see forward_typed) and rows [OCg, nb * L].
template <typename T>
struct ChunkBuffers {
  Tensor col, rows;
  ChunkBuffers(const Conv2dGeometry& g, int64_t per_chunk) {
    const DType dtype = std::is_same_v<T, double> ? DType::Float64 : DType::Float32;
    col = empty({(g.col_rows() + 1) * per_chunk * g.out_plane()}, dtype);
    rows = empty({g.group_out() * per_chunk * g.out_plane()}, dtype);
  }
};

int64_t chunk_count(const Conv2dGeometry& g, int64_t per_chunk) { return (g.batch + per_chunk - 1) / per_chunk; }

/// Runs fn(index, chunk, col, rows) for every chunk of samples (and, inside
/// it, every group) with the chunk's buffers. Several chunks and threads: the
/// chunks run in parallel, one BLAS thread each; else one after another, the
/// BLAS threading each product. See Note [Convolution as im2col and GEMM].
template <typename T, typename Fn>
void run_chunks(const Conv2dGeometry& g, int64_t per_chunk, Fn&& fn) {
  const int64_t chunks = chunk_count(g, per_chunk);
  auto run = [&](int64_t begin, int64_t end) {
    ChunkBuffers<T> buf(g, per_chunk);
    T* col = buf.col.template data_ptr<T>();
    T* rows = buf.rows.template data_ptr<T>();
    for (int64_t c = begin; c < end; ++c) {
      const int64_t first = c * per_chunk, count = std::min(per_chunk, g.batch - first);
      for (int64_t group = 0; group < g.groups; ++group) fn(c, ConvChunk{first, count, group}, col, rows);
    }
  };
  if (chunks < 2 || get_num_threads() < 2 || in_parallel_region()) {
    run(0, chunks);
    return;
  }
  parallel_for(0, chunks, 1, run);  // each task's gemm_raw runs on one BLAS thread (sync_blas_threads)
}

/// Whether each sample's product reads and writes the NCHW tensor itself (its
/// [OCg, L] block is contiguous with leading dim L), skipping the move through
/// `rows`; below kDirectPlane outputs per plane one GEMM per chunk is cheaper
/// than one per sample.
constexpr int64_t kDirectPlane = 64;
bool per_sample_products(const Conv2dGeometry& g) { return g.out_plane() >= kDirectPlane; }

/// W_g with the bias as one more column, [groups, OCg, K + 1]: against a row of
/// ones below col, the product adds the bias itself (no pass over the output).
template <typename T>
Tensor weight_with_bias(const Tensor& w, const Tensor& bias, const Conv2dGeometry& g) {
  const int64_t K = g.col_rows();
  Tensor out = empty({g.out_channels * (K + 1)}, w.dtype());
  const T* src = w.data_ptr<T>();
  const T* b = bias.data_ptr<T>();
  T* dst = out.data_ptr<T>();
  for (int64_t o = 0; o < g.out_channels; ++o) {
    std::copy(src + o * K, src + (o + 1) * K, dst + o * (K + 1));
    dst[o * (K + 1) + K] = b[o];
  }
  return out;
}

template <typename T>
void forward_typed(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y, const Conv2dGeometry& g) {
  T* out = y.data_ptr<T>();
  const int64_t L = g.out_plane(), K = g.col_rows(), ocg = g.group_out();
  const bool direct = per_sample_products(g);
  // With per-sample products the bias rides in the GEMM: W_g | bias against col with a row of ones.
  const Tensor wb = direct && bias.defined() ? weight_with_bias<T>(w, bias, g) : w;
  const int64_t k = direct && bias.defined() ? K + 1 : K;
  const T* wt = wb.data_ptr<T>();
  run_chunks<T>(g, chunk_samples(g, sizeof(T)), [&](int64_t, ConvChunk chunk, T* col, T* rows) {
    const int64_t n = chunk.count * L;
    im2col_stub(y.dtype(), x.data_ptr(), col, g, chunk);
    if (!direct) {
      gemm_raw<T>(false, false, ocg, n, K, T(1), wt + chunk.group * ocg * K, K, col, n, T(0), rows, n);
      conv_scatter_stub(y.dtype(), rows, bias.defined() ? bias.data_ptr() : nullptr, y.data_ptr(), g, chunk);
      return;
    }
    if (k > K) std::fill(col + K * n, col + (K + 1) * n, T(1));
    for (int64_t s = 0; s < chunk.count; ++s) {
      T* dst = out + ((chunk.first + s) * g.out_channels + chunk.group * ocg) * L;
      gemm_raw<T>(false, false, ocg, L, k, T(1), wt + chunk.group * ocg * k, k, col + s * L, n, T(0), dst, L);
    }
  });
}

template <typename T>
void backward_input_typed(const Tensor& gy, const Tensor& w, const Tensor& gx, const Conv2dGeometry& g) {
  const T* wt = w.data_ptr<T>();
  const T* grad = gy.data_ptr<T>();
  const int64_t L = g.out_plane(), K = g.col_rows(), ocg = g.group_out();
  const bool direct = per_sample_products(g);
  run_chunks<T>(g, chunk_samples(g, sizeof(T)), [&](int64_t, ConvChunk chunk, T* col, T* rows) {
    const int64_t n = chunk.count * L;
    if (direct) {
      for (int64_t s = 0; s < chunk.count; ++s) {
        const T* src = grad + ((chunk.first + s) * g.out_channels + chunk.group * ocg) * L;
        gemm_raw<T>(true, false, K, L, ocg, T(1), wt + chunk.group * ocg * K, K, src, L, T(0), col + s * L, n);
      }
    } else {
      conv_gather_stub(gx.dtype(), gy.data_ptr(), rows, g, chunk);
      gemm_raw<T>(true, false, K, n, ocg, T(1), wt + chunk.group * ocg * K, K, rows, n, T(0), col, n);
    }
    col2im_stub(gx.dtype(), col, gx.data_ptr(), g, chunk);
  });
}

/// Each chunk's grad_weight goes to its own row of `partial` [chunks, OC * K];
/// the rows are then summed in chunk order by one more product (ones @ partial).
template <typename T>
void backward_weight_typed(const Tensor& gy, const Tensor& x, const Tensor& gw, const Conv2dGeometry& g) {
  const int64_t L = g.out_plane(), K = g.col_rows(), ocg = g.group_out(), size = g.out_channels * K;
  const int64_t per_chunk = chunk_samples(g, sizeof(T));
  const int64_t chunks = chunk_count(g, per_chunk);
  const Tensor partial = chunks == 1 ? gw : empty({chunks, size}, gw.dtype());
  T* part = partial.data_ptr<T>();
  run_chunks<T>(g, per_chunk, [&](int64_t index, ConvChunk chunk, T* col, T* rows) {
    const int64_t n = chunk.count * L;
    im2col_stub(gw.dtype(), x.data_ptr(), col, g, chunk);
    conv_gather_stub(gw.dtype(), gy.data_ptr(), rows, g, chunk);
    T* dst = part + index * size + chunk.group * ocg * K;
    gemm_raw<T>(false, true, ocg, K, n, T(1), rows, n, col, n, T(0), dst, K);
  });
  if (chunks == 1) return;
  const Tensor ones = full({chunks}, 1, gw.dtype());
  gemm_raw<T>(false, false, 1, size, chunks, T(1), ones.data_ptr<T>(), chunks, part, size, T(0), gw.data_ptr<T>(),
              size);
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

/// An integer convolution (PyTorch runs these on its slow_conv2d kernel): int64
/// operands, the direct loop's wrapping sums, narrowed to the input's dtype.
Tensor integer_convolution2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                             const Conv2dGeometry& g) {
  // PyTorch's dilated kernel (slow_conv_dilated2d) takes int64 but no other integer dtype.
  KILN_CHECK_NOT_IMPLEMENTED((g.dilation_h == 1 && g.dilation_w == 1) || input.dtype() == DType::Int64,
                             "\"slow_conv_dilated<>\" not implemented for '", scalar_type_name(input.dtype()), "'");
  Tensor y = zeros({g.batch, g.out_channels, g.out_h, g.out_w}, DType::Int64, input.device());
  if (y.impl()->is_meta()) return finish(y, input.dtype());  // Note [Stubs skip meta tensors]
  const Tensor b = bias && bias->defined() ? dense_as(*bias, DType::Int64) : Tensor();
  if (y.numel() > 0) {
    const Tensor x = dense_as(input, DType::Int64), w = dense_as(weight, DType::Int64);
    conv_direct_int64_stub(x.data_ptr<int64_t>(), w.data_ptr<int64_t>(), b.defined() ? b.data_ptr<int64_t>() : nullptr,
                           y.data_ptr<int64_t>(), g);
  }
  return finish(y, input.dtype());
}

}  // namespace

Tensor convolution2d_cpu(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                         IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  KILN_CHECK(input.dim() == 4, "_convolution2d: expected a 4-d (batched) input, but got input of size ",
             input.sizes());
  check_conv_forward(input, weight, bias, stride, padding, dilation, groups);
  const Conv2dGeometry g = conv2d_geometry(input.sizes(), weight.sizes(), stride, padding, dilation, groups);
  if (is_integral(input.dtype(), /*include_bool=*/false)) return integer_convolution2d(input, weight, bias, g);
  KILN_CHECK_NOT_IMPLEMENTED(input.dtype() != DType::Bool, "\"slow_conv2d_cpu\" not implemented for 'Bool'");
  check_conv_dtype(input.dtype(), "_convolution2d");
  const DType dtype = compute_dtype(input.dtype());
  const Tensor b = bias && bias->defined() ? dense_as(*bias, dtype) : Tensor();
  Tensor y = empty({g.batch, g.out_channels, g.out_h, g.out_w}, dtype, input.device());
  // Meta: the checks and the geometry above are the meta function (Note [Stubs skip meta tensors]).
  if (y.numel() == 0 || y.impl()->is_meta()) return finish(y, input.dtype());
  if (g.col_rows() == 0) {  // no input channels: the output is the bias
    y = zeros(y.sizes(), dtype, input.device());
    if (b.defined()) {
      const Tensor bias_rows = zeros({g.group_out() * g.batch * g.out_plane()}, dtype);
      for (int64_t group = 0; group < g.groups; ++group) {
        conv_scatter_stub(dtype, bias_rows.data_ptr(), b.data_ptr(), y.data_ptr(), g, ConvChunk{0, g.batch, group});
      }
    }
    return finish(y, input.dtype());
  }
  const Tensor x = dense_as(input, dtype), w = dense_as(weight, dtype);
  if (onednn_for(dtype, ConvPass::Forward, g) && onednn_conv2d_forward(x, w, b, y, g)) return finish(y, input.dtype());
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
  if (gx.numel() == 0 || gx.impl()->is_meta()) return finish(gx, grad_output.dtype());
  if (g.out_channels == 0 || g.out_plane() == 0) return finish(zeros(input_sizes, dtype), grad_output.dtype());
  const Tensor gy = dense_as(grad_output, dtype), w = dense_as(weight, dtype);
  if (onednn_for(dtype, ConvPass::BackwardInput, g) && onednn_conv2d_backward_input(gy, w, gx, g)) return finish(gx, grad_output.dtype());
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
  if (grad_output.impl()->is_meta()) return finish(empty(weight_sizes, dtype, grad_output.device()), grad_output.dtype());
  if (g.batch == 0 || g.out_plane() == 0 || g.out_channels == 0 || g.col_rows() == 0) {
    return finish(zeros(weight_sizes, dtype), grad_output.dtype());
  }
  Tensor gw = empty(weight_sizes, dtype, grad_output.device());
  const Tensor gy = dense_as(grad_output, dtype), x = dense_as(input, dtype);
  if (onednn_for(dtype, ConvPass::BackwardWeight, g) && onednn_conv2d_backward_weight(gy, x, gw, g)) return finish(gw, grad_output.dtype());
  visit_compute(dtype, [&](auto tag) { backward_weight_typed<decltype(tag)>(gy, x, gw, g); });
  return finish(gw, grad_output.dtype());
}

Tensor conv2d_backward_bias_cpu(const Tensor& grad_output) {
  KILN_CHECK(grad_output.dim() == 4, "_conv2d_backward_bias: expected a 4-d grad_output, but got size ",
             grad_output.sizes());
  check_conv_dtype(grad_output.dtype(), "_conv2d_backward_bias");
  const DType dtype = compute_dtype(grad_output.dtype());
  const int64_t batch = grad_output.size(0), channels = grad_output.size(1);
  const int64_t plane = channels == 0 || batch == 0 ? 0 : grad_output.numel() / (batch * channels);
  Tensor gb = empty({channels}, dtype, grad_output.device());
  if (channels == 0 || gb.impl()->is_meta()) return finish(gb, grad_output.dtype());
  const Tensor gy = dense_as(grad_output, dtype);
  conv_bias_grad_stub(dtype, gy.data_ptr(), gb.data_ptr(), batch, channels, plane);
  return finish(gb, grad_output.dtype());
}

}  // namespace kiln::native
