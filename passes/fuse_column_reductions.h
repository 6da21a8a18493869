// Column reduction fusion: a sum or mean over the leading dims of a value
// (a bias's or a norm weight's gradient: sum over the batch of [N, C]) with
// its pointwise prologue, as one column-kernel group. fuse_reductions calls
// it for what its row groups leave. See Note [Column reduction groups].
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "passes/fuse_reductions.h"

namespace kiln::passes {

// Note [Column reduction groups]
// ------------------------------
// A column group is a ReductionGroup with `columns` set: its space is
// `sizes` (the element shape, contiguous) whose first `reduced_dims` dims
// are folded (rows: their product) and the rest kept (cols: their product,
// more than one; a single kept element is a row reduction, which eager
// computes differently). Its reductions are kiln::sum.dim_IntList and
// mean.dim (dtype None) of a float32/float64 Element value over exactly the
// leading `reduced_dims` dims; each result is PerColumn (the kept dims, with
// or without the folded ones as 1s). Its prologue is every pointwise node
// `fusible` accepts, reached from a reduction's input through Element
// values, whose inputs are Element, PerColumn (every kept dim's size,
// right-aligned, the folded dims 1 or absent) or Scalar, and each of whose readers outside the group stands
// after the group's last reduction (the group runs there). A group without
// a prologue node is left to eager's reduction (nothing to fuse). No
// epilogue: a PerColumn value's users stay outside.

// Note [Norm parameter gradients as column groups]
// ------------------------------------------------
// layer_norm's and rms_norm's weight and bias gradients, kiln::_norm_backward_weight(g, x,
// normalized_shape, mean, rstd) = sum over rows of g * ((x - mean) * rstd) and
// kiln::_norm_backward_bias(g, normalized_shape) = sum over rows of g, are column reductions over
// the leading (non-normalized) dims, but eager adds them in its own order (norm_backward_params in
// eager/kernels/cpu/nn/per_capability/NormKernel.cpp: fixed chunks of rows, each summed row by row
// with an fma into a T accumulator, the chunks' sums added in order). A weight gradient node of a
// float32/float64 contiguous CPU input starts a column group with `norm_params` set; the bias
// gradient of the same g joins it (horizontal: g is read once), and so does g's pointwise
// prologue. mean and rstd are PerRow operands (one value per row: the stats' shape, the
// normalized dims 1). codegen lowers the group's folds in eager's norm order
// (Kernel::norm_chunk_rows, Note [Column reduction kernels]).

/// The number of leading dims a norm parameter gradient node folds (Note above), when n is one the
/// column fusion takes.
[[nodiscard]] std::optional<size_t> fusible_norm_params(const ir::Node& n);

/// The RowShape (Element, PerColumn or Scalar) of v in the column space (sizes, reduced leading dims).
/// `as_output`: only Element, or PerColumn as a reduction's result (the kept sizes, with or without the
/// folded dims as 1s).
[[nodiscard]] std::optional<RowShape> column_shape_of(const ir::Value* v, const std::vector<int64_t>& sizes,
                                                      size_t reduced_dims, bool as_output = false);

/// The number of leading dims reduction node n folds, when n is a column reduction (Note above).
[[nodiscard]] std::optional<size_t> fusible_column_reduction(const ir::Node& n);

/// Given g, the pointwise predicate of fuse_pointwise and the nodes row groups took.
/// Do    fuse_column_reductions(g, fusible, taken).
/// Result the column groups of g (Note [Column reduction groups]), none holding a taken node.
[[nodiscard]] std::vector<ReductionGroup> fuse_column_reductions(
    const ir::Graph& g, const std::function<bool(const ir::Node&)>& fusible,
    const std::function<bool(const ir::Node*)>& taken);

}  // namespace kiln::passes
