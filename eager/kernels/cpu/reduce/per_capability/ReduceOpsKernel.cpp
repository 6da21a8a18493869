// Reduction and scan loops, compiled per CPU capability. The input is a
// contiguous [batch, len, inner] block (Note [Reductions as rows] in
// ReduceOps.cpp): inner == 1 reduces contiguous rows, inner > 1 reduces across
// rows with the inner dim vectorised. Work is split by size only, so results
// do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "eager/core/Error.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/reduce/ReduceOpsStubs.h"
#include "eager/kernels/cpu/vec/VecBinary.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

constexpr int64_t kBlock = 1024;     // elements (or rows, across rows) summed in T before joining the wide sum
constexpr int64_t kChunk = 1 << 16;  // a long row is split into chunks of this many elements
constexpr int64_t kColumns = 4096;   // most inner elements one task of an across-rows reduction keeps

template <typename T>
using wide_t = std::conditional_t<std::is_floating_point_v<T>, double, T>;

template <typename T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return v != v;
  } else {
    (void)v;
    return false;
  }
}

/// v replaces best in a max (min): larger (smaller), or the first NaN.
template <typename T, bool kMax>
bool better(T v, T best) {
  return (kMax ? v > best : v < best) || (is_nan(v) && !is_nan(best));
}

template <typename T>
T hsum(Vec<T> v) {
  T s = 0;
  for (int64_t l = 0; l < Vec<T>::size; ++l) s += v.v[l];
  return s;
}

/// What a sum adds per element: the value (Sum), its square (SumSquares) or
/// its magnitude (SumAbs); each works on a Vec and on one value alike.
struct Value {
  template <typename V>
  V operator()(V v) const { return v; }
};
struct Square {
  template <typename V>
  V operator()(V v) const { return v * v; }
};
struct Magnitude {
  template <typename T>
  Vec<T> operator()(Vec<T> v) const { return {v.v < 0 ? -v.v : v.v}; }
  template <typename T>
  T operator()(T v) const { return v < 0 ? -v : v; }
};

// --- one contiguous row -------------------------------------------------------------------

/// Sum of term(x[i]) over [0, n): four vector accumulators over blocks of
/// kBlock elements, each block's total added into a double (for float) sum —
/// as accurate as PyTorch's cascade sum for float32, and not bound by the add
/// latency.
template <typename T, typename Term = Value>
wide_t<T> sum_span(const T* x, int64_t n, Term term = {}) {
  using V = Vec<T>;
  constexpr int64_t W = 4 * V::size;
  static_assert(kBlock % W == 0, "blocks hold whole steps");
  wide_t<T> total = 0;
  int64_t i = 0;
  while (n - i >= W) {
    const int64_t stop = i + std::min<int64_t>(kBlock, (n - i) / W * W);
    V a0{}, a1{}, a2{}, a3{};
    for (; i < stop; i += W) {
      a0 = a0 + term(V::loadu(x + i));
      a1 = a1 + term(V::loadu(x + i + V::size));
      a2 = a2 + term(V::loadu(x + i + 2 * V::size));
      a3 = a3 + term(V::loadu(x + i + 3 * V::size));
    }
    total += hsum((a0 + a1) + (a2 + a3));
  }
  for (; i < n; ++i) total += term(x[i]);
  return total;
}

/// Vec<double>::size elements of x from x[0], as doubles.
template <typename T>
Vec<double> load_wide(const T* x) {
  if constexpr (std::is_same_v<T, double>) {
    return Vec<double>::loadu(x);
#if defined(__AVX512F__)
  } else if constexpr (std::is_same_v<T, float>) {
    return {(Vec<double>::Native)_mm512_cvtps_pd(_mm256_loadu_ps(x))};
#elif defined(__AVX__)
  } else if constexpr (std::is_same_v<T, float>) {  // one vcvtps2pd (GCC splits __builtin_convertvector in two)
    return {(Vec<double>::Native)_mm256_cvtps_pd(_mm_loadu_ps(x))};
#endif
  } else {
    typedef T Narrow __attribute__((vector_size(Vec<double>::size * sizeof(T))));
    Narrow narrow;
    std::memcpy(&narrow, x, sizeof(Narrow));
    return {__builtin_convertvector(narrow, Vec<double>::Native)};
  }
}

