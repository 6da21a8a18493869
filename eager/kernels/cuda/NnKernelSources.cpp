// The CUDA C++ templates of the nn kernels (NnKernelSources.h): layer_norm /
// rms_norm forward and backward, softmax backward, nll_loss forward and
// backward, the embedding backward's segment sums.
#include "eager/kernels/cuda/NnKernelSources.h"

#include "eager/core/Error.h"

namespace kiln::native::cuda_kernels {

namespace {

// Note [Block sums are deterministic]
// -----------------------------------
// Every row kernel below reduces with block_sum: each thread sums its strided
// share of the row in order, the 32 lanes of a warp combine by butterfly
// shuffles, and warp 0's lanes combine the per-warp partials the same way.
// The tree is fixed by the block size (256), so a result never depends on
// scheduling: the same input gives the same bits on every run (the order
// differs from the CPU loops', so the values agree to rounding, not bitwise).
// The helpers sit behind an include guard, so every kernel body can carry them
// and a module of several kernels still defines them once.
const char* kBlockHelpers = R"CUDA(
#ifndef KILN_BLOCK_HELPERS
#define KILN_BLOCK_HELPERS
namespace kiln {
// The sum of v over the block (blockDim.x a multiple of 32, at most 1024); every thread gets it.
// `shared` holds 32 values; the call begins with a barrier, so a block may call it back to back.
template <typename A> __device__ A block_sum(A v, A* shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < (int)(blockDim.x >> 5) ? shared[lane] : A(0);
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
}  // namespace kiln
#endif
)CUDA";

// One block per row of a contiguous [rows, cols] input. rms != 0: the mean is
// fixed at 0 and mean_out is null. See Note [Norm statistics] (cpu/nn/NormOps.cpp).
const char* kNormForward = R"CUDA(
extern "C" __global__ void $NAME(const $T* x, const $T* w, const $T* b, $T* y, $T* mean_out, $T* rstd_out,
                                 long long rows, long long cols, double eps, int rms) {
  using T = $T;
  using A = kiln::acc_t<T>;
  constexpr int V = kiln::VecWidth<sizeof(T)>::value;  // Note [Vector loads in the eager templates]
  __shared__ A shared[32];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    const kiln::RowSpan span = kiln::row_span<T, V>(cols, xr, yr, w, b);
    A mean = A(0);
    if (!rms) {
      A s = A(0);
      kiln::row_columns<V>(span, cols, [&](long long c, auto width) {
        constexpr int W = decltype(width)::value;
        T xv[W];
        kiln::load_row<T, W>(xr + c, xv);
        for (int e = 0; e < W; ++e) s += kiln::convert<A>(xv[e]);
      });
      mean = kiln::block_sum(s, shared) / A(cols);
    }
    A q = A(0);
    kiln::row_columns<V>(span, cols, [&](long long c, auto width) {
      constexpr int W = decltype(width)::value;
      T xv[W];
      kiln::load_row<T, W>(xr + c, xv);
      for (int e = 0; e < W; ++e) {
        const A d = kiln::convert<A>(xv[e]) - mean;
        q += d * d;
      }
    });
    const A var = cols > 0 ? kiln::block_sum(q, shared) / A(cols) : A(0);
    const A rstd = A(1) / sqrt(var + A(eps));
    if (threadIdx.x == 0) {
      if (mean_out) mean_out[r] = kiln::convert<T>(mean);
      rstd_out[r] = kiln::convert<T>(rstd);
    }
    kiln::row_columns<V>(span, cols, [&](long long c, auto width) {
      constexpr int W = decltype(width)::value;
      T xv[W];
      T wv[W];
      T bv[W];
      T yv[W];
      kiln::load_row<T, W>(xr + c, xv);
      if (w) kiln::load_row<T, W>(w + c, wv);
      if (b) kiln::load_row<T, W>(b + c, bv);
      for (int e = 0; e < W; ++e) {
        A v = (kiln::convert<A>(xv[e]) - mean) * rstd;
        if (w) v = v * kiln::convert<A>(wv[e]);
        if (b) v = v + kiln::convert<A>(bv[e]);
        yv[e] = kiln::convert<T>(v);
      }
      kiln::store_row<T, W>(yr + c, yv);
    });
  }
}
)CUDA";

