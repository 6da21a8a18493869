// The fusion passes' plans as text (they do not rewrite the graph: they return
// groups the runtime executes), one line per group, so IR-text fixtures can
// CHECK them (tests/python/compiler/pass_fixtures/, kiln._C._passes).
#pragma once

#include <string>

#include "ir/Graph.h"

namespace kiln::python {

/// passes::fuse_pointwise(g, codegen::has_kernel_math), one line per group:
/// "pointwise group 0: [%a, %b] reads (%x, %y) returns (%b)".
[[nodiscard]] std::string fuse_pointwise_plan(const ir::Graph& g);

/// passes::fuse_reductions(g, codegen::has_kernel_math) (row groups, then the column groups of what they
/// leave): "row group 0 [4, 8] reducing 1: [...] reads (...) returns (...)"; "column group 1 [16, 8]
/// folding 1: ..." ("column group (norm parameters)" for a norm parameter gradient group).
[[nodiscard]] std::string fuse_reductions_plan(const ir::Graph& g);

/// passes::fuse_column_reductions(g, codegen::has_kernel_math, no node taken), as fuse_reductions_plan.
[[nodiscard]] std::string fuse_column_reductions_plan(const ir::Graph& g);

/// fuse_pointwise's groups (as fuse_pointwise_plan), then passes::group_multi_tensor over them with the
/// runtime's kernel keys (a contiguous CPU kernel of at most 64 inputs: its structural hash; the runtime
/// also gives a 1-element group the dense kernel of the same math, which this plan does not):
/// "multi-tensor step: groups 0, 2".
[[nodiscard]] std::string group_multi_tensor_plan(const ir::Graph& g);

/// passes::literal_reduced_dims of each single-input op node with a `dim` argument:
/// "%s: sizes [4, 8] reduced dims [1]" or "%s: no literal reduced dims".
[[nodiscard]] std::string reduction_dims_plan(const ir::Graph& g);

}  // namespace kiln::python