/// Product of x[0, n). Floating types multiply in double, in four vector
/// accumulators (a single running product is bound by the multiply's latency:
/// a 16M-element float prod took 32x torch's time), joined lane by lane in a
/// fixed order; integers in one int64 product (exact in any order).
template <typename T>
wide_t<T> prod_span(const T* x, int64_t n) {
  wide_t<T> acc = 1;
  int64_t i = 0;
  if constexpr (std::is_floating_point_v<T>) {
    using V = Vec<double>;
    constexpr int64_t W = 4 * V::size;
    if (n >= W) {
      V a0 = V::splat(1), a1 = a0, a2 = a0, a3 = a0;
      for (; i + W <= n; i += W) {
        a0 = a0 * load_wide(x + i);
        a1 = a1 * load_wide(x + i + V::size);
        a2 = a2 * load_wide(x + i + 2 * V::size);
        a3 = a3 * load_wide(x + i + 3 * V::size);
      }
      const V a = (a0 * a1) * (a2 * a3);
      for (int64_t l = 0; l < V::size; ++l) acc *= a.v[l];
    }
  }
  for (; i < n; ++i) acc *= x[i];
  return acc;
}

/// max (or min) of x[0, n), NaN if any element is NaN. n > 0.
/// Note [NaN in a streamed max]: the vector loop keeps four plain max (min)
/// accumulators, which lose a NaN, and one running sum of everything read,
/// which keeps it: a NaN in, the sum is NaN. Only when the sum ends NaN (a
/// NaN, or +inf meeting -inf) is the span searched for a NaN. Folding the
/// NaN test into the max itself (a mask and a masked move per step, a chain
/// through a mask register), or branching on an any-lane test every step,
/// held a 64 MiB float amax on one core to 2.0-2.5 ms against torch's 1.95 ms.
template <typename T, bool kMax>
T extreme_span(const T* x, int64_t n) {
  using V = Vec<T>;
  constexpr int64_t W = 4 * V::size;
  const auto pick = [](V a, V b) { return kMax ? maximum(a, b) : minimum(a, b); };
  T acc = x[0];
  bool nan = false;
  int64_t i = 0;
  if (n >= W) {
    V a0 = V::loadu(x), a1 = V::loadu(x + V::size), a2 = V::loadu(x + 2 * V::size), a3 = V::loadu(x + 3 * V::size);
    V probe = (a0 + a1) + (a2 + a3);
    for (i = W; i + W <= n; i += W) {
      const V v0 = V::loadu(x + i), v1 = V::loadu(x + i + V::size);
      const V v2 = V::loadu(x + i + 2 * V::size), v3 = V::loadu(x + i + 3 * V::size);
      a0 = pick(a0, v0);
      a1 = pick(a1, v1);
      a2 = pick(a2, v2);
      a3 = pick(a3, v3);
      if constexpr (std::is_floating_point_v<T>) probe = probe + ((v0 + v1) + (v2 + v3));
    }
    const V a = pick(pick(a0, a1), pick(a2, a3));
    acc = a.v[0];
    bool probe_nan = false;
    for (int64_t l = 0; l < V::size; ++l) {
      acc = kMax ? (a.v[l] > acc ? a.v[l] : acc) : (a.v[l] < acc ? a.v[l] : acc);
      probe_nan = probe_nan || is_nan(probe.v[l]);
    }
    if (probe_nan) nan = std::any_of(x, x + i, [](T v) { return is_nan(v); });
  }
  for (; i < n; ++i) {
    const T v = x[i];
    nan = nan || is_nan(v);
    acc = kMax ? (v > acc ? v : acc) : (v < acc ? v : acc);
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (nan) return std::numeric_limits<T>::quiet_NaN();
  }
  return acc;
}

/// Index of the first max (min), the first NaN winning. n > 0.
template <typename T, bool kMax>
int64_t arg_extreme_span(const T* x, int64_t n) {
  int64_t best = 0;
  T value = x[0];
  if (is_nan(value)) return 0;
  for (int64_t i = 1; i < n; ++i) {
    const T v = x[i];
    if (is_nan(v)) return i;
    if (kMax ? v > value : v < value) {
      value = v;
      best = i;
    }
  }
  return best;
}

