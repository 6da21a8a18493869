// Pooling loops, compiled per CPU capability: max (with indices), average and
// adaptive average, forward and backward. Parallel over planes; each plane of
// a result is written by one task, in one order. See Note [Pooling windows]
// (Pool.cpp).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <type_traits>

#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/PoolStubs.h"
#include "eager/kernels/cpu/kernels/NnVec.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

int64_t grain_for(int64_t per_plane) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(per_plane, 1)); }

/// A window's rows or columns [begin, end) in the input, and the divisor it contributes.
struct Span {
  int64_t begin;
  int64_t end;
  int64_t padded;  // the length counted by count_include_pad
};

/// avg_pool2d's window along one dim: starts at o * stride - pad, kernel long, clipped to the input.
Span avg_span(int64_t o, int64_t stride, int64_t pad, int64_t kernel, int64_t size) {
  const int64_t start = o * stride - pad;
  const int64_t stop = std::min(start + kernel, size + pad);
  return {std::max<int64_t>(start, 0), std::min(stop, size), stop - start};
}

/// adaptive_avg_pool2d's window: [floor(o * size / out), ceil((o + 1) * size / out)).
Span adaptive_span(int64_t o, int64_t out, int64_t size) {
  const int64_t begin = o * size / out;
  const int64_t end = ((o + 1) * size + out - 1) / out;
  return {begin, end, end - begin};
}

/// The row and column windows of output (oh, ow), and the divisor of its average.
struct AvgWindow {
  Span h, w;
  int64_t divisor;
};

AvgWindow avg_window(const PoolGeometry& g, int64_t oh, int64_t ow, bool adaptive) {
  if (adaptive) {
    const Span h = adaptive_span(oh, g.out_h, g.in_h), w = adaptive_span(ow, g.out_w, g.in_w);
    return {h, w, h.padded * w.padded};
  }
  const Span h = avg_span(oh, g.stride_h, g.pad_h, g.kernel_h, g.in_h);
  const Span w = avg_span(ow, g.stride_w, g.pad_w, g.kernel_w, g.in_w);
  const int64_t divisor = g.divisor != 0         ? g.divisor
                          : g.count_include_pad ? h.padded * w.padded
                                                : (h.end - h.begin) * (w.end - w.begin);
  return {h, w, divisor};
}

/// max_pool2d's first tap along one dim (stepping over the padding by dilation) and its end.
Span max_span(int64_t o, int64_t stride, int64_t pad, int64_t kernel, int64_t dilation, int64_t size) {
  int64_t begin = o * stride - pad;
  const int64_t end = std::min(begin + (kernel - 1) * dilation + 1, size);
  while (begin < 0) begin += dilation;
  return {begin, end, 0};
}

template <typename A>
bool is_nan(A v) {
  if constexpr (std::is_floating_point_v<A>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

template <typename T>
void max_pool_typed(const Tensor& in, const Tensor& out, const Tensor& indices, const PoolGeometry& g) {
  using A = opmath_t<T>;
  const T* x = in.data_ptr<T>();
  T* y = out.data_ptr<T>();
  int64_t* ind = indices.defined() ? indices.data_ptr<int64_t>() : nullptr;  // none: max_pool2d without grad
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  parallel_for(0, g.planes, grain_for(out_plane * g.kernel_h * g.kernel_w), [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const T* src = x + p * in_plane;
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        const Span h = max_span(oh, g.stride_h, g.pad_h, g.kernel_h, g.dilation_h, g.in_h);
        for (int64_t ow = 0; ow < g.out_w; ++ow) {
          const Span w = max_span(ow, g.stride_w, g.pad_w, g.kernel_w, g.dilation_w, g.in_w);
          A best = std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity()
                                                        : std::numeric_limits<A>::lowest();
          int64_t best_at = h.begin * g.in_w + w.begin;
          for (int64_t ih = h.begin; ih < h.end; ih += g.dilation_h) {
            for (int64_t iw = w.begin; iw < w.end; iw += g.dilation_w) {
              const A v = static_cast<A>(src[ih * g.in_w + iw]);
              if (v > best || is_nan(v)) {
                best = v;
                best_at = ih * g.in_w + iw;
              }
            }
          }
          y[p * out_plane + oh * g.out_w + ow] = static_cast<T>(best);
          if (ind != nullptr) ind[p * out_plane + oh * g.out_w + ow] = best_at;
        }
      }
    }
  });
}

template <typename T>
bool max_pool_backward_typed(const Tensor& grad_out, const Tensor& indices, const Tensor& grad_in,
                             const PoolGeometry& g) {
  using A = opmath_t<T>;
  const T* gy = grad_out.data_ptr<T>();
  const int64_t* ind = indices.data_ptr<int64_t>();
  T* gx = grad_in.data_ptr<T>();
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  std::atomic<bool> in_range{true};
  parallel_for(0, g.planes, grain_for(in_plane + out_plane), [&](int64_t begin, int64_t end) {
    std::vector<A> acc(static_cast<size_t>(in_plane));
    for (int64_t p = begin; p < end; ++p) {
      std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t o = 0; o < out_plane; ++o) {
        const int64_t at = ind[p * out_plane + o];
        if (at < 0 || at >= in_plane) {
          in_range.store(false, std::memory_order_relaxed);
          continue;
        }
        acc[static_cast<size_t>(at)] += static_cast<A>(gy[p * out_plane + o]);
      }
      for (int64_t i = 0; i < in_plane; ++i) gx[p * in_plane + i] = static_cast<T>(acc[static_cast<size_t>(i)]);
    }
  });
  return in_range.load();
}