// dx = rstd * (g*w - mean(g*w) - xhat * mean(g*w * xhat)); the mean(g*w) term only with a mean (layer_norm).
const char* kNormBackwardInput = R"CUDA(
extern "C" __global__ void $NAME(const $T* g, const $T* x, const $T* mean, const $T* rstd, const $T* w, $T* dx,
                                 long long rows, long long cols) {
  using T = $T;
  using A = kiln::acc_t<T>;
  constexpr int V = kiln::VecWidth<sizeof(T)>::value;  // Note [Vector loads in the eager templates]
  __shared__ A shared[32];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* gr = g + r * cols;
    const T* xr = x + r * cols;
    T* dr = dx + r * cols;
    const kiln::RowSpan span = kiln::row_span<T, V>(cols, gr, xr, dr, w);
    const A mu = mean ? kiln::convert<A>(mean[r]) : A(0);
    const A inv = kiln::convert<A>(rstd[r]);
    A s1 = A(0);
    A s2 = A(0);
    kiln::row_columns<V>(span, cols, [&](long long c, auto width) {
      constexpr int W = decltype(width)::value;
      T gv[W];
      T xv[W];
      T wv[W];
      kiln::load_row<T, W>(gr + c, gv);
      kiln::load_row<T, W>(xr + c, xv);
      if (w) kiln::load_row<T, W>(w + c, wv);
      for (int e = 0; e < W; ++e) {
        const A gw = w ? kiln::convert<A>(gv[e]) * kiln::convert<A>(wv[e]) : kiln::convert<A>(gv[e]);
        s1 += gw;
        s2 += gw * ((kiln::convert<A>(xv[e]) - mu) * inv);
      }
    });
    const A a = mean ? kiln::block_sum(s1, shared) / A(cols) : A(0);
    const A cc = kiln::block_sum(s2, shared) / A(cols);
    kiln::row_columns<V>(span, cols, [&](long long c, auto width) {
      constexpr int W = decltype(width)::value;
      T gv[W];
      T xv[W];
      T wv[W];
      T dv[W];
      kiln::load_row<T, W>(gr + c, gv);
      kiln::load_row<T, W>(xr + c, xv);
      if (w) kiln::load_row<T, W>(w + c, wv);
      for (int e = 0; e < W; ++e) {
        const A gw = w ? kiln::convert<A>(gv[e]) * kiln::convert<A>(wv[e]) : kiln::convert<A>(gv[e]);
        const A xhat = (kiln::convert<A>(xv[e]) - mu) * inv;
        dv[e] = kiln::convert<T>(inv * (gw - a - xhat * cc));
      }
      kiln::store_row<T, W>(dr + c, dv);
    });
  }
}
)CUDA";

// out[c] = sum over rows of g * xhat (x given: the weight's gradient) or of g (the bias's).
// A block covers 32 columns with 8 row slices (threadIdx.x = 32 * slice + column); each slice sums
// its rows in order and the slices combine in slice order, so the result is deterministic.
const char* kNormBackwardParams = R"CUDA(
extern "C" __global__ void $NAME(const $T* g, const $T* x, const $T* mean, const $T* rstd, $T* out,
                                 long long rows, long long cols) {
  using T = $T;
  using A = kiln::acc_t<T>;
  __shared__ A part[8][32];
  const int lane = threadIdx.x & 31;
  const int slice = threadIdx.x >> 5;
  const int slices = blockDim.x >> 5;
  for (long long c0 = (long long)blockIdx.x * 32; c0 < cols; c0 += (long long)gridDim.x * 32) {
    const long long c = c0 + lane;
    A acc = A(0);
    if (c < cols) {
      for (long long r = slice; r < rows; r += slices) {
        const A gv = kiln::convert<A>(g[r * cols + c]);
        if (x) {
          const A mu = mean ? kiln::convert<A>(mean[r]) : A(0);
          acc += gv * ((kiln::convert<A>(x[r * cols + c]) - mu) * kiln::convert<A>(rstd[r]));
        } else {
          acc += gv;
        }
      }
    }
    part[slice][lane] = acc;
    __syncthreads();
    if (slice == 0 && c < cols) {
      A total = A(0);
      for (int s = 0; s < slices; ++s) total += part[s][lane];
      out[c] = kiln::convert<T>(total);
    }
    __syncthreads();
  }
}
)CUDA";