/// Variance with `correction`, two passes in double (four running sums each).
template <typename T>
double var_span(const T* x, int64_t n, double correction) {
  double s[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int l = 0; l < 4; ++l) s[l] += static_cast<double>(x[i + l]);
  }
  for (; i < n; ++i) s[0] += static_cast<double>(x[i]);
  const double mean = ((s[0] + s[1]) + (s[2] + s[3])) / static_cast<double>(n);
  double m[4] = {0, 0, 0, 0};
  for (i = 0; i + 4 <= n; i += 4) {
    for (int l = 0; l < 4; ++l) {
      const double d = static_cast<double>(x[i + l]) - mean;
      m[l] += d * d;
    }
  }
  for (; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - mean;
    m[0] += d * d;
  }
  return ((m[0] + m[1]) + (m[2] + m[3])) / std::max(0.0, static_cast<double>(n) - correction);
}

template <typename T>
T row_value(const T* x, int64_t n, RowReduce op, double param) {
  if constexpr (std::is_same_v<T, bool>) {
    // max of bools is any, min is all
    const bool every = op == RowReduce::All || op == RowReduce::Min;
    bool acc = every;
    for (int64_t i = 0; i < n; ++i) acc = every ? (acc && x[i]) : (acc || x[i]);
    return acc;
  } else {
    switch (op) {
      case RowReduce::Sum: return static_cast<T>(sum_span(x, n));
      case RowReduce::SumSquares:
        if constexpr (std::is_floating_point_v<T>) return static_cast<T>(sum_span(x, n, Square{}));
        break;
      case RowReduce::SumAbs:
        if constexpr (std::is_floating_point_v<T>) return static_cast<T>(sum_span(x, n, Magnitude{}));
        break;
      case RowReduce::Prod: return static_cast<T>(prod_span(x, n));
      case RowReduce::Max: return extreme_span<T, true>(x, n);
      case RowReduce::Min: return extreme_span<T, false>(x, n);
      case RowReduce::Var:
        if constexpr (std::is_floating_point_v<T>) return static_cast<T>(var_span(x, n, param));
        break;
      default: break;
    }
    KILN_FAIL(Runtime, "reduce: op not supported for ", dtype_of<T>());
  }
}

template <typename T, typename Term>
wide_t<T> sum_long_row(const T* x, int64_t n, Term term) {
  return parallel_reduce<wide_t<T>>(
      0, n, kChunk, wide_t<T>(0), [&](int64_t b, int64_t e) { return sum_span(x + b, e - b, term); },
      [](wide_t<T> a, wide_t<T> c) { return a + c; });
}

/// One long row (a full reduction): deterministic chunks, combined in order.
/// False when `op` has no chunked form.
template <typename T>
bool reduce_long_row(const T* x, int64_t n, T* dst, RowReduce op) {
  if constexpr (std::is_same_v<T, bool>) {
    if (op == RowReduce::Var) return false;
    const bool every = op == RowReduce::All || op == RowReduce::Min;
    dst[0] = parallel_reduce<bool>(
        0, n, kChunk, every, [&](int64_t b, int64_t e) { return row_value<bool>(x + b, e - b, op, 0); },
        [every](bool a, bool c) { return every ? a && c : a || c; });
    return true;
  } else {
    switch (op) {
      case RowReduce::Sum: dst[0] = static_cast<T>(sum_long_row(x, n, Value{})); return true;
      case RowReduce::SumSquares:
      case RowReduce::SumAbs:
        if constexpr (std::is_floating_point_v<T>) {
          dst[0] = static_cast<T>(op == RowReduce::SumSquares ? sum_long_row(x, n, Square{})
                                                               : sum_long_row(x, n, Magnitude{}));
          return true;
        }
        return false;
      case RowReduce::Prod:
        dst[0] = static_cast<T>(parallel_reduce<wide_t<T>>(
            0, n, kChunk, wide_t<T>(1), [&](int64_t b, int64_t e) { return prod_span(x + b, e - b); },
            [](wide_t<T> a, wide_t<T> c) { return a * c; }));
        return true;
      case RowReduce::Max:
      case RowReduce::Min: {
        const bool is_max = op == RowReduce::Max;
        dst[0] = parallel_reduce<T>(
            0, n, kChunk, x[0],
            [&](int64_t b, int64_t e) {
              return is_max ? extreme_span<T, true>(x + b, e - b) : extreme_span<T, false>(x + b, e - b);
            },
            [is_max](T a, T c) {
              if (is_nan(a) || is_nan(c)) return is_nan(a) ? a : c;
              return is_max ? (c > a ? c : a) : (c < a ? c : a);
            });
        return true;
      }
      default: return false;
    }
  }
}

