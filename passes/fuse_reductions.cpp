// Reduction fusion (Note [Reduction fusion groups]).
#include "passes/fuse_reductions.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "passes/arguments.h"
#include "passes/fuse_column_reductions.h"
#include "passes/reduction_dims.h"
#include "passes/type_facts.h"

namespace kiln::passes {

namespace {

constexpr int64_t kEagerLongRow = 1 << 16;  // eager's kChunk (eager/kernels/cpu/reduce/per_capability)

int64_t product(std::vector<int64_t>::const_iterator a, std::vector<int64_t>::const_iterator b) {
  int64_t n = 1;
  for (; a != b; ++a) n *= *a;
  return n;
}

bool writes_in_place(const ir::Graph& g) {
  for (const ir::Node* n : g.nodes()) {
    if (n->kind() != ir::NodeKind::Op) continue;
    for (const SchemaArgument& a : n->op().schema().arguments()) {
      if (a.alias && a.alias->is_write) return true;
    }
  }
  return false;
}

bool is_reduction_kind(const std::string& kind) {
  return kind == "kiln::sum.dim_IntList" || kind == "kiln::mean.dim" || kind == "kiln::amax" || kind == "kiln::amin";
}

/// v is a tensor of `dtype`, PerColumn in (sizes, folds) with exactly the normalized dims' sizes.
bool norm_parameter(const ir::Value* v, const std::vector<int64_t>& sizes, size_t folds, DType dtype) {
  const auto vs = strided_cpu_sizes(v);
  return v->type().is_tensor() && dtype_of(v) == dtype && vs && vs->size() == folds &&
         row_shape_of(v, sizes, folds) == RowShape::PerColumn;
}

/// The number of outputs of norm forward node kind `kind` (native_layer_norm: y, mean, rstd; _fused_rms_norm:
/// y, rstd; layer_norm, rms_norm: y), or 0 when it is not one.
size_t norm_forward_outputs(const std::string& kind) {
  if (kind == "kiln::native_layer_norm") return 3;
  if (kind == "kiln::_fused_rms_norm") return 2;
  if (kind == "kiln::layer_norm" || kind == "kiln::rms_norm") return 1;
  return 0;
}

/// The normalized dims of norm node n when it fits a norm row group (Note [Norms as row groups]), else nullopt.
std::optional<size_t> fusible_norm_rows(const ir::Node& n) {
  const std::string kind = n.kind_name();
  const size_t forward_outputs = norm_forward_outputs(kind);
  if (forward_outputs == 0 && kind != "kiln::_norm_backward_input") return std::nullopt;
  const ir::Value* x = value_argument(n, "input");
  const ir::Attribute* shape = literal_argument(n, "normalized_shape");
  if (x == nullptr || shape == nullptr || shape->kind() != ir::Attribute::Kind::IntList) return std::nullopt;
  const auto sizes = strided_cpu_sizes(x);
  const auto dtype = dtype_of(x);
  if (!sizes || !is_contiguous(x) || !dtype || (*dtype != DType::Float32 && *dtype != DType::Float64)) return std::nullopt;
  const std::vector<int64_t>& normalized = shape->to_int_list();
  if (normalized.empty() || normalized.size() > sizes->size()) return std::nullopt;
  const size_t folds = normalized.size();
  if (!std::equal(normalized.begin(), normalized.end(), sizes->end() - static_cast<std::ptrdiff_t>(folds))) return std::nullopt;
  for (int64_t d : *sizes) {
    if (d == 0) return std::nullopt;
  }
  const auto is_none = [&](std::string_view name) {
    const ir::Attribute* a = literal_argument(n, name);
    return value_argument(n, name) == nullptr && a != nullptr && a->is_none();
  };
  // a parameter given (PerColumn over the normalized dims) or None
  const auto parameter_or_none = [&](std::string_view name) {
    const ir::Value* v = value_argument(n, name);
    return v != nullptr ? norm_parameter(v, *sizes, folds, *dtype) : is_none(name);
  };
  const auto per_row = [&](const ir::Value* v) {
    return v != nullptr && v->type().is_tensor() && dtype_of(v) == dtype && row_shape_of(v, *sizes, folds) == RowShape::PerRow;
  };
  if (forward_outputs != 0) {
    const bool layer_norm = kind == "kiln::native_layer_norm" || kind == "kiln::layer_norm";
    const ir::Attribute* eps = literal_argument(n, "eps");
    if (eps == nullptr || !(eps->kind() == ir::Attribute::Kind::Float || (!layer_norm && eps->is_none()))) return std::nullopt;
    if (n.outputs().size() != forward_outputs || !parameter_or_none("weight")) return std::nullopt;
    if (layer_norm && !parameter_or_none("bias")) return std::nullopt;
    if (row_shape_of(n.output(0), *sizes, folds, true) != RowShape::Element || dtype_of(n.output(0)) != dtype) return std::nullopt;
    for (size_t i = 1; i < forward_outputs; ++i) {
      if (row_shape_of(n.output(i), *sizes, folds, true) != RowShape::PerRow || dtype_of(n.output(i)) != dtype) return std::nullopt;
    }
    return folds;
  }
  const ir::Value* g = value_argument(n, "grad_out");
  if (g == nullptr || strided_cpu_sizes(g) != sizes || !is_contiguous(g) || dtype_of(g) != dtype) return std::nullopt;
  const ir::Value* mean = value_argument(n, "mean");
  if ((mean != nullptr ? !per_row(mean) : !is_none("mean")) || !per_row(value_argument(n, "rstd"))) return std::nullopt;
  if (!parameter_or_none("weight")) return std::nullopt;
  if (n.outputs().size() != 1 || row_shape_of(n.output(), *sizes, folds, true) != RowShape::Element ||
      dtype_of(n.output()) != dtype) {
    return std::nullopt;
  }
  return folds;
}

/// Whether pointwise node n fits the space (sizes, reduced_dims); reduced_dims 0 (no row yet):
/// an Element output and inputs of known sizes.
bool pointwise_fits(const ir::Node& n, const std::vector<int64_t>& sizes, size_t reduced_dims) {
  const auto out = row_shape_of(n.output(), sizes, reduced_dims, true);
  if (!out || (*out != RowShape::Element && *out != RowShape::PerRow)) return false;
  for (const ir::Value* v : n.inputs()) {
    if (reduced_dims == 0) {
      if (!strided_cpu_sizes(v)) return false;
      continue;
    }
    const auto in = row_shape_of(v, sizes, reduced_dims);
    if (!in) return false;
    if (*out == RowShape::PerRow && *in != RowShape::PerRow && *in != RowShape::Scalar) return false;
  }
  return true;
}

/// Whether pointwise node p may move into `group` when n joins it: p reads only values of one
/// kind that vary at most along one axis (PerColumn, or PerRow; Scalar), none the group computes,
/// and no reader of p stands before n (p is then computed where the group runs, after n).
bool pullable(const ir::Node& p, const ir::Node& n, const ReductionGroup& group,
              const std::function<bool(const ir::Node*)>& member,
              const std::function<bool(const ir::Node&)>& fusible) {
  if (p.kind() != ir::NodeKind::Op || p.outputs().size() != 1 || member(&p)) return false;
  if (fusible_reduction(p) || !fusible(p)) return false;
  for (const ir::Use& u : p.output()->uses()) {
    if (u.user != &n && !member(u.user) && (!u.user->in_node_list() || u.user->is_before(&n))) return false;
  }
  for (const ir::Value* v : p.inputs()) {
    if (member(v->node())) return false;
  }
  const auto out = row_shape_of(p.output(), group.sizes, group.reduced_dims, true);
  if (out != RowShape::PerColumn && out != RowShape::PerRow && out != RowShape::Scalar) return false;
  for (const ir::Value* v : p.inputs()) {
    const auto in = row_shape_of(v, group.sizes, group.reduced_dims);
    if (in != out && in != RowShape::Scalar) return false;
  }
  return true;
}

}  // namespace

bool is_norm_row_kind(const std::string& kind) {
  return norm_forward_outputs(kind) != 0 || kind == "kiln::_norm_backward_input";
}

std::optional<RowShape> row_shape_of(const ir::Value* v, const std::vector<int64_t>& sizes, size_t reduced_dims,
                                     bool as_output) {
  const auto vs = strided_cpu_sizes(v);
  if (!vs) return std::nullopt;
  const int64_t numel = product(vs->begin(), vs->end());
  if (*vs == sizes) return is_contiguous(v) ? std::optional(RowShape::Element) : std::nullopt;
  if (reduced_dims == 0 || reduced_dims > sizes.size()) {
    if (numel == 1 && !as_output) return RowShape::Scalar;
    return std::nullopt;
  }
  const size_t outer = sizes.size() - reduced_dims;
  std::vector<int64_t> per_row(sizes.begin(), sizes.begin() + static_cast<std::ptrdiff_t>(outer));
  const bool row_shaped = [&] {
    if (*vs == per_row) return true;
    std::vector<int64_t> kept = per_row;
    kept.resize(sizes.size(), 1);
    return *vs == kept;
  }();
  if (as_output && row_shaped) return is_contiguous(v) ? std::optional(RowShape::PerRow) : std::nullopt;
  if (numel == 1) return RowShape::Scalar;
  if (!is_contiguous(v)) return std::nullopt;  // a size-1 dim's stride is free (is_contiguous)
  if (row_shaped) return RowShape::PerRow;
  // PerColumn: right-aligned, the row dims' sizes and ones before them.
  if (vs->size() > sizes.size() || vs->size() < reduced_dims) return std::nullopt;
  const size_t lead = sizes.size() - vs->size();
  for (size_t d = 0; d < vs->size(); ++d) {
    const size_t sd = d + lead;
    const int64_t want = sd < outer ? 1 : sizes[sd];
    if ((*vs)[d] != want) return std::nullopt;
  }
  return RowShape::PerColumn;
}

std::optional<size_t> fusible_reduction(const ir::Node& n) {
  if (n.kind() != ir::NodeKind::Op) return std::nullopt;
  if (is_norm_row_kind(n.kind_name())) return fusible_norm_rows(n);
  if (!is_reduction_kind(n.kind_name())) return std::nullopt;
  const std::optional<ReducedDims> reduced = literal_reduced_dims(n);
  if (!reduced) return std::nullopt;
  const auto& [sizes, dims] = *reduced;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t want = static_cast<int64_t>(sizes.size() - dims.size() + i);
    if (dims[i] != want || sizes[static_cast<size_t>(want)] == 0) return std::nullopt;
  }
  // One row longer than eager's chunk: eager splits it across threads and adds the chunks' sums in double
  // (a row kernel runs a row on one thread, and adds as one chunk).
  const int64_t cols = product(sizes.end() - static_cast<std::ptrdiff_t>(dims.size()), sizes.end());
  if (cols == product(sizes.begin(), sizes.end()) && cols > kEagerLongRow) return std::nullopt;
  // The result is PerRow in the input's space (or Element, where a row is one column).
  const auto result = row_shape_of(n.output(), sizes, dims.size(), true);
  if (result != RowShape::PerRow && result != RowShape::Element) return std::nullopt;
  return dims.size();
}

