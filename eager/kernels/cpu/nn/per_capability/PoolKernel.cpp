// Pooling loops, compiled per CPU capability: max (with indices), average and
// adaptive average, forward and backward. Parallel over planes; each plane of
// a result is written by one task, in one order. See Note [Pooling windows]
// (Pool.cpp).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/nn/PoolStubs.h"
#include "eager/kernels/cpu/nn/per_capability/NnVec.h"

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

// Note [max_pool2d by output rows]
// --------------------------------
// Walking each output's window with a branch per tap ("larger or NaN?") ran at
// ~18 ns an output on random data ([64, 32, 28, 28], 2x2): the branch is a coin
// toss. For the columns whose window lies inside the row, the loop instead goes
// tap by tap over a whole output row, keeping each output's best value and
// index in a row buffer, and takes a tap with selects: 7.3 -> 4.3 ms on one
// thread (torch 7.2). The taps are visited in PyTorch's order (kernel rows,
// then kernel columns) with its rule (a later tap wins when larger or NaN), so
// values and indices, ties included, are unchanged. Edge columns, where the
// window is clipped by padding, keep the window-by-window loop.

/// One tap of the inner columns of an output row: best[ow] takes tap[ow * stride]
/// when larger or NaN (PyTorch's rule), and best_at its index. Locals and
/// restrict pointers, so the loop has no loads to redo and vectorises.
template <typename T, typename A>
void select_row_max(const T* __restrict tap, A* __restrict best, int64_t* __restrict best_at, int64_t offset,
                    int64_t lo, int64_t hi, int64_t stride) {
  if (stride == 1) {
    for (int64_t ow = lo; ow < hi; ++ow) {
      const A v = static_cast<A>(tap[ow]);
      const bool take = v > best[ow] || v != v;
      best[ow] = take ? v : best[ow];
      best_at[ow] = take ? offset + ow : best_at[ow];
    }
    return;
  }
  if (stride == 2) {
    for (int64_t ow = lo; ow < hi; ++ow) {
      const A v = static_cast<A>(tap[2 * ow]);
      const bool take = v > best[ow] || v != v;
      best[ow] = take ? v : best[ow];
      best_at[ow] = take ? offset + 2 * ow : best_at[ow];
    }
    return;
  }
  for (int64_t ow = lo; ow < hi; ++ow) {
    const A v = static_cast<A>(tap[ow * stride]);
    const bool take = v > best[ow] || v != v;
    best[ow] = take ? v : best[ow];
    best_at[ow] = take ? offset + ow * stride : best_at[ow];
  }
}

template <typename T>
void max_pool_typed(const Tensor& in, const Tensor& out, const Tensor& indices, const PoolGeometry& g) {
  using A = opmath_t<T>;
  const T* x = in.data_ptr<T>();
  T* y = out.data_ptr<T>();
  int64_t* ind = indices.defined() ? indices.data_ptr<int64_t>() : nullptr;  // none: max_pool2d without grad
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  const int64_t in_w = g.in_w, out_h = g.out_h, out_w = g.out_w, dil_h = g.dilation_h, dil_w = g.dilation_w;
  // The column windows are the same on every row: found once, not per output.
  std::vector<Span> columns(static_cast<size_t>(out_w));
  for (int64_t ow = 0; ow < out_w; ++ow) {
    columns[static_cast<size_t>(ow)] = max_span(ow, g.stride_w, g.pad_w, g.kernel_w, dil_w, in_w);
  }
  const A lowest = std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity()
                                                        : std::numeric_limits<A>::lowest();
  // Columns whose window lies wholly inside the row: there the taps of a whole
  // output row are walked tap by tap (Note [max_pool2d by output rows]).
  const int64_t stride_w = g.stride_w, pad_w = g.pad_w, kernel_w = g.kernel_w;
  int64_t inner_lo = 0, inner_hi = out_w;
  while (inner_lo < out_w && inner_lo * stride_w - pad_w < 0) ++inner_lo;
  while (inner_hi > inner_lo && (inner_hi - 1) * stride_w - pad_w + (kernel_w - 1) * dil_w >= in_w) --inner_hi;
  parallel_for(0, g.planes, grain_for(out_plane * g.kernel_h * g.kernel_w), [&](int64_t begin, int64_t end) {
    std::vector<A> best(static_cast<size_t>(out_w));
    std::vector<int64_t> best_at(static_cast<size_t>(out_w));
    for (int64_t p = begin; p < end; ++p) {
      const T* src = x + p * in_plane;
      T* y_plane = y + p * out_plane;
      int64_t* ind_plane = ind != nullptr ? ind + p * out_plane : nullptr;
      for (int64_t oh = 0; oh < out_h; ++oh) {
        const Span h = max_span(oh, g.stride_h, g.pad_h, g.kernel_h, dil_h, g.in_h);
        // Edge columns, window by window.
        const auto edge_column = [&](int64_t ow) {
          const Span w = columns[static_cast<size_t>(ow)];
          A b = lowest;
          int64_t at = h.begin * in_w + w.begin;
          for (int64_t ih = h.begin; ih < h.end; ih += dil_h) {
            const T* row = src + ih * in_w;
            for (int64_t iw = w.begin; iw < w.end; iw += dil_w) {
              const A v = static_cast<A>(row[iw]);
              if (v > b || is_nan(v)) {
                b = v;
                at = ih * in_w + iw;
              }
            }
          }
          best[static_cast<size_t>(ow)] = b;
          best_at[static_cast<size_t>(ow)] = at;
        };
        for (int64_t ow = 0; ow < inner_lo; ++ow) edge_column(ow);
        for (int64_t ow = inner_hi; ow < out_w; ++ow) edge_column(ow);  // inner_hi >= inner_lo
        // Inner columns, tap by tap over the whole row: selects, no branches.
        for (int64_t ow = inner_lo; ow < inner_hi; ++ow) {
          best[static_cast<size_t>(ow)] = lowest;
          best_at[static_cast<size_t>(ow)] = h.begin * in_w + ow * stride_w - pad_w;
        }
        for (int64_t ih = h.begin; ih < h.end; ih += dil_h) {
          for (int64_t kw = 0; kw < kernel_w; ++kw) {
            const int64_t offset = ih * in_w + kw * dil_w - pad_w;
            select_row_max(src + offset, best.data(), best_at.data(), offset, inner_lo, inner_hi, stride_w);
          }
        }
        for (int64_t ow = 0; ow < out_w; ++ow) y_plane[oh * out_w + ow] = static_cast<T>(best[static_cast<size_t>(ow)]);
        if (ind_plane != nullptr) {
          std::copy(best_at.begin(), best_at.end(), ind_plane + oh * out_w);
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
