// The bytes a tensor's elements can touch (MemorySpan.h).
#include "eager/kernels/MemorySpan.h"

#include <algorithm>

namespace kiln {

std::pair<const char*, const char*> byte_span(const Tensor& t) {
  const char* base = static_cast<const char*>(t.data_ptr());
  int64_t lo = 0, hi = 0;
  for (int64_t d = 0; d < t.dim(); ++d) {
    const int64_t reach = (t.size(d) - 1) * t.stride(d);
    (reach < 0 ? lo : hi) += reach;
  }
  return {base + lo * t.itemsize(), base + (hi + 1) * t.itemsize()};
}

bool byte_spans_meet(const Tensor& a, const Tensor& b) {
  const auto [a0, a1] = byte_span(a);
  const auto [b0, b1] = byte_span(b);
  return a0 < b1 && b0 < a1;
}

bool same_view(const Tensor& a, const Tensor& b) {
  return a.data_ptr() == b.data_ptr() && a.dtype() == b.dtype() && std::ranges::equal(a.sizes(), b.sizes()) &&
         std::ranges::equal(a.strides(), b.strides());
}

}  // namespace kiln
