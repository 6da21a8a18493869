// Facts read from recorded value types.
#include "passes/type_facts.h"

#include <algorithm>

namespace kiln::passes {

std::optional<DType> dtype_of(const ir::Value* v) {
  if (v == nullptr || !v->type().is_tensor()) return std::nullopt;
  return v->type().tensor_type().dtype;
}

std::optional<size_t> rank_of(const ir::Value* v) {
  if (v == nullptr || !v->type().is_tensor() || !v->type().tensor_type().sizes) return std::nullopt;
  return v->type().tensor_type().sizes->size();
}

std::optional<std::vector<int64_t>> concrete_sizes(const ir::Value* v) {
  if (!rank_of(v)) return std::nullopt;
  std::vector<int64_t> out;
  for (const ir::SymbolicSize& s : *v->type().tensor_type().sizes) {
    if (!s.is_concrete()) return std::nullopt;
    out.push_back(s.value());
  }
  return out;
}

bool is_contiguous(const ir::Value* v) {
  const auto sizes = concrete_sizes(v);
  if (!sizes || !v->type().tensor_type().strides) return false;
  const auto& strides = *v->type().tensor_type().strides;
  int64_t expected = 1;
  for (size_t d = sizes->size(); d-- > 0;) {
    const ir::SymbolicSize& s = strides[d];
    if ((*sizes)[d] != 1 && (!s.is_concrete() || s.value() != expected)) return false;
    expected *= (*sizes)[d];
  }
  return true;
}

std::vector<ir::SymbolicSize> contiguous_strides(const std::vector<ir::SymbolicSize>& sizes) {
  std::vector<ir::SymbolicSize> out(sizes.size(), ir::SymbolicSize(1));
  int64_t stride = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    out[d] = ir::SymbolicSize(stride);
    stride *= std::max<int64_t>(sizes[d].value(), 1);
  }
  return out;
}

std::optional<int64_t> wrap_dim(int64_t d, std::optional<size_t> rank) {
  if (d >= 0) return (!rank || d < static_cast<int64_t>(*rank)) ? std::optional(d) : std::nullopt;
  if (!rank || d + static_cast<int64_t>(*rank) < 0) return std::nullopt;
  return d + static_cast<int64_t>(*rank);
}

}  // namespace kiln::passes