// --- across rows: x[r * stride + j] for r < len, j < width (width <= kColumns) --------------

template <typename T, typename Term = Value>
void sum_columns(const T* x, int64_t len, int64_t stride, int64_t width, T* dst, Term term = {}) {
  using V = Vec<T>;
  wide_t<T> wide[kColumns];
  T acc[kColumns];
  std::fill(wide, wide + width, wide_t<T>(0));
  for (int64_t r0 = 0; r0 < len; r0 += kBlock) {
    std::fill(acc, acc + width, T(0));
    const int64_t r1 = std::min(len, r0 + kBlock);
    int64_t r = r0;
    for (; r + 4 <= r1; r += 4) {  // four rows added in registers per load and store of acc (as extreme_columns)
      const T* p0 = x + r * stride;
      const T* p1 = p0 + stride;
      const T* p2 = p1 + stride;
      const T* p3 = p2 + stride;
      int64_t j = 0;
      for (; j + V::size <= width; j += V::size) {
        const V four = (term(V::loadu(p0 + j)) + term(V::loadu(p1 + j))) +
                       (term(V::loadu(p2 + j)) + term(V::loadu(p3 + j)));
        (V::loadu(acc + j) + four).storeu(acc + j);
      }
      for (; j < width; ++j) acc[j] += (term(p0[j]) + term(p1[j])) + (term(p2[j]) + term(p3[j]));
    }
    for (; r < r1; ++r) {
      const T* row = x + r * stride;
      int64_t j = 0;
      for (; j + V::size <= width; j += V::size) (V::loadu(acc + j) + term(V::loadu(row + j))).storeu(acc + j);
      for (; j < width; ++j) acc[j] += term(row[j]);
    }
    for (int64_t j = 0; j < width; ++j) wide[j] += acc[j];
  }
  for (int64_t j = 0; j < width; ++j) dst[j] = static_cast<T>(wide[j]);
}

/// The first max (min) across rows and its row (the first NaN wins).
template <typename T, bool kMax>
void arg_extreme_columns(const T* x, int64_t len, int64_t stride, int64_t width, T* dst, int64_t* idx) {
  std::memcpy(dst, x, static_cast<size_t>(width) * sizeof(T));
  std::fill(idx, idx + width, int64_t{0});
  for (int64_t r = 1; r < len; ++r) {
    const T* row = x + r * stride;
    for (int64_t j = 0; j < width; ++j) {
      if (better<T, kMax>(row[j], dst[j])) {
        dst[j] = row[j];
        idx[j] = r;
      }
    }
  }
}

/// b when it beats a in a max (min) or is NaN, else a: a NaN, once in, stays.
template <typename T, bool kMax>
Vec<T> keep_extreme(Vec<T> a, Vec<T> b) {
  return {((kMax ? b.v > a.v : b.v < a.v) | (b.v != b.v)) ? b.v : a.v};
}

/// max (min) across rows, NaN propagating. Four rows are combined in
/// registers before the running result in dst is loaded and stored, so dst
/// costs one load and store per four rows read (an across-rows amax of a
/// transposed [4096, 4096] ran at 1.35x torch on 2 threads with one per row; the
/// column loop alone, 1 thread, 2048 columns: 12-16 ms -> 4.5-4.6 ms).
template <typename T, bool kMax>
void extreme_columns(const T* x, int64_t len, int64_t stride, int64_t width, T* dst) {
  using V = Vec<T>;
  std::memcpy(dst, x, static_cast<size_t>(width) * sizeof(T));
  int64_t r = 1;
  for (; r + 4 <= len; r += 4) {
    const T* p0 = x + r * stride;
    const T* p1 = p0 + stride;
    const T* p2 = p1 + stride;
    const T* p3 = p2 + stride;
    int64_t j = 0;
    for (; j + V::size <= width; j += V::size) {
      const V m01 = keep_extreme<T, kMax>(V::loadu(p0 + j), V::loadu(p1 + j));
      const V m23 = keep_extreme<T, kMax>(V::loadu(p2 + j), V::loadu(p3 + j));
      keep_extreme<T, kMax>(V::loadu(dst + j), keep_extreme<T, kMax>(m01, m23)).storeu(dst + j);
    }
    for (; j < width; ++j) {
      for (const T* p : {p0, p1, p2, p3}) {
        if (better<T, kMax>(p[j], dst[j])) dst[j] = p[j];
      }
    }
  }
  for (; r < len; ++r) {
    const T* row = x + r * stride;
    int64_t j = 0;
    for (; j + V::size <= width; j += V::size) {
      keep_extreme<T, kMax>(V::loadu(dst + j), V::loadu(row + j)).storeu(dst + j);
    }
    for (; j < width; ++j) {
      if (better<T, kMax>(row[j], dst[j])) dst[j] = row[j];
    }
  }
}

