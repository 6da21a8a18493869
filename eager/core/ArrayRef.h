// IntArrayRef and the shape vectors: non-owning and owning lists of int64.
#pragma once

#include <cstdint>
#include <ostream>
#include <initializer_list>
#include <span>
#include <vector>

#include "eager/core/SmallVector.h"

namespace kiln {

/// Sizes and strides stay inline up to this many dims (no heap traffic).
inline constexpr size_t kInlineDims = 5;

using DimVector = SmallVector<int64_t, kInlineDims>;

/// A non-owning view of int64 values (sizes, strides, dims). Like PyTorch's
/// IntArrayRef it also binds to a braced list, `empty({2, 3}, ...)`; the list
/// lives until the end of the full expression, so never store one.
class IntArrayRef : public std::span<const int64_t> {
 public:
  using std::span<const int64_t>::span;
  constexpr IntArrayRef() = default;
  constexpr IntArrayRef(std::span<const int64_t> s) : std::span<const int64_t>(s) {}  // NOLINT
  constexpr IntArrayRef(std::initializer_list<int64_t> values)                        // NOLINT
      : std::span<const int64_t>(values.begin(), values.size()) {}
  IntArrayRef(const DimVector& values) : std::span<const int64_t>(values.data(), values.size()) {}  // NOLINT
  IntArrayRef(const std::vector<int64_t>& values)                                                   // NOLINT
      : std::span<const int64_t>(values.data(), values.size()) {}
};

/// Prints "[2, 3]" like PyTorch's error messages do.
inline std::ostream& operator<<(std::ostream& os, IntArrayRef values) {
  os << '[';
  for (size_t i = 0; i < values.size(); ++i) os << (i ? ", " : "") << values[i];
  return os << ']';
}
inline std::ostream& operator<<(std::ostream& os, const DimVector& values) { return os << IntArrayRef(values); }

/// Product of the sizes (1 for a 0-dim shape).
[[nodiscard]] inline int64_t product(IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

/// The row-major (C-contiguous) strides for `sizes`.
[[nodiscard]] inline DimVector contiguous_strides(IntArrayRef sizes) {
  DimVector strides(sizes.size());
  int64_t running = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = running;
    running *= sizes[i] > 1 ? sizes[i] : 1;
  }
  return strides;
}

}  // namespace kiln