std::vector<ReductionGroup> fuse_reductions(const ir::Graph& g, const std::function<bool(const ir::Node&)>& fusible) {
  if (writes_in_place(g)) return {};
  std::vector<ReductionGroup> groups;
  GroupIndex group_of;
  for (const ir::Node* n : g.nodes()) {
    if (n->kind() != ir::NodeKind::Op) continue;
    const bool norm = is_norm_row_kind(n->kind_name());
    if (n->outputs().size() != 1 && !norm) continue;
    const std::optional<size_t> folds = fusible_reduction(*n);
    if (norm && !folds) continue;
    std::vector<int64_t> space;  // the element shape n implies for a new group
    if (folds) {
      space = *concrete_sizes(first_argument(*n));
    } else {
      const auto out = strided_cpu_sizes(n->output());
      if (!out || !is_contiguous(n->output())) continue;
      bool typed = true;
      for (const ir::Value* v : n->inputs()) typed = typed && strided_cpu_sizes(v).has_value();
      if (!typed || !fusible(*n)) continue;
      space = *out;
    }
    // Whether n may join group gi: it fits gi's space (a reduction: every member fits its row), and
    // no node outside gi before n reads a member's result.
    const auto may_join = [&](size_t gi) {
      const ReductionGroup& group = groups[gi];
      if (folds) {
        if (group.sizes != space || (group.reduced_dims != 0 && group.reduced_dims != *folds)) return false;
        if (group.reduced_dims != 0 && group.norm_rows != norm) return false;  // one fold order per kernel
        for (const ir::Node* m : group.members.nodes) {
          if (group.reduced_dims != 0) break;  // the members already fit this row
          if (!fusible_reduction(*m) && !pointwise_fits(*m, group.sizes, *folds)) return false;
        }
      } else if (!pointwise_fits(*n, group.sizes, group.reduced_dims)) {
        return false;
      }
      return !reads_outside_before(group.members.nodes, gi, n, group_of);
    };
    std::optional<size_t> join;
    for (const ir::Value* v : n->inputs()) {
      const auto it = group_of.find(v->node());
      if (it == group_of.end() || (join && *join >= it->second)) continue;
      if (may_join(it->second)) join = it->second;
    }
    if (!join && !groups.empty() && may_join(groups.size() - 1)) join = groups.size() - 1;
    if (!join) {
      // A pointwise node starts a group only where its output is the element shape.
      if (!folds && !pointwise_fits(*n, space, 0)) continue;
      groups.emplace_back();
      groups.back().sizes = space;
      join = groups.size() - 1;
    }
    ReductionGroup& group = groups[*join];
    const bool row_fixed_now = folds && group.reduced_dims == 0;
    if (folds) group.reduced_dims = *folds;
    if (norm) group.norm_rows = true;
    group.members.nodes.push_back(n);
    group_of[n] = *join;
    if (group.reduced_dims == 0) continue;
    // Row-invariant producers read by n (or, when n fixed the row, by any member) move into the group
    // (a norm's weight or statistics cast to float32), in front: they read nothing the group computes.
    const size_t gi = *join;
    const auto member = [&](const ir::Node* m) {
      const auto it = group_of.find(m);
      return it != group_of.end() && it->second == gi;
    };
    std::vector<const ir::Node*> readers = {n};
    if (row_fixed_now) readers = group.members.nodes;
    std::vector<const ir::Node*> pulled;
    for (const ir::Node* reader : readers) {
      for (const ir::Value* v : reader->inputs()) {
        const ir::Node* p = v->node();
        if (!pullable(*p, *n, group, member, fusible)) continue;
        const auto it = group_of.find(p);
        if (it != group_of.end()) {
          // Only from a group without a row yet (no member there reads p: p's readers are here or later).
          if (groups[it->second].reduced_dims != 0) continue;
          std::vector<const ir::Node*>& others = groups[it->second].members.nodes;
          others.erase(std::find(others.begin(), others.end(), p));
        }
        group_of[p] = gi;
        pulled.push_back(p);
      }
    }
    std::sort(pulled.begin(), pulled.end(), [](const ir::Node* a, const ir::Node* b) { return a->is_before(b); });
    group.members.nodes.insert(group.members.nodes.begin(), pulled.begin(), pulled.end());
  }
  // Inputs and outputs of each group; groups without a reduction are dropped.
  std::unordered_set<const ir::Value*> returned(g.outputs().begin(), g.outputs().end());
  std::vector<ReductionGroup> kept;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    ReductionGroup& group = groups[gi];
    if (group.reduced_dims == 0 || group.members.nodes.empty()) continue;
    collect_group_boundary(group.members, gi, group_of, returned);
    kept.push_back(std::move(group));
  }
  std::unordered_set<const ir::Node*> taken;
  for (const ReductionGroup& group : kept) taken.insert(group.members.nodes.begin(), group.members.nodes.end());
  for (ReductionGroup& group :
       fuse_column_reductions(g, fusible, [&](const ir::Node* m) { return taken.count(m) != 0; })) {
    kept.push_back(std::move(group));
  }
  std::sort(kept.begin(), kept.end(), [](const ReductionGroup& a, const ReductionGroup& b) {
    return a.members.nodes.back()->is_before(b.members.nodes.back());
  });
  return kept;
}

}  // namespace kiln::passes
