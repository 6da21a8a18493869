// What a value's recorded type says about it (dtype, rank, sizes, layout),
// for the passes that only rewrite where the types prove a rewrite safe.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/Graph.h"

namespace kiln::passes {

/// The dtype of a tensor value when known (nullopt for unknown, non-tensor or null v).
[[nodiscard]] std::optional<DType> dtype_of(const ir::Value* v);
/// The rank of a tensor value when known.
[[nodiscard]] std::optional<size_t> rank_of(const ir::Value* v);
/// The sizes of a tensor value when all are concrete.
[[nodiscard]] std::optional<std::vector<int64_t>> concrete_sizes(const ir::Value* v);
/// Given %x : f32[2, 3]{3, 1}.   Do is_contiguous(%x).   Result true: the recorded
/// strides are row-major (a size-1 dim may have any stride). False when sizes
/// or strides are unknown or symbolic.
[[nodiscard]] bool is_contiguous(const ir::Value* v);
/// Row-major strides for concrete sizes.
[[nodiscard]] std::vector<ir::SymbolicSize> contiguous_strides(const std::vector<ir::SymbolicSize>& sizes);
/// d wrapped into [0, rank) (a negative d counts from the end; needs the rank),
/// or nullopt when out of range or the rank is needed but unknown.
[[nodiscard]] std::optional<int64_t> wrap_dim(int64_t d, std::optional<size_t> rank);

}  // namespace kiln::passes