template <typename T>
void prod_columns(const T* x, int64_t len, int64_t stride, int64_t width, T* dst) {
  wide_t<T> acc[kColumns];
  std::fill(acc, acc + width, wide_t<T>(1));
  for (int64_t r = 0; r < len; ++r) {
    for (int64_t j = 0; j < width; ++j) acc[j] *= x[r * stride + j];
  }
  for (int64_t j = 0; j < width; ++j) dst[j] = static_cast<T>(acc[j]);
}

template <typename T>
void var_columns(const T* x, int64_t len, int64_t stride, int64_t width, T* dst, double correction) {
  double mean[kColumns];
  double m2[kColumns];
  std::fill(mean, mean + width, 0.0);
  std::fill(m2, m2 + width, 0.0);
  for (int64_t r = 0; r < len; ++r) {
    for (int64_t j = 0; j < width; ++j) mean[j] += static_cast<double>(x[r * stride + j]);
  }
  for (int64_t j = 0; j < width; ++j) mean[j] /= static_cast<double>(len);
  for (int64_t r = 0; r < len; ++r) {
    for (int64_t j = 0; j < width; ++j) {
      const double d = static_cast<double>(x[r * stride + j]) - mean[j];
      m2[j] += d * d;
    }
  }
  const double denom = std::max(0.0, static_cast<double>(len) - correction);
  for (int64_t j = 0; j < width; ++j) dst[j] = static_cast<T>(m2[j] / denom);
}

void bool_columns(const bool* x, int64_t len, int64_t stride, int64_t width, bool* dst, bool every) {
  std::fill(dst, dst + width, every);
  for (int64_t r = 0; r < len; ++r) {
    for (int64_t j = 0; j < width; ++j) dst[j] = every ? (dst[j] && x[r * stride + j]) : (dst[j] || x[r * stride + j]);
  }
}

template <typename T>
void reduce_columns(const T* x, int64_t len, int64_t stride, int64_t width, T* dst, int64_t* idx, RowReduce op,
                    double param) {
  if (idx != nullptr) {
    return op == RowReduce::Max ? arg_extreme_columns<T, true>(x, len, stride, width, dst, idx)
                                : arg_extreme_columns<T, false>(x, len, stride, width, dst, idx);
  }
  if constexpr (std::is_same_v<T, bool>) {
    bool_columns(x, len, stride, width, dst, op == RowReduce::All || op == RowReduce::Min);
  } else {
    switch (op) {
      case RowReduce::Sum: return sum_columns(x, len, stride, width, dst);
      case RowReduce::SumSquares:
        if constexpr (std::is_floating_point_v<T>) return sum_columns(x, len, stride, width, dst, Square{});
        break;
      case RowReduce::SumAbs:
        if constexpr (std::is_floating_point_v<T>) return sum_columns(x, len, stride, width, dst, Magnitude{});
        break;
      case RowReduce::Prod: return prod_columns(x, len, stride, width, dst);
      case RowReduce::Max: return extreme_columns<T, true>(x, len, stride, width, dst);
      case RowReduce::Min: return extreme_columns<T, false>(x, len, stride, width, dst);
      case RowReduce::Var:
        if constexpr (std::is_floating_point_v<T>) return var_columns(x, len, stride, width, dst, param);
        break;
      default: break;
    }
    KILN_FAIL(Runtime, "reduce: op not supported for ", dtype_of<T>());
  }
}

// --- the kernel ------------------------------------------------------------------------------

