// The bytes a tensor's elements can touch (MemorySpan.h).
#include "eager/kernels/MemorySpan.h"

#include <algorithm>
#include <cstdint>

namespace kiln {

namespace {

/// Where element [0, ...] lies: its address, or for a meta tensor (no data, Note [Meta
/// tensors have no data]) its byte offset in the storage, which only compares with
/// tensors of the same storage.
const char* first_element(const Tensor& t) {
  if (t.impl()->is_meta()) {
    return reinterpret_cast<const char*>(static_cast<uintptr_t>(t.storage_offset() * t.itemsize()));
  }
  return static_cast<const char*>(t.data_ptr());
}

}  // namespace

std::pair<const char*, const char*> byte_span(const Tensor& t) {
  const char* base = first_element(t);
  int64_t lo = 0, hi = 0;
  for (int64_t d = 0; d < t.dim(); ++d) {
    const int64_t reach = (t.size(d) - 1) * t.stride(d);
    (reach < 0 ? lo : hi) += reach;
  }
  return {base + lo * t.itemsize(), base + (hi + 1) * t.itemsize()};
}

bool byte_spans_meet(const Tensor& a, const Tensor& b) {
  if ((a.impl()->is_meta() || b.impl()->is_meta()) && a.storage() != b.storage()) return false;
  const auto [a0, a1] = byte_span(a);
  const auto [b0, b1] = byte_span(b);
  return a0 < b1 && b0 < a1;
}

bool same_view(const Tensor& a, const Tensor& b) {
  if ((a.impl()->is_meta() || b.impl()->is_meta()) && a.storage() != b.storage()) return false;
  return first_element(a) == first_element(b) && a.dtype() == b.dtype() && std::ranges::equal(a.sizes(), b.sizes()) &&
         std::ranges::equal(a.strides(), b.strides());
}

}  // namespace kiln