// Backward of softmax (dx = y * (g - sum(g*y))) or log_softmax (dx = g - exp(y) * sum(g)) over
// contiguous [rows, cols] rows. See Note [Softmax computes in float] (cpu/nn/SoftmaxOps.cpp).
const char* kSoftmaxBackward = R"CUDA(
extern "C" __global__ void $NAME(const $T* g, const $T* y, $T* dx, long long rows, long long cols) {
  using T = $T;
  using A = kiln::acc_t<T>;
  constexpr int V = kiln::VecWidth<sizeof(T)>::value;  // Note [Vector loads in the eager templates]
  __shared__ A shared[32];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* gr = g + r * cols;
    const T* yr = y + r * cols;
    T* dr = dx + r * cols;
    const kiln::RowSpan span = kiln::row_span<T, V>(cols, gr, yr, dr);
    A s = A(0);
    kiln::row_columns<V>(span, cols, [&](long long c, auto width) {
      constexpr int W = decltype(width)::value;
      T gw[W];
      T yw[W];
      kiln::load_row<T, W>(gr + c, gw);
      kiln::load_row<T, W>(yr + c, yw);
      for (int e = 0; e < W; ++e) {
        const A gv = kiln::convert<A>(gw[e]);
        const A yv = kiln::convert<A>(yw[e]);
        s += $PARTIAL;
      }
    });
    s = kiln::block_sum(s, shared);
    kiln::row_columns<V>(span, cols, [&](long long c, auto width) {
      constexpr int W = decltype(width)::value;
      T gw[W];
      T yw[W];
      T dw[W];
      kiln::load_row<T, W>(gr + c, gw);
      kiln::load_row<T, W>(yr + c, yw);
      for (int e = 0; e < W; ++e) {
        const A gv = kiln::convert<A>(gw[e]);
        const A yv = kiln::convert<A>(yw[e]);
        dw[e] = kiln::convert<T>($RESULT);
      }
      kiln::store_row<T, W>(dr + c, dw);
    });
  }
}
)CUDA";

// nll_loss_forward on [batch, classes] log-probabilities: one block. per_element: out[i] is
// sample i's loss; else out[0] is the sum (reduction 2, or 0 without a batch dim) or the mean
// (reduction 1: the sum over the sum of the counted weights). total_weight[0] is that weight
// sum (0 for reduction 0). A target outside [0, classes) that is not ignore_index is stored in
// bad[1] with bad[0] = 1 and read nowhere (Note [nll_loss reads only valid targets]).
const char* kNllForward = R"CUDA(
extern "C" __global__ void $NAME(const $T* x, const $I* target, const $T* weight, $T* out, $T* total_weight,
                                 long long batch, long long classes, long long ignore_index, int reduction,
                                 int per_element, long long* bad) {
  using T = $T;
  using A = kiln::acc_t<T>;
  __shared__ A shared[32];
  A loss_sum = A(0);
  A weight_sum = A(0);
  for (long long i = threadIdx.x; i < batch; i += blockDim.x) {
    const long long t = (long long)target[i];
    A loss = A(0);
    if (t != ignore_index) {
      if (t < 0 || t >= classes) {
        bad[1] = t;
        atomicExch(reinterpret_cast<unsigned long long*>(bad), 1ull);
      } else {
        const A wt = weight ? kiln::convert<A>(weight[t]) : A(1);
        loss = -kiln::convert<A>(x[i * classes + t]) * wt;
        weight_sum += wt;
      }
    }
    if (per_element) out[i] = kiln::convert<T>(loss);
    loss_sum += loss;
  }
  loss_sum = kiln::block_sum(loss_sum, shared);
  weight_sum = kiln::block_sum(weight_sum, shared);
  if (threadIdx.x == 0) {
    if (!per_element) out[0] = kiln::convert<T>(reduction == 1 ? loss_sum / weight_sum : loss_sum);
    total_weight[0] = kiln::convert<T>(reduction == 0 ? A(0) : weight_sum);
  }
}
)CUDA";