template <typename T>
void avg_pool_typed(const Tensor& in, const Tensor& out, const PoolGeometry& g, bool adaptive) {
  using A = opmath_t<T>;
  const T* x = in.data_ptr<T>();
  T* y = out.data_ptr<T>();
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  const int64_t taps = adaptive ? std::max<int64_t>(1, in_plane / std::max<int64_t>(out_plane, 1))
                                : g.kernel_h * g.kernel_w;
  parallel_for(0, g.planes, grain_for(out_plane * taps), [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const T* src = x + p * in_plane;
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        for (int64_t ow = 0; ow < g.out_w; ++ow) {
          const AvgWindow win = avg_window(g, oh, ow, adaptive);
          A sum = 0;
          for (int64_t ih = win.h.begin; ih < win.h.end; ++ih) {
            for (int64_t iw = win.w.begin; iw < win.w.end; ++iw) sum += static_cast<A>(src[ih * g.in_w + iw]);
          }
          const bool empty = win.h.begin >= win.h.end || win.w.begin >= win.w.end;
          y[p * out_plane + oh * g.out_w + ow] = static_cast<T>(empty ? A(0) : sum / static_cast<A>(win.divisor));
        }
      }
    }
  });
}

template <typename T>
void avg_pool_backward_typed(const Tensor& grad_out, const Tensor& grad_in, const PoolGeometry& g, bool adaptive) {
  using A = opmath_t<T>;
  const T* gy = grad_out.data_ptr<T>();
  T* gx = grad_in.data_ptr<T>();
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  parallel_for(0, g.planes, grain_for(in_plane + out_plane * g.kernel_h * g.kernel_w), [&](int64_t begin,
                                                                                            int64_t end) {
    std::vector<A> acc(static_cast<size_t>(in_plane));
    for (int64_t p = begin; p < end; ++p) {
      std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        for (int64_t ow = 0; ow < g.out_w; ++ow) {
          const AvgWindow win = avg_window(g, oh, ow, adaptive);
          if (win.h.begin >= win.h.end || win.w.begin >= win.w.end) continue;
          const A share = static_cast<A>(gy[p * out_plane + oh * g.out_w + ow]) / static_cast<A>(win.divisor);
          for (int64_t ih = win.h.begin; ih < win.h.end; ++ih) {
            for (int64_t iw = win.w.begin; iw < win.w.end; ++iw) acc[static_cast<size_t>(ih * g.in_w + iw)] += share;
          }
        }
      }
      for (int64_t i = 0; i < in_plane; ++i) gx[p * in_plane + i] = static_cast<T>(acc[static_cast<size_t>(i)]);
    }
  });
}

void max_pool_kernel(const Tensor& in, const Tensor& out, const Tensor& indices, const PoolGeometry& g) {
  switch (in.dtype()) {  // integers too, as PyTorch (the caller rejects bool)
    case DType::Int8: return max_pool_typed<int8_t>(in, out, indices, g);
    case DType::Int16: return max_pool_typed<int16_t>(in, out, indices, g);
    case DType::Int32: return max_pool_typed<int32_t>(in, out, indices, g);
    case DType::Int64: return max_pool_typed<int64_t>(in, out, indices, g);
    case DType::UInt8: return max_pool_typed<uint8_t>(in, out, indices, g);
    default: visit_floating(in.dtype(), [&](auto tag) { max_pool_typed<decltype(tag)>(in, out, indices, g); });
  }
}

bool max_pool_backward_kernel(const Tensor& grad_out, const Tensor& indices, const Tensor& grad_in,
                              const PoolGeometry& g) {
  bool ok = true;
  visit_floating(grad_in.dtype(),
                 [&](auto tag) { ok = max_pool_backward_typed<decltype(tag)>(grad_out, indices, grad_in, g); });
  return ok;
}

void avg_pool_kernel(const Tensor& in, const Tensor& out, const PoolGeometry& g, bool adaptive) {
  // int64 too (avg_pool2d's forward, as PyTorch): an int64 sum divided with truncation.
  if (in.dtype() == DType::Int64) return avg_pool_typed<int64_t>(in, out, g, adaptive);
  visit_floating(in.dtype(), [&](auto tag) { avg_pool_typed<decltype(tag)>(in, out, g, adaptive); });
}

void avg_pool_backward_kernel(const Tensor& grad_out, const Tensor& grad_in, const PoolGeometry& g, bool adaptive) {
  visit_floating(grad_in.dtype(),
                 [&](auto tag) { avg_pool_backward_typed<decltype(tag)>(grad_out, grad_in, g, adaptive); });
}

}  // namespace

KILN_REGISTER_DISPATCH(max_pool2d_stub, &max_pool_kernel);
KILN_REGISTER_DISPATCH(max_pool2d_backward_stub, &max_pool_backward_kernel);
KILN_REGISTER_DISPATCH(avg_pool2d_stub, &avg_pool_kernel);
KILN_REGISTER_DISPATCH(avg_pool2d_backward_stub, &avg_pool_backward_kernel);

}  // namespace KILN_CPU_NS
}  // namespace kiln::native
