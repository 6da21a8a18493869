// Reduction fusion: groups each reduction over the trailing (contiguous) dims
// with its pointwise prologue and epilogue into one row-kernel group, so
// softmax, log_softmax, layer_norm and rms_norm (decomposed) and their
// backward each become one or two kernels. See Note [Reduction fusion groups].
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/Graph.h"
#include "passes/fuse_pointwise.h"

namespace kiln::passes {

// Note [Reduction fusion groups]
// ------------------------------
// A group lives in a row space: `sizes` (the element shape, row-major
// contiguous) whose last `reduced_dims` dims are the row (cols = their
// product, rows = the product of the rest). Each value a member reads or
// writes has a RowShape in that space: Element (sizes, contiguous), PerRow
// (sizes with the row dims 1 or dropped: a keepdim or plain reduction's
// result), PerColumn (the row dims' sizes broadcast over the rows: a norm's
// weight) or Scalar (one element). Members are
//  - reductions: kiln::sum.dim_IntList, mean.dim (dtype None), amax, amin of a
//    float32/float64 Element value over exactly the trailing `reduced_dims`
//    dims, each of concrete nonzero size (keepdim either way), and not one
//    row of more than 65536 elements (eager splits that row across threads);
//  - pointwise nodes `fusible` accepts (the kernel math table) whose output is
//    Element, or PerRow with only PerRow and Scalar inputs (uniform along the
//    row), and whose inputs all have a RowShape.
// Nodes join in graph order, as in fuse_pointwise (Note [Pointwise fusion
// groups]): a node joins the latest group producing one of its inputs, else
// the latest group, when no outside node before it reads a member's result.
// A group starts without a row (pointwise members of its shape only); the
// first reduction fixes `reduced_dims` when every member fits that space.
// A PerColumn, PerRow or Scalar pointwise node with inputs of its own kind,
// none of whose readers stands before a node joining a group with a row,
// moves into it when that node reads it (a norm's weight, or its saved
// statistics, cast to float32: cheaper recomputed than a kernel of its own).
// Groups that end with no reduction are dropped: their nodes are left to
// fuse_pointwise. Candidates are typed as fuse_pointwise's (known CPU sizes
// and strides), and graphs that write in place are not fused.

// Note [Norms as row groups]
// --------------------------
// A norm's decomposition differs from eager's norm kernels by a few ulp, which
// AdamW magnifies in a training step (python/kiln/compiler/_backends.py keeps a
// whole step's composites whole). Norm nodes join row groups whole instead: a
// native_layer_norm or layer_norm (weight and bias each given or None; outputs
// y, mean, rstd, or y), an _fused_rms_norm or rms_norm (weight given or None,
// eps a float or None; outputs y, rstd, or y) or an _norm_backward_input (mean
// given: layer_norm's; None: rms_norm's) of a contiguous float32/float64
// input is a reduction member over its normalized dims, with the pointwise
// prologue and epilogue around it (a residual add before the norm, the
// gradient add after its backward). The row kernel computes what eager's norm
// kernels do, in their order (codegen/RowKernel.cpp; Note [Row folds in eager's
// norm order] in codegen/llvm/RowLowering.cpp), the last partial vector of a
// row included: bit for bit where the host has FMA (AVX2/AVX-512); elsewhere the
// lowering declines and the node stays an eager step. On the CPU, graphs that
// decompose composites keep such norms whole too (codegen::lowers_norm_whole,
// runtime/CompiledGraph.cpp). A group has one fold order: a norm node and a
// plain reduction do not share a group.

enum class RowShape { Element, PerRow, PerColumn, Scalar };

struct ReductionGroup {
  FusionGroup members;
  std::vector<int64_t> sizes;  // the element shape
  size_t reduced_dims = 0;     // the trailing dims the reductions fold (columns: the leading dims)
  bool columns = false;        // a column group (Note [Column reduction groups], fuse_column_reductions.h)
  // A column group of norm parameter gradients (_norm_backward_weight / _bias), which fold in the
  // order of eager's norm_backward_params (Note [Norm parameter gradients as column groups]).
  bool norm_params = false;
  // A row group around norm nodes (layer_norm, rms_norm, their input gradient), whose folds add in the order of
  // eager's norm kernels (Note [Norms as row groups]); such a group holds no other reduction.
  bool norm_rows = false;
};

/// The RowShape of v (concrete sizes and strides) in the space (sizes, reduced_dims), or nullopt.
/// `as_output`: PerRow before Scalar (a one-row space's per-row result is one element).
[[nodiscard]] std::optional<RowShape> row_shape_of(const ir::Value* v, const std::vector<int64_t>& sizes,
                                                   size_t reduced_dims, bool as_output = false);

/// Whether `kind` is a norm node a norm row group takes whole (Note [Norms as row groups]).
[[nodiscard]] bool is_norm_row_kind(const std::string& kind);

/// The number of trailing dims reduction node n folds, when n is a reduction fuse_reductions takes.
[[nodiscard]] std::optional<size_t> fusible_reduction(const ir::Node& n);

/// Given g and the pointwise predicate of fuse_pointwise (kernel math, and no autograd history).
/// Do    fuse_reductions(g, fusible).
/// Result the reduction groups of g (each with at least one reduction) in the order of their last
///        nodes, then column groups (fuse_column_reductions.h) of what those leave, in one order;
///        every other node is left for fuse_pointwise or eager.
[[nodiscard]] std::vector<ReductionGroup> fuse_reductions(const ir::Graph& g,
                                                          const std::function<bool(const ir::Node&)>& fusible);

}  // namespace kiln::passes