// nll_loss_backward into a zeroed [batch, classes] grad_input: -weight[t] * g, g per sample
// (per_element) or g[0] (divided by total_weight[0] for the mean).
const char* kNllBackward = R"CUDA(
extern "C" __global__ void $NAME(const $T* g, const $I* target, const $T* weight, const $T* total_weight,
                                 $T* grad_input, long long batch, long long classes, long long ignore_index,
                                 int reduction, int per_element, long long* bad) {
  using T = $T;
  using A = kiln::acc_t<T>;
  A scale = A(0);
  if (!per_element) {
    scale = kiln::convert<A>(g[0]);
    if (reduction == 1) scale = scale / kiln::convert<A>(total_weight[0]);
  }
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < batch;
       i += (long long)gridDim.x * blockDim.x) {
    const long long t = (long long)target[i];
    if (t == ignore_index) continue;
    if (t < 0 || t >= classes) {
      bad[1] = t;
      atomicExch(reinterpret_cast<unsigned long long*>(bad), 1ull);
      continue;
    }
    const A wt = weight ? kiln::convert<A>(weight[t]) : A(1);
    const A gv = per_element ? kiln::convert<A>(g[i]) : scale;
    grad_input[i * classes + t] = kiln::convert<T>(-wt * gv);
  }
}
)CUDA";

// Note [Deterministic embedding backward]
// ---------------------------------------
// The embedding backward sums the gradient rows of equal indices. Atomic adds
// would make float sums depend on scheduling, so kiln sorts instead: the host
// reads the indices (one device-to-host copy, which also checks them), sorts
// the positions by index (stably, so each index keeps its occurrence order)
// and hands the kernel segments: segment s is weight row rows[s], fed by the
// gradient rows order[starts[s]] ... order[starts[s + 1] - 1]. One block per
// segment, a thread per column, each column summed in occurrence order: the
// CPU kernel's order, so the sums match the CPU's up to contraction (FMA).
// padding_idx has no segment; scale_grad_by_freq scales by 1 / segment length.
const char* kEmbeddingBackward = R"CUDA(
extern "C" __global__ void $NAME(const $T* g, const long long* order, const long long* starts, const long long* rows,
                                 $T* grad_weight, long long segments, long long dim, int scale_by_freq) {
  using T = $T;
  using A = kiln::acc_t<T>;
  for (long long s = blockIdx.x; s < segments; s += gridDim.x) {
    const long long begin = starts[s];
    const long long end = starts[s + 1];
    const A scale = scale_by_freq ? A(1) / A(end - begin) : A(1);
    T* dst = grad_weight + rows[s] * dim;
    for (long long c = threadIdx.x; c < dim; c += blockDim.x) {
      A acc = A(0);
      for (long long p = begin; p < end; ++p) acc += kiln::convert<A>(g[order[p] * dim + c]) * scale;
      dst[c] = kiln::convert<T>(acc);
    }
  }
}
)CUDA";

std::string norm_name(const char* what, DType dtype) { return std::string("kiln_") + what + "_" + template_tag(dtype); }

KernelInstance with_helpers(const std::string& name, const char* text, const std::string& type) {
  return {name, std::string(kBlockHelpers) + fill_template(text, {{"NAME", name}, {"T", type}})};
}

