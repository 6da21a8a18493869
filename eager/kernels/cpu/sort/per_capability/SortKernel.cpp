// The sort / topk loop, compiled per CPU capability: each row is gathered into
// (value, index) pairs, NaNs set aside, ordered with std::sort (nth_element
// first for topk, or one scan with a heap of k pairs when k is small) and
// written back; full sorts of rows of 64 or more go through a radix sort of
// order-preserving keys instead (Note [Radix sort keys], RadixSort.h). See Note [Sort order] (SortOps.cpp).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "eager/core/DType.h"
#include "eager/core/Half.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/sort/SortStubs.h"
#include "eager/kernels/cpu/sort/per_capability/RadixSort.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

/// The type a row is compared in: float for float16/bfloat16, the element type otherwise.
template <typename T>
using key_t = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

template <typename K>
bool is_nan(K v) {
  if constexpr (std::is_floating_point_v<K>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

/// (value, index) orders: a strict total order with NaN largest and ties by index.
template <typename K>
struct Ascending {
  bool operator()(const std::pair<K, int64_t>& a, const std::pair<K, int64_t>& b) const {
    const bool an = is_nan(a.first), bn = is_nan(b.first);
    if (an || bn) return an == bn ? a.second < b.second : bn;
    if (a.first < b.first) return true;
    if (b.first < a.first) return false;
    return a.second < b.second;
  }
};

template <typename K>
struct Descending {
  bool operator()(const std::pair<K, int64_t>& a, const std::pair<K, int64_t>& b) const {
    const bool an = is_nan(a.first), bn = is_nan(b.first);
    if (an || bn) return an == bn ? a.second < b.second : an;
    if (a.first > b.first) return true;
    if (b.first > a.first) return false;
    return a.second < b.second;
  }
};

/// Puts the k first elements of [begin, end) under `cmp` in order at its front.
template <typename It, typename Cmp>
void order_front(It begin, It end, int64_t k, const Cmp& cmp) {
  if (k >= end - begin) {
    std::sort(begin, end, cmp);
  } else {
    std::nth_element(begin, begin + k, end, cmp);
    std::sort(begin, begin + k, cmp);
  }
}

/// Small k: the k first elements of a strided row under `cmp`, in order, in
/// buf[0, k), kept in a heap whose top is the last of them while the row is
/// scanned once (most elements lose one comparison against the top and are
/// never copied).
template <typename K, typename T, typename Cmp>
void select_by_heap(const T* row, int64_t stride, int64_t n, int64_t k, std::vector<std::pair<K, int64_t>>& buf,
                    const Cmp& cmp, bool largest) {
  const auto b = buf.begin(), e = buf.begin() + k;
  for (int64_t i = 0; i < k; ++i) buf[static_cast<size_t>(i)] = {static_cast<K>(row[i * stride]), i};
  std::make_heap(b, e, cmp);
  const auto offer = [&](int64_t i) {
    const std::pair<K, int64_t> c{static_cast<K>(row[i * stride]), i};
    if (cmp(c, buf.front())) {
      std::pop_heap(b, e, cmp);
      buf[static_cast<size_t>(k - 1)] = c;
      std::push_heap(b, e, cmp);
    }
  };
  // Blocks of the row that cannot beat the heap's top are skipped after one
  // branch-free test: a later element beats the top only when strictly better
  // (an equal one has the larger index), and NaN, which sorts largest, is sent
  // on to the full comparison. While the top is a NaN of a smallest-k, every
  // number beats it, so those blocks are all offered.
  constexpr int64_t kBlock = 16;
  int64_t i = k;
  for (; i + kBlock <= n; i += kBlock) {
    const K top = buf.front().first;
    bool may_beat = false;
    if (!largest && top != top) {
      may_beat = true;
    } else {
      for (int64_t j = 0; j < kBlock; ++j) {
        const K v = static_cast<K>(row[(i + j) * stride]);
        may_beat |= (largest ? v > top : v < top) || v != v;
      }
    }
    if (!may_beat) continue;
    for (int64_t j = 0; j < kBlock; ++j) offer(i + j);
  }
  for (; i < n; ++i) offer(i);
  std::sort_heap(b, e, cmp);
}

/// Below this ratio of k to n, topk scans the row with a heap of k elements.
constexpr int64_t kHeapSelectRatio = 64;

/// Element offsets of row `r` in the input, values and indices.
struct RowOffsets {
  int64_t in = 0, values = 0, indices = 0;
};

RowOffsets row_offsets(const SortRows& p, int64_t r) {
  RowOffsets o;
  for (int64_t d = static_cast<int64_t>(p.outer_sizes.size()) - 1; d >= 0; --d) {
    const auto du = static_cast<size_t>(d);
    const int64_t i = r % p.outer_sizes[du];
    r /= p.outer_sizes[du];
    o.in += i * p.in_outer[du];
    o.values += i * p.values_outer[du];
    o.indices += i * p.indices_outer[du];
  }
  return o;
}

/// (value, index) orders for rows without NaN: cheaper than Ascending / Descending.
template <typename K>
struct AscendingNoNan {
  bool operator()(const std::pair<K, int64_t>& a, const std::pair<K, int64_t>& b) const {
    return a.first < b.first || (!(b.first < a.first) && a.second < b.second);
  }
};

template <typename K>
struct DescendingNoNan {
  bool operator()(const std::pair<K, int64_t>& a, const std::pair<K, int64_t>& b) const {
    return a.first > b.first || (!(b.first > a.first) && a.second < b.second);
  }
};

/// Orders one row through buf (n pairs): the non-NaN elements are gathered to the
/// front and ordered with the cheaper comparators, the NaNs (in index order) go
/// where NaN sorts (last ascending, first descending). Returns the NaN count;
/// element i of the result is then nan[i] for i < nans when descending, else
/// buf[i - (descending ? nans : 0)].
template <typename K, typename T>
int64_t order_row(const T* row, const SortRows& p, std::vector<std::pair<K, int64_t>>& buf,
                  std::vector<int64_t>& nan) {
  nan.clear();
  int64_t m = 0;
  for (int64_t i = 0; i < p.n; ++i) {
    const K v = static_cast<K>(row[i * p.in_stride]);
    if (is_nan(v)) {
      nan.push_back(i);
    } else {
      buf[static_cast<size_t>(m++)] = {v, i};
    }
  }
  const auto nans = static_cast<int64_t>(nan.size());
  if (p.descending) {
    order_front(buf.begin(), buf.begin() + m, std::max<int64_t>(p.k - nans, 0), DescendingNoNan<K>{});
  } else {
    order_front(buf.begin(), buf.begin() + m, std::min(p.k, m), AscendingNoNan<K>{});
    for (int64_t j = 0; j < nans && m + j < p.k; ++j) {
      buf[static_cast<size_t>(m + j)] = {std::numeric_limits<K>::quiet_NaN(), nan[static_cast<size_t>(j)]};
    }
  }
  return p.descending ? nans : 0;
}

/// Rows at least this long are fully sorted by radix (Note [Radix sort keys]).
constexpr int64_t kRadixMinLength = 64;

/// A full sort of every row by radix: values are copied from the input by
/// index, so a NaN's sign and payload survive.
template <typename T>
void radix_sort_rows(const T* in, T* out, int64_t* idx, const SortRows& p, int64_t grain) {
  using K = key_t<T>;
  using U = radix_key_t<K>;
  parallel_for(0, p.rows, grain, [&](int64_t begin, int64_t end) {
    RadixBuffers<U> buf;
    buf.keys.resize(static_cast<size_t>(p.n));
    for (int64_t r = begin; r < end; ++r) {
      const RowOffsets o = row_offsets(p, r);
      const T* row = in + o.in;
      for (int64_t i = 0; i < p.n; ++i) {
        buf.keys[static_cast<size_t>(i)] = radix_key(static_cast<K>(row[i * p.in_stride]), p.descending);
      }
      radix_sort_indices(p.n, buf);
      T* vrow = out + o.values;
      int64_t* irow = idx + o.indices;
      const uint32_t* order = buf.order.data();
      for (int64_t i = 0; i < p.n; ++i) {
        const int64_t j = order[i];
        vrow[i * p.values_stride] = row[j * p.in_stride];
        irow[i * p.indices_stride] = j;
      }
    }
  });
}

template <typename T>
void sort_typed(const Tensor& self, const Tensor& values, const Tensor& indices, const SortRows& p) {
  using K = key_t<T>;
  const T* in = self.data_ptr<T>();
  T* out = values.data_ptr<T>();
  int64_t* idx = indices.data_ptr<int64_t>();
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(p.n, 1));
  if (p.k == p.n && p.n >= kRadixMinLength && p.n <= int64_t{UINT32_MAX}) {
    radix_sort_rows(in, out, idx, p, grain);
    return;
  }
  const bool heap = p.k > 0 && p.k * kHeapSelectRatio <= p.n;
  parallel_for(0, p.rows, grain, [&](int64_t begin, int64_t end) {
    std::vector<std::pair<K, int64_t>> buf(static_cast<size_t>(p.n));
    std::vector<int64_t> nan;
    for (int64_t r = begin; r < end; ++r) {
      const RowOffsets o = row_offsets(p, r);
      const T* row = in + o.in;
      int64_t nans_first = 0;  // descending: the NaNs that come before buf's elements
      if (heap && p.descending) {
        select_by_heap(row, p.in_stride, p.n, p.k, buf, Descending<K>{}, /*largest=*/true);
      } else if (heap) {
        select_by_heap(row, p.in_stride, p.n, p.k, buf, Ascending<K>{}, /*largest=*/false);
      } else {
        nans_first = order_row<K>(row, p, buf, nan);
      }
      T* vrow = out + o.values;
      int64_t* irow = idx + o.indices;
      for (int64_t i = 0; i < p.k; ++i) {
        // A NaN is copied from the input itself, so its sign and payload survive.
        if (i < nans_first) {
          const int64_t j = nan[static_cast<size_t>(i)];
          vrow[i * p.values_stride] = row[j * p.in_stride];
          irow[i * p.indices_stride] = j;
          continue;
        }
        const auto& e = buf[static_cast<size_t>(i - nans_first)];
        vrow[i * p.values_stride] = is_nan(e.first) ? row[e.second * p.in_stride] : static_cast<T>(e.first);
        irow[i * p.indices_stride] = e.second;
      }
    }
  });
}

void sort_kernel(const Tensor& self, const Tensor& values, const Tensor& indices, const SortRows& plan) {
  visit_dtype(self.dtype(), [&](auto tag) { sort_typed<decltype(tag)>(self, values, indices, plan); });
}

}  // namespace

KILN_REGISTER_DISPATCH(sort_stub, &sort_kernel);

}  // namespace KILN_CPU_NS
}  // namespace kiln::native
