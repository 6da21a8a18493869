// What row and column reduction fusion both ask of a reduction node before
// deciding whether its dims fit their kernel: concrete CPU sizes, and the
// node's literal reduced dims (Notes [Reduction fusion groups], [Column
// reduction groups]).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/Graph.h"

namespace kiln::passes {

/// Concrete sizes of a CPU tensor whose strides are all known and concrete, or nullopt.
[[nodiscard]] std::optional<std::vector<int64_t>> strided_cpu_sizes(const ir::Value* v);

/// A reduction's input sizes and its reduced dims (wrapped, sorted ascending; a repeat kept).
struct ReducedDims {
  std::vector<int64_t> sizes;
  std::vector<int64_t> dims;
};

/// The reduced dims of single-input, single-output reduction node `n` when its input is a contiguous
/// float32/float64 CPU tensor with concrete sizes and strides, the output keeps that dtype, no dtype is
/// requested and `dim` is a non-empty literal int list; nullopt otherwise.
[[nodiscard]] std::optional<ReducedDims> literal_reduced_dims(const ir::Node& n);

}  // namespace kiln::passes
