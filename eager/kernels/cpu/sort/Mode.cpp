// _mode (eager/ops/sorting.yaml): the most frequent value along a dim and an
// index where it occurs, as PyTorch's CPU kernel picks it.
//
// Note [mode's index]
// -------------------
// PyTorch's CPU mode copies each row into (value, index) pairs, sorts them with
// std::sort comparing values only, and reports the last pair of the first
// longest run. Which occurrence that is depends on std::sort's permutation of
// equal values: the input order for rows of up to 16 elements (insertion sort),
// introsort's order beyond. kiln runs the same std::sort with the same
// comparator, so it reports the same index at every length. A row that
// contains NaN is the exception: PyTorch's comparator is then not a strict weak
// order (undefined behaviour for std::sort), so kiln sorts such rows with NaN
// above every number instead, each NaN its own run, and its index there may
// differ from PyTorch's. python/kiln/_statistics.py (kiln.mode) checks dim's
// type and the out= tensors and writes them.
#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>
#include <vector>

#include "eager/core/Error.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

namespace {

/// What elements compare by: the value itself, float16/bfloat16 through float (as c10::Half's operator<).
template <typename T>
auto key(const T& v) {
  if constexpr (std::is_arithmetic_v<T>) {
    return v;
  } else {
    return static_cast<float>(v);
  }
}

template <typename T>
bool is_nan(const T& v) {
  if constexpr (std::is_integral_v<T>) {
    return false;
  } else {
    return std::isnan(key(v));
  }
}

/// The mode of one row of n (value, index) pairs, PyTorch's way (Note [mode's index]).
template <typename T>
std::pair<T, int64_t> row_mode(std::vector<std::pair<T, int64_t>>& elements) {
  const bool has_nan = std::any_of(elements.begin(), elements.end(), [](const auto& e) { return is_nan(e.first); });
  if (has_nan) {
    std::sort(elements.begin(), elements.end(), [](const auto& a, const auto& b) {
      return is_nan(b.first) ? !is_nan(a.first) || a.second < b.second
                             : !is_nan(a.first) && key(a.first) < key(b.first);
    });
  } else {
    std::sort(elements.begin(), elements.end(),
              [](const auto& a, const auto& b) { return key(a.first) < key(b.first); });
  }
  const size_t n = elements.size();
  std::pair<T, int64_t> best = elements.front();
  int64_t run = 0, longest = 0;
  for (size_t i = 0; i < n; ++i) {
    ++run;
    const bool run_ends = i + 1 == n || is_nan(elements[i].first) ||
                          key(elements[i].first) != key(elements[i + 1].first);
    if (!run_ends) continue;
    if (run > longest) {
      best = elements[i];
      longest = run;
    }
    run = 0;
  }
  return best;
}

}  // namespace

std::tuple<Tensor, Tensor> _mode_cpu(const Tensor& self, int64_t dim, bool keepdim) {
  const int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  const Tensor rows = self.dim() == 0 ? self.reshape(std::vector<int64_t>{1, 1})
                                      : kiln::movedim(self, d, -1).contiguous();
  const int64_t n = rows.size(-1);  // 1 for a 0-d self
  KILN_CHECK_INDEX(n > 0, "mode(): Expected reduction dim ", d, " to have non-zero size.");
  std::vector<int64_t> out_sizes;
  for (int64_t i = 0; i < self.dim(); ++i) {
    if (i != d) {
      out_sizes.push_back(self.size(i));
    } else if (keepdim) {
      out_sizes.push_back(1);
    }
  }
  Tensor values = empty(out_sizes, self.dtype(), self.device());
  Tensor indices = empty(out_sizes, DType::Int64, self.device());
  const int64_t count = values.numel();
  if (count == 0 || self.impl()->is_meta()) return {values, indices};  // meta: the checks above are the meta function
  visit_dtype(self.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = rows.data_ptr<T>();
    T* value_out = values.data_ptr<T>();
    int64_t* index_out = indices.data_ptr<int64_t>();
    parallel_for(0, count, std::max<int64_t>(1, 32768 / n), [&](int64_t begin, int64_t end) {
      std::vector<std::pair<T, int64_t>> elements(static_cast<size_t>(n));
      for (int64_t r = begin; r < end; ++r) {
        for (int64_t k = 0; k < n; ++k) elements[static_cast<size_t>(k)] = {in[r * n + k], k};
        const auto [value, index] = row_mode(elements);
        value_out[r] = value;
        index_out[r] = index;
      }
    });
  });
  return {values, indices};
}

}  // namespace kiln::native
