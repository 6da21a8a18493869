// Column reduction fusion (Note [Column reduction groups]).
#include "passes/fuse_column_reductions.h"

#include <algorithm>
#include <string>
#include <unordered_set>

#include "passes/arguments.h"
#include "passes/reduction_dims.h"
#include "passes/type_facts.h"

namespace kiln::passes {

namespace {

int64_t product(const std::vector<int64_t>& s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t d = from; d < to; ++d) n *= s[d];
  return n;
}

}  // namespace

std::optional<RowShape> column_shape_of(const ir::Value* v, const std::vector<int64_t>& sizes, size_t reduced_dims,
                                        bool as_output) {
  const auto vs = strided_cpu_sizes(v);
  if (!vs || reduced_dims == 0 || reduced_dims >= sizes.size()) return std::nullopt;
  if (*vs == sizes) return is_contiguous(v) ? std::optional(RowShape::Element) : std::nullopt;
  const std::vector<int64_t> kept(sizes.begin() + static_cast<std::ptrdiff_t>(reduced_dims), sizes.end());
  if (as_output) {
    std::vector<int64_t> kept_dims(reduced_dims, 1);
    kept_dims.insert(kept_dims.end(), kept.begin(), kept.end());
    if ((*vs == kept || *vs == kept_dims) && is_contiguous(v)) return RowShape::PerColumn;
    return std::nullopt;
  }
  if (product(*vs, 0, vs->size()) == 1) return RowShape::Scalar;
  // PerRow: the folded dims' sizes, the kept dims 1 (a norm's mean and rstd).
  if (vs->size() == sizes.size() && is_contiguous(v)) {
    bool per_row = true;
    for (size_t d = 0; d < sizes.size(); ++d) per_row = per_row && (*vs)[d] == (d < reduced_dims ? sizes[d] : 1);
    if (per_row) return RowShape::PerRow;
  }
  // PerColumn: every kept dim's size (one value per column), and ones (or nothing) before them.
  if (vs->size() > sizes.size() || vs->size() < kept.size() || !is_contiguous(v)) return std::nullopt;
  const size_t lead = sizes.size() - vs->size();
  for (size_t d = 0; d < vs->size(); ++d) {
    const size_t sd = d + lead;
    if ((*vs)[d] != (sd < reduced_dims ? 1 : sizes[sd])) return std::nullopt;
  }
  return RowShape::PerColumn;
}

std::optional<size_t> fusible_column_reduction(const ir::Node& n) {
  if (n.kind() != ir::NodeKind::Op) return std::nullopt;
  const std::string kind = n.kind_name();
  if (kind != "kiln::sum.dim_IntList" && kind != "kiln::mean.dim") return std::nullopt;
  const std::optional<ReducedDims> reduced = literal_reduced_dims(n);
  if (!reduced) return std::nullopt;
  const auto& [sizes, dims] = *reduced;
  if (std::adjacent_find(dims.begin(), dims.end()) != dims.end()) return std::nullopt;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != static_cast<int64_t>(i) || sizes[i] == 0) return std::nullopt;
  }
  const size_t k = dims.size();
  // Eager reduces across rows only when more than one element is kept (else: contiguous rows).
  if (k >= sizes.size() || product(sizes, k, sizes.size()) <= 1) return std::nullopt;
  if (column_shape_of(n.output(), sizes, k, true) != RowShape::PerColumn) return std::nullopt;
  return k;
}

std::optional<size_t> fusible_norm_params(const ir::Node& n) {
  if (n.kind() != ir::NodeKind::Op || n.outputs().size() != 1) return std::nullopt;
  const std::string kind = n.kind_name();
  const bool weight = kind == "kiln::_norm_backward_weight";
  if (!weight && kind != "kiln::_norm_backward_bias") return std::nullopt;
  const ir::Value* g = value_argument(n, "grad_out");
  const ir::Attribute* shape = literal_argument(n, "normalized_shape");
  if (g == nullptr || shape == nullptr || shape->kind() != ir::Attribute::Kind::IntList) return std::nullopt;
  const auto sizes = strided_cpu_sizes(g);
  const auto dtype = dtype_of(g);
  if (!sizes || !is_contiguous(g) || !dtype || (*dtype != DType::Float32 && *dtype != DType::Float64)) return std::nullopt;
  const std::vector<int64_t>& normalized = shape->to_int_list();
  if (normalized.empty() || normalized.size() >= sizes->size()) return std::nullopt;
  const size_t k = sizes->size() - normalized.size();
  if (!std::equal(normalized.begin(), normalized.end(), sizes->begin() + static_cast<std::ptrdiff_t>(k))) return std::nullopt;
  for (int64_t s : *sizes) {
    if (s == 0) return std::nullopt;
  }
  if (product(*sizes, 0, k) < 2) return std::nullopt;  // one row: not a column fold
  const auto out = strided_cpu_sizes(n.output());
  if (!out || *out != normalized || !is_contiguous(n.output()) || dtype_of(n.output()) != dtype) return std::nullopt;
  if (weight) {
    const ir::Value* x = value_argument(n, "input");
    const ir::Value* rstd = value_argument(n, "rstd");
    const ir::Value* mean = value_argument(n, "mean");
    const ir::Attribute* no_mean = literal_argument(n, "mean");
    if (x == nullptr || rstd == nullptr || (mean == nullptr && (no_mean == nullptr || !no_mean->is_none()))) {
      return std::nullopt;
    }
    if (strided_cpu_sizes(x) != sizes || !is_contiguous(x) || dtype_of(x) != dtype) return std::nullopt;
    for (const ir::Value* stat : {rstd, mean}) {
      if (stat == nullptr) continue;
      if (!stat->type().is_tensor() || dtype_of(stat) != dtype ||
          column_shape_of(stat, *sizes, k) != RowShape::PerRow) {
        return std::nullopt;
      }
    }
  }
  return k;
}

