// Pointwise fusion (Note [Pointwise fusion groups]).
#include "passes/fuse_pointwise.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "eager/dispatch/Dispatcher.h"

namespace kiln::passes {

namespace {

/// Concrete sizes of a fully known CPU tensor type, or nullopt.
std::optional<std::vector<int64_t>> known_sizes(const ir::Type& t) {
  if (!t.is_tensor()) return std::nullopt;
  const ir::TensorType& tt = t.tensor_type();
  if (!tt.dtype || !tt.sizes || !tt.strides || !tt.device.is_cpu()) return std::nullopt;
  std::vector<int64_t> sizes;
  for (const auto& s : *tt.sizes) {
    if (!s.is_concrete()) return std::nullopt;
    sizes.push_back(s.value());
  }
  for (const auto& s : *tt.strides) {
    if (!s.is_concrete()) return std::nullopt;
  }
  return sizes;
}

std::vector<int64_t> strides_of(const ir::TensorType& tt) {
  std::vector<int64_t> strides;
  for (const auto& s : *tt.strides) strides.push_back(s.value());
  return strides;
}

/// A dense, non-overlapping layout (contiguous up to a permutation of dims), or no elements.
bool dense(const ir::TensorType& tt) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of dims larger than 1
  for (size_t d = 0; d < tt.sizes->size(); ++d) {
    const int64_t size = (*tt.sizes)[d].value();
    if (size == 0) return true;
    if (size != 1) dims.emplace_back((*tt.strides)[d].value(), size);
  }
  std::sort(dims.begin(), dims.end());
  int64_t expected = 1;
  for (const auto& [stride, size] : dims) {
    if (stride != expected) return false;
    expected *= size;
  }
  return true;
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

bool candidate(const ir::Node& n, const std::function<bool(const ir::Node&)>& fusible) {
  if (n.kind() != ir::NodeKind::Op || n.outputs().size() != 1) return false;
  const auto out = known_sizes(n.output()->type());
  if (!out || !dense(n.output()->type().tensor_type())) return false;
  for (const ir::Value* v : n.inputs()) {
    if (!known_sizes(v->type())) return false;
  }
  return fusible(n);
}

}  // namespace

bool reads_outside_before(const std::vector<const ir::Node*>& members, size_t gi, const ir::Node* n,
                          const GroupIndex& group_of) {
  for (const ir::Node* m : members) {
    for (const ir::Value* out : m->outputs()) {  // (a norm row group's layer_norm has three)
      for (const ir::Use& u : out->uses()) {
        const ir::Node* user = u.user;
        if (!user->in_node_list() || user == n) continue;
        const auto owner = group_of.find(user);
        const bool in_group = owner != group_of.end() && owner->second == gi;
        if (!in_group && user->is_before(n)) return true;
      }
    }
  }
  return false;
}

void collect_group_boundary(FusionGroup& group, size_t gi, const GroupIndex& group_of,
                            const std::unordered_set<const ir::Value*>& returned) {
  const auto in_group = [&](const ir::Node* node) {
    const auto it = group_of.find(node);
    return it != group_of.end() && it->second == gi;
  };
  for (const ir::Node* m : group.nodes) {
    for (const ir::Value* v : m->inputs()) {
      if (!in_group(v->node()) && std::find(group.inputs.begin(), group.inputs.end(), v) == group.inputs.end()) {
        group.inputs.push_back(v);
      }
    }
    for (const ir::Value* out : m->outputs()) {
      bool outside = returned.count(out) != 0;
      for (const ir::Use& u : out->uses()) {
        if (!in_group(u.user)) outside = true;
      }
      if (outside) group.outputs.push_back(out);
    }
  }
}

std::vector<FusionGroup> fuse_pointwise(const ir::Graph& g, const std::function<bool(const ir::Node&)>& fusible) {
  if (writes_in_place(g)) return {};
  std::vector<FusionGroup> groups;
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes;  // each group's sizes, strides
  GroupIndex group_of;
  for (const ir::Node* n : g.nodes()) {
    if (!candidate(*n, fusible)) continue;
    const auto shape = std::make_pair(*known_sizes(n->output()->type()), strides_of(n->output()->type().tensor_type()));
    // Whether n may join group gi: one layout, and no node outside gi before n reads a member's result.
    const auto may_join = [&](size_t gi) {
      if (shapes[gi] != shape) return false;
      return !reads_outside_before(groups[gi].nodes, gi, n, group_of);
    };
    // The latest group producing one of n's inputs (vertical), else the latest group at all (horizontal:
    // same-layout siblings share one loop and their common inputs' reads).
    std::optional<size_t> join;
    for (const ir::Value* v : n->inputs()) {
      const auto it = group_of.find(v->node());
      if (it == group_of.end() || (join && *join >= it->second)) continue;
      if (may_join(it->second)) join = it->second;
    }
    if (!join && !groups.empty() && may_join(groups.size() - 1)) join = groups.size() - 1;
    if (!join) {
      groups.emplace_back();
      shapes.push_back(shape);
      join = groups.size() - 1;
    }
    groups[*join].nodes.push_back(n);
    group_of[n] = *join;
  }
  // Inputs and outputs of each group.
  std::unordered_set<const ir::Value*> returned(g.outputs().begin(), g.outputs().end());
  for (size_t gi = 0; gi < groups.size(); ++gi) collect_group_boundary(groups[gi], gi, group_of, returned);
  // Order groups by where they run (their last node).
  std::sort(groups.begin(), groups.end(),
            [](const FusionGroup& a, const FusionGroup& b) { return a.nodes.back()->is_before(b.nodes.back()); });
  return groups;
}

}  // namespace kiln::passes
