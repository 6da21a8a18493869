// layer_norm / rms_norm loops and their backward, compiled per CPU capability:
// rows of N elements on Vec, float16/bfloat16 widened to float.
// See Note [Norm statistics] (NormOps.cpp).
#include <algorithm>
#include <cmath>
#include <vector>

#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/nn/NormStubs.h"
#include "eager/kernels/cpu/nn/per_capability/NnVec.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

template <typename A>
using V = Vec<A>;

/// fn(Vec x_chunk..., count) over [0, n) in full vectors then one partial one.
template <typename A, typename Fn>
void for_chunks(int64_t n, const Fn& fn) {
  constexpr int64_t W = V<A>::size;
  int64_t i = 0;
  for (; i + W <= n; i += W) fn(i, W);
  if (i < n) fn(i, n - i);
}


/// A weight/bias vector as A (converted once), or null.
template <typename A, typename T>
const A* params_as(const Tensor* t, int64_t n, std::vector<A>& buffer) {
  return t ? as_compute_type<A>(t->data_ptr<T>(), n, buffer) : nullptr;
}

template <typename T>
void norm_forward_typed(const Tensor& x, const Tensor* weight, const Tensor* bias, const Tensor& y,
                        const Tensor* mean, const Tensor& rstd, NormRows s, double eps) {
  using A = opmath_t<T>;
  const int64_t n = s.cols;
  std::vector<A> wbuf, bbuf;
  const A* w_all = params_as<A, T>(weight, n, wbuf);
  const A* b_all = params_as<A, T>(bias, n, bbuf);
  const T* xp = x.data_ptr<T>();
  T* yp = y.data_ptr<T>();
  T* mp = mean ? mean->data_ptr<T>() : nullptr;
  T* rp = rstd.data_ptr<T>();
  const bool centered = mean != nullptr;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n, 1));
  parallel_for(0, s.rows, grain, [&](int64_t begin, int64_t end) {
    // Local copies: the stores below are memcpys, which may alias anything, so
    // pointers read through the closure would be reloaded every vector.
    const A* const w = w_all;
    const A* const b = b_all;
    std::vector<A> in_buffer, out_buffer;
    for (int64_t r = begin; r < end; ++r) {
      const A* row = as_compute_type<A>(xp + r * n, n, in_buffer);
      A* out = compute_target<A>(yp + r * n, n, out_buffer);
      A mu = 0;
      if (centered && n > 0) {
        mu = hsum(sum_chunks<A>(n, [&](int64_t i, int64_t c) { return load(row + i, c); })) / A(n);
      }
      const V<A> vmu = V<A>::splat(mu);
      const V<A> squares = sum_chunks<A>(n, [&](int64_t i, int64_t c) {
        // a partial chunk pads with mu, so its padding lanes add (mu - mu)^2 = 0
        const V<A> d = (c == V<A>::size ? V<A>::loadu(row + i) : load_padded(row + i, c, mu)) - vmu;
        return d * d;
      });
      const A var = n > 0 ? hsum(squares) / A(n) : A(0);
      const A inv = A(1) / std::sqrt(var + static_cast<A>(eps));
      const V<A> vinv = V<A>::splat(inv);
      for_chunks<A>(n, [&](int64_t i, int64_t c) {
        V<A> v = (load(row + i, c) - vmu) * vinv;
        if (w) v = v * load(w + i, c);
        if (b) v = v + load(b + i, c);
        store(v, out + i, c);
      });
      finish_target(out, yp + r * n, n);
      if (mp) mp[r] = static_cast<T>(mu);
      rp[r] = static_cast<T>(inv);
    }
  });
}

template <typename T>
void norm_backward_input_typed(const Tensor& grad, const Tensor& x, const Tensor* mean, const Tensor& rstd,
                               const Tensor* weight, const Tensor& dx, NormRows s) {
  using A = opmath_t<T>;
  const int64_t n = s.cols;
  std::vector<A> wbuf;
  const A* w_all = params_as<A, T>(weight, n, wbuf);
  const T* gp = grad.data_ptr<T>();
  const T* xp = x.data_ptr<T>();
  const T* mp = mean ? mean->data_ptr<T>() : nullptr;
  const T* rp = rstd.data_ptr<T>();
  T* dp = dx.data_ptr<T>();
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n, 1));
  parallel_for(0, s.rows, grain, [&](int64_t begin, int64_t end) {
    const A* const w = w_all;  // a local copy, as in norm_forward_typed
    std::vector<A> gbuf, xbuf, obuf;
    for (int64_t r = begin; r < end; ++r) {
      const A* g = as_compute_type<A>(gp + r * n, n, gbuf);
      const A* row = as_compute_type<A>(xp + r * n, n, xbuf);
      A* out = compute_target<A>(dp + r * n, n, obuf);
      const V<A> mu = V<A>::splat(mp ? static_cast<A>(mp[r]) : A(0));
      const V<A> inv = V<A>::splat(static_cast<A>(rp[r]));
      const VecPair<A> sums = sum_chunks<A>(n, [&](int64_t i, int64_t c) {
        const V<A> gw = w ? load(g + i, c) * load(w + i, c) : load(g + i, c);
        const V<A> xhat = (load(row + i, c) - mu) * inv;  // padding lanes: gw is 0 there
        return VecPair<A>{gw, gw * xhat};
      });
      const V<A> a = V<A>::splat(mp ? hsum(sums.first) / A(n) : A(0));
      const V<A> cc = V<A>::splat(hsum(sums.second) / A(n));
      for_chunks<A>(n, [&](int64_t i, int64_t c) {
        const V<A> gw = w ? load(g + i, c) * load(w + i, c) : load(g + i, c);
        const V<A> xhat = (load(row + i, c) - mu) * inv;
        store(inv * (gw - a - xhat * cc), out + i, c);
      });
      finish_target(out, dp + r * n, n);
    }
  });
}