std::vector<ReductionGroup> fuse_column_reductions(const ir::Graph& g,
                                                   const std::function<bool(const ir::Node&)>& fusible,
                                                   const std::function<bool(const ir::Node*)>& taken) {
  std::vector<ReductionGroup> groups;
  GroupIndex group_of;
  for (const ir::Node* n : g.nodes()) {
    if (taken(n) || group_of.count(n)) continue;
    const bool norm = n->kind_name() == "kiln::_norm_backward_weight";
    const std::optional<size_t> folds = norm ? fusible_norm_params(*n) : fusible_column_reduction(*n);
    if (!folds) continue;
    const size_t gi = groups.size();
    ReductionGroup group;
    group.columns = true;
    group.norm_params = norm;
    group.sizes = *strided_cpu_sizes(first_argument(*n));
    group.reduced_dims = *folds;
    group_of[n] = gi;
    std::vector<const ir::Node*> members = {n};
    if (norm) {  // the bias gradient of the same g joins, where every reader of it stands after n
      for (const ir::Use& u : first_argument(*n)->uses()) {
        const ir::Node* b = u.user;
        if (b == n || taken(b) || group_of.count(b) || b->kind_name() != "kiln::_norm_backward_bias") continue;
        if (u.index != 0 || fusible_norm_params(*b) != folds) continue;
        bool after = true;
        for (const ir::Use& bu : b->output()->uses()) {
          after = after && (bu.user == g.return_node() || (bu.user->in_node_list() && n->is_before(bu.user)));
        }
        if (!after) continue;
        group_of[b] = gi;
        members.push_back(b);
        break;
      }
    }
    // The prologue: producers of Element values, back from n's input.
    std::vector<const ir::Node*> frontier = {n};
    while (!frontier.empty()) {
      const ir::Node* m = frontier.back();
      frontier.pop_back();
      for (const ir::Value* v : m->inputs()) {
        const ir::Node* p = v->node();
        if (p->kind() != ir::NodeKind::Op || p->outputs().size() != 1 || taken(p) || group_of.count(p)) continue;
        if (fusible_reduction(*p) || fusible_column_reduction(*p) || fusible_norm_params(*p) || !fusible(*p)) continue;
        if (column_shape_of(p->output(), group.sizes, group.reduced_dims) != RowShape::Element) continue;
        bool fits = true;
        for (const ir::Value* in : p->inputs()) fits = fits && column_shape_of(in, group.sizes, group.reduced_dims);
        for (const ir::Use& u : p->output()->uses()) {
          const auto it = group_of.find(u.user);
          const bool member = it != group_of.end() && it->second == gi;
          const bool after = u.user == g.return_node() || (u.user->in_node_list() && n->is_before(u.user));
          fits = fits && (member || after);
        }
        if (!fits) continue;
        group_of[p] = gi;
        members.push_back(p);
        frontier.push_back(p);
      }
    }
    if (members.size() == 1) {  // no prologue: eager's reduction alone does as well
      group_of.erase(n);
      continue;
    }
    // The group runs at its last member (a joined bias gradient may stand after n): every reader
    // outside the group stands after that.
    const ir::Node* last = *std::max_element(members.begin(), members.end(),
                                             [](const ir::Node* a, const ir::Node* b) { return a->is_before(b); });
    bool readers_after = true;
    for (const ir::Node* m : members) {
      for (const ir::Use& u : m->output()->uses()) {
        const auto it = group_of.find(u.user);
        if (it != group_of.end() && it->second == gi) continue;
        readers_after = readers_after && (u.user == g.return_node() || (u.user->in_node_list() && last->is_before(u.user)));
      }
    }
    if (!readers_after) {
      for (const ir::Node* m : members) group_of.erase(m);
      continue;
    }
    std::sort(members.begin(), members.end(), [](const ir::Node* a, const ir::Node* b) { return a->is_before(b); });
    group.members.nodes = std::move(members);
    groups.push_back(std::move(group));
  }
  std::unordered_set<const ir::Value*> returned(g.outputs().begin(), g.outputs().end());
  for (size_t gi = 0; gi < groups.size(); ++gi) collect_group_boundary(groups[gi].members, gi, group_of, returned);
  return groups;
}

}  // namespace kiln::passes