void check_floating(DType dtype, const char* what) {
  KILN_CHECK(category(dtype) == DTypeCategory::Floating, "no CUDA ", what, " template for ", scalar_type_name(dtype));
}

}  // namespace

KernelInstance norm_forward_kernel(DType dtype) {
  check_floating(dtype, "norm");
  const std::string name = norm_name("norm_forward", dtype);
  return with_helpers(name, kNormForward, template_cuda_type(dtype));
}

KernelInstance norm_backward_input_kernel(DType dtype) {
  check_floating(dtype, "norm backward");
  const std::string name = norm_name("norm_backward_input", dtype);
  return with_helpers(name, kNormBackwardInput, template_cuda_type(dtype));
}

KernelInstance norm_backward_params_kernel(DType dtype) {
  check_floating(dtype, "norm backward");
  const std::string name = norm_name("norm_backward_params", dtype);
  return {name, fill_template(kNormBackwardParams, {{"NAME", name}, {"T", template_cuda_type(dtype)}})};
}

KernelInstance softmax_backward_kernel(bool log, DType dtype) {
  check_floating(dtype, "softmax backward");
  const std::string name = norm_name(log ? "log_softmax_backward" : "softmax_backward", dtype);
  const std::string partial = log ? "gv" : "gv * yv";
  const std::string result = log ? "gv - exp(yv) * s" : "yv * (gv - s)";
  return {name, std::string(kBlockHelpers) + fill_template(kSoftmaxBackward, {{"NAME", name},
                                                                              {"T", template_cuda_type(dtype)},
                                                                              {"PARTIAL", partial},
                                                                              {"RESULT", result}})};
}

KernelInstance nll_loss_kernel(bool backward, DType dtype, DType target) {
  check_floating(dtype, "nll_loss");
  KILN_CHECK(target == DType::Int64 || target == DType::UInt8, "no CUDA nll_loss template for targets of ",
             scalar_type_name(target));
  const std::string name = std::string(backward ? "kiln_nll_loss_backward_" : "kiln_nll_loss_forward_") +
                           template_tag(dtype) + "_" + template_tag(target);
  return {name, std::string(kBlockHelpers) + fill_template(backward ? kNllBackward : kNllForward,
                                                           {{"NAME", name},
                                                            {"T", template_cuda_type(dtype)},
                                                            {"I", template_cuda_type(target)}})};
}

KernelInstance embedding_backward_kernel(DType dtype) {
  check_floating(dtype, "embedding backward");
  const std::string name = norm_name("embedding_backward", dtype);
  return {name, fill_template(kEmbeddingBackward, {{"NAME", name}, {"T", template_cuda_type(dtype)}})};
}

void append_nn_kernel_instances(std::vector<std::pair<std::string, std::vector<KernelInstance>>>& families) {
  std::vector<KernelInstance> norm;
  std::vector<KernelInstance> softmax_backward;
  std::vector<KernelInstance> loss;
  std::vector<KernelInstance> embedding;
  for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    norm.push_back(norm_forward_kernel(d));
    norm.push_back(norm_backward_input_kernel(d));
    norm.push_back(norm_backward_params_kernel(d));
    softmax_backward.push_back(softmax_backward_kernel(false, d));
    softmax_backward.push_back(softmax_backward_kernel(true, d));
    for (DType t : {DType::Int64, DType::UInt8}) {
      loss.push_back(nll_loss_kernel(false, d, t));
      loss.push_back(nll_loss_kernel(true, d, t));
    }
    embedding.push_back(embedding_backward_kernel(d));
  }
  families.emplace_back("norm", std::move(norm));
  families.emplace_back("softmax_backward", std::move(softmax_backward));
  families.emplace_back("nll_loss", std::move(loss));
  families.emplace_back("embedding_backward", std::move(embedding));
}

}  // namespace kiln::native::cuda_kernels