/// Rows of one partial sum in norm_backward_params_typed: about kGrainSize
/// elements, and at most kMaxRowChunks chunks. Depends on the shape alone.
constexpr int64_t kMaxRowChunks = 256;
constexpr int64_t kParamColumns = 4096;  // most columns one task of the column sums keeps

int64_t rows_per_chunk(NormRows s) {
  const int64_t by_grain = (kGrainSize + s.cols - 1) / std::max<int64_t>(s.cols, 1);
  const int64_t by_count = (s.rows + kMaxRowChunks - 1) / kMaxRowChunks;
  return std::max<int64_t>({int64_t{1}, by_grain, by_count});
}

/// The weight gradient sum over rows of g * xhat (x given) or the bias
/// gradient sum over rows of g (x null), per column. The rows are cut into
/// fixed chunks (rows_per_chunk: by shape only), each chunk's column sums
/// written to its own partial row, and the partial rows added in chunk order:
/// every thread gets work whatever the column count (a split by 256-column
/// blocks gave a [8192, 768] input three blocks for two threads), and the
/// result never depends on the thread count.
template <typename T>
void norm_backward_params_typed(const Tensor& grad, const Tensor* x, const Tensor* mean, const Tensor* rstd,
                                const Tensor& out, NormRows s) {
  using A = opmath_t<T>;
  const int64_t n = s.cols;
  const T* gp = grad.data_ptr<T>();
  const T* xp = x ? x->data_ptr<T>() : nullptr;
  const T* mp = mean ? mean->data_ptr<T>() : nullptr;
  const T* rp = rstd ? rstd->data_ptr<T>() : nullptr;
  T* op = out.data_ptr<T>();
  const int64_t chunk_rows = rows_per_chunk(s);
  const int64_t chunks = (s.rows + chunk_rows - 1) / chunk_rows;
  const int64_t col_blocks = (n + kParamColumns - 1) / kParamColumns;
  std::vector<A> partial(static_cast<size_t>(chunks * n));
  parallel_for_each(0, chunks * col_blocks, [&](int64_t task) {
    const int64_t chunk = task / col_blocks, c0 = (task % col_blocks) * kParamColumns;
    const int64_t width = std::min(kParamColumns, n - c0);
    A* const acc = partial.data() + chunk * n + c0;
    std::fill(acc, acc + width, A(0));
    std::vector<A> gbuf, xbuf;
    const int64_t r1 = std::min(s.rows, (chunk + 1) * chunk_rows);
    for (int64_t r = chunk * chunk_rows; r < r1; ++r) {
      const A* g = as_compute_type<A>(gp + r * n + c0, width, gbuf);
      if (xp) {
        const A* row = as_compute_type<A>(xp + r * n + c0, width, xbuf);
        const V<A> mu = V<A>::splat(mp ? static_cast<A>(mp[r]) : A(0));
        const V<A> inv = V<A>::splat(static_cast<A>(rp[r]));
        for_chunks<A>(width, [&](int64_t i, int64_t c) {
          store(load(acc + i, c) + load(g + i, c) * ((load(row + i, c) - mu) * inv), acc + i, c);
        });
      } else {
        for_chunks<A>(width, [&](int64_t i, int64_t c) { store(load(acc + i, c) + load(g + i, c), acc + i, c); });
      }
    }
  });
  // The partial rows, added in chunk order, column blocks in parallel.
  parallel_for(0, n, kGrainSize / chunks + 1, [&](int64_t j0, int64_t j1) {
    std::vector<A> total(partial.begin() + j0, partial.begin() + j1);
    for (int64_t c = 1; c < chunks; ++c) {
      const A* part = partial.data() + c * n + j0;
      for (int64_t j = 0; j < j1 - j0; ++j) total[static_cast<size_t>(j)] += part[j];
    }
    for (int64_t j = j0; j < j1; ++j) op[j] = static_cast<T>(total[static_cast<size_t>(j - j0)]);
  });
}

void norm_forward_kernel(const Tensor& x, const Tensor* weight, const Tensor* bias, const Tensor& y,
                         const Tensor* mean, const Tensor& rstd, NormRows shape, double eps) {
  visit_floating(x.dtype(), [&](auto tag) {
    norm_forward_typed<decltype(tag)>(x, weight, bias, y, mean, rstd, shape, eps);
  });
}

void norm_backward_input_kernel(const Tensor& grad, const Tensor& x, const Tensor* mean, const Tensor& rstd,
                                const Tensor* weight, const Tensor& dx, NormRows shape) {
  visit_floating(x.dtype(), [&](auto tag) {
    norm_backward_input_typed<decltype(tag)>(grad, x, mean, rstd, weight, dx, shape);
  });
}

void norm_backward_params_kernel(const Tensor& grad, const Tensor* x, const Tensor* mean, const Tensor* rstd,
                                 const Tensor& out, NormRows shape) {
  visit_floating(out.dtype(), [&](auto tag) {
    norm_backward_params_typed<decltype(tag)>(grad, x, mean, rstd, out, shape);
  });
}

}  // namespace

KILN_REGISTER_DISPATCH(norm_forward_stub, &norm_forward_kernel);
KILN_REGISTER_DISPATCH(norm_backward_input_stub, &norm_backward_input_kernel);
KILN_REGISTER_DISPATCH(norm_backward_params_stub, &norm_backward_params_kernel);

}  // namespace KILN_CPU_NS
}  // namespace kiln::native