template <typename T>
void reduce_typed(const Tensor& in, const Tensor& out, const Tensor& indices, RowReduce op, double param) {
  const int64_t batch = in.size(0), len = in.size(1), inner = in.size(2);
  const T* src = static_cast<const T*>(in.data_ptr());
  int64_t* idx = indices.defined() ? static_cast<int64_t*>(indices.data_ptr()) : nullptr;
  const bool is_max = op == RowReduce::Max;
  T* dst = static_cast<T*>(out.data_ptr());
  if (inner == 1) {
    if (batch == 1 && len > kChunk && idx == nullptr && reduce_long_row(src, len, dst, op)) return;
    parallel_for(0, batch, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(len, 1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T* x = src + r * len;
        dst[r] = row_value<T>(x, len, op, param);
        if (idx != nullptr) idx[r] = is_max ? arg_extreme_span<T, true>(x, len) : arg_extreme_span<T, false>(x, len);
      }
    });
    return;
  }
  // Across rows: each task keeps `width` running results and reads that many
  // contiguous elements of every row. Wide pieces keep the reads streaming
  // (a narrow piece touches a new page per row); one piece per thread when the
  // batch alone does not feed the threads. Columns are independent, so the
  // split never changes a result.
  const int64_t threads = batch >= get_num_threads() ? 1 : get_num_threads();
  const int64_t wanted = (inner + threads - 1) / threads;
  const int64_t width_cap = std::min(kColumns, std::max<int64_t>(64, (wanted + 63) / 64 * 64));
  const int64_t pieces = (inner + width_cap - 1) / width_cap;
  const int64_t work = len * std::min(inner, width_cap);
  parallel_for(0, batch * pieces, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(work, 1)), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t bi = t / pieces, j0 = (t % pieces) * width_cap;
      const int64_t width = std::min(width_cap, inner - j0);
      const int64_t o = bi * inner + j0;
      reduce_columns<T>(src + bi * len * inner + j0, len, inner, width, dst + o, idx ? idx + o : nullptr, op, param);
    }
  });
}

void reduce_kernel(const Tensor& in, const Tensor& out, const Tensor& indices, RowReduce op, double param) {
  visit_dtype(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_reduced_float_v<T>) {
      KILN_FAIL(Runtime, "reduce: ", dtype_of<T>(), " is computed in float");
    } else {
      reduce_typed<T>(in, out, indices, op, param);
    }
  });
}

template <typename T>
void scan_typed(const Tensor& in, const Tensor& out, int64_t outer, int64_t len, int64_t inner, bool product) {
  const T* src = static_cast<const T*>(in.data_ptr());
  T* dst = static_cast<T*>(out.data_ptr());
  parallel_for(0, outer, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(len * inner, 1)), [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      const T* x = src + o * len * inner;
      T* y = dst + o * len * inner;
      if (inner == 1) {
        wide_t<T> acc = product ? 1 : 0;
        for (int64_t i = 0; i < len; ++i) {
          acc = product ? acc * x[i] : acc + x[i];
          y[i] = static_cast<T>(acc);
        }
        continue;
      }
      for (int64_t j = 0; j < inner; ++j) y[j] = x[j];
      for (int64_t i = 1; i < len; ++i) {
        const T* xi = x + i * inner;
        const T* prev = y + (i - 1) * inner;
        T* yi = y + i * inner;
        if (product) {
          for (int64_t j = 0; j < inner; ++j) yi[j] = prev[j] * xi[j];
        } else {
          for (int64_t j = 0; j < inner; ++j) yi[j] = prev[j] + xi[j];
        }
      }
    }
  });
}

void scan_kernel(const Tensor& in, const Tensor& out, int64_t outer, int64_t len, int64_t inner, bool product) {
  switch (in.dtype()) {
    case DType::Float32: return scan_typed<float>(in, out, outer, len, inner, product);
    case DType::Float64: return scan_typed<double>(in, out, outer, len, inner, product);
    case DType::Int64: return scan_typed<int64_t>(in, out, outer, len, inner, product);
    case DType::Complex64: return scan_typed<std::complex<float>>(in, out, outer, len, inner, product);
    case DType::Complex128: return scan_typed<std::complex<double>>(in, out, outer, len, inner, product);
    default: KILN_FAIL(Runtime, "scan: unexpected dtype ", in.dtype());
  }
}

}  // namespace

KILN_REGISTER_DISPATCH(reduce_stub, &reduce_kernel);
KILN_REGISTER_DISPATCH(scan_stub, &scan_kernel);

}  // namespace KILN_CPU_NS
}  // namespace kiln::native
