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

bool contiguous(const ir::TensorType& tt) {
  int64_t expected = 1;
  for (size_t d = tt.sizes->size(); d-- > 0;) {
    const int64_t size = (*tt.sizes)[d].value();
    if (size != 1 && (*tt.strides)[d].value() != expected) return false;
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
  if (!out || !contiguous(n.output()->type().tensor_type())) return false;
  for (const ir::Value* v : n.inputs()) {
    if (!known_sizes(v->type())) return false;
  }
  return fusible(n);
}

}  // namespace

std::vector<FusionGroup> fuse_pointwise(const ir::Graph& g, const std::function<bool(const ir::Node&)>& fusible) {
  if (writes_in_place(g)) return {};
  std::vector<FusionGroup> groups;
  std::vector<std::vector<int64_t>> shapes;
  std::unordered_map<const ir::Node*, size_t> group_of;
  for (const ir::Node* n : g.nodes()) {
    if (!candidate(*n, fusible)) continue;
    const std::vector<int64_t> shape = *known_sizes(n->output()->type());
    // The latest group producing one of n's inputs, if n may join it.
    std::optional<size_t> join;
    for (const ir::Value* v : n->inputs()) {
      const auto it = group_of.find(v->node());
      if (it == group_of.end() || shapes[it->second] != shape) continue;
      if (join && *join >= it->second) continue;
      bool read_before_n = false;  // an outside node before n reads a member: the group could not wait for n
      for (const ir::Node* m : groups[it->second].nodes) {
        for (const ir::Use& u : m->output()->uses()) {
          const ir::Node* user = u.user;
          if (!user->in_node_list() || user == n) continue;
          const auto owner = group_of.find(user);
          const bool in_group = owner != group_of.end() && owner->second == it->second;
          if (!in_group && user->is_before(n)) read_before_n = true;
        }
      }
      if (!read_before_n) join = it->second;
    }
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
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    FusionGroup& group = groups[gi];
    for (const ir::Node* m : group.nodes) {
      for (const ir::Value* v : m->inputs()) {
        const auto it = group_of.find(v->node());
        if ((it == group_of.end() || it->second != gi) &&
            std::find(group.inputs.begin(), group.inputs.end(), v) == group.inputs.end()) {
          group.inputs.push_back(v);
        }
      }
      const ir::Value* out = m->output();
      bool outside = returned.count(out) != 0;
      for (const ir::Use& u : out->uses()) {
        const auto it = group_of.find(u.user);
        if (it == group_of.end() || it->second != gi) outside = true;
      }
      if (outside) group.outputs.push_back(out);
    }
  }
  // Order groups by where they run (their last node).
  std::sort(groups.begin(), groups.end(),
            [](const FusionGroup& a, const FusionGroup& b) { return a.nodes.back()->is_before(b.nodes.back()); });
  return groups;
}

}  // namespace kiln::passes
