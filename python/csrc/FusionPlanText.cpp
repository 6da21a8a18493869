// The fusion passes' plans as text (FusionPlanText.h).
#include "python/csrc/FusionPlanText.h"

#include <optional>
#include <vector>

#include "codegen/FusionKernel.h"
#include "passes/arguments.h"
#include "passes/fuse_column_reductions.h"
#include "passes/fuse_pointwise.h"
#include "passes/fuse_reductions.h"
#include "passes/group_multi_tensor.h"
#include "passes/reduction_dims.h"

namespace kiln::python {

namespace {

std::string ints(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string values(const std::vector<const ir::Value*>& v, char open, char close) {
  std::string s(1, open);
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", %" : "%") + v[i]->name();
  return s + close;
}

/// "[%a, %b] reads (%x) returns (%b)": the members by their first result, the boundary.
std::string members(const passes::FusionGroup& group) {
  std::vector<const ir::Value*> results;
  for (const ir::Node* n : group.nodes) results.push_back(n->output());
  return values(results, '[', ']') + " reads " + values(group.inputs, '(', ')') + " returns " +
         values(group.outputs, '(', ')');
}

std::string pointwise_lines(const std::vector<passes::FusionGroup>& groups) {
  std::string s;
  for (size_t i = 0; i < groups.size(); ++i) s += "pointwise group " + std::to_string(i) + ": " + members(groups[i]) + "\n";
  return s;
}

std::string reduction_lines(const std::vector<passes::ReductionGroup>& groups) {
  std::string s;
  for (size_t i = 0; i < groups.size(); ++i) {
    const passes::ReductionGroup& g = groups[i];
    s += g.columns ? (g.norm_params ? "column group (norm parameters) " : "column group ") : "row group ";
    s += std::to_string(i) + " " + ints(g.sizes) + (g.columns ? " folding " : " reducing ") +
         std::to_string(g.reduced_dims) + ": " + members(g.members) + "\n";
  }
  return s;
}

}  // namespace

std::string fuse_pointwise_plan(const ir::Graph& g) {
  return pointwise_lines(passes::fuse_pointwise(g, codegen::has_kernel_math));
}

std::string fuse_reductions_plan(const ir::Graph& g) {
  return reduction_lines(passes::fuse_reductions(g, codegen::has_kernel_math));
}

std::string fuse_column_reductions_plan(const ir::Graph& g) {
  return reduction_lines(
      passes::fuse_column_reductions(g, codegen::has_kernel_math, [](const ir::Node*) { return false; }));
}

std::string group_multi_tensor_plan(const ir::Graph& g) {
  const std::vector<passes::FusionGroup> groups = passes::fuse_pointwise(g, codegen::has_kernel_math);
  std::vector<std::optional<uint64_t>> keys;
  for (const passes::FusionGroup& group : groups) {
    const std::optional<codegen::FusionKernel> fk = codegen::lower_fusion_group(group);
    const bool cpu = !group.inputs.empty() && group.inputs.front()->type().is_tensor() &&
                     group.inputs.front()->type().tensor_type().device.is_cpu();
    const bool candidate = cpu && fk && fk->kernel.contiguous && fk->kernel.input_dtypes.size() <= 64;
    keys.push_back(candidate ? std::optional<uint64_t>(fk->kernel.hash()) : std::nullopt);
  }
  std::string s = pointwise_lines(groups);
  for (const std::vector<size_t>& set : passes::group_multi_tensor(groups, keys)) {
    s += "multi-tensor step: groups ";
    for (size_t i = 0; i < set.size(); ++i) s += (i ? ", " : "") + std::to_string(set[i]);
    s += "\n";
  }
  return s;
}

std::string reduction_dims_plan(const ir::Graph& g) {
  std::string s;
  for (const ir::Node* n : g.nodes()) {
    if (n->kind() != ir::NodeKind::Op || n->inputs().empty() || passes::literal_argument(*n, "dim") == nullptr) continue;
    const std::optional<passes::ReducedDims> r = passes::literal_reduced_dims(*n);
    const std::string name = n->outputs().empty() ? n->kind_name() : "%" + n->outputs().front()->name();
    s += r ? name + ": sizes " + ints(r->sizes) + " reduced dims " + ints(r->dims) + "\n"
           : name + ": no literal reduced dims\n";
  }
  return s;
}

}  // namespace kiln::python
