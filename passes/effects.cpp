// Effects: side effects of nodes and storage classes of values.
#include "passes/effects.h"

#include "ir/ArgumentBinding.h"

namespace kiln::passes {

using ir::Node;
using ir::NodeKind;
using ir::Value;

bool writes_arguments(const Node& n) {
  if (n.kind() != NodeKind::Op) return false;
  if (n.op().entry().has_tag("inplace")) return true;
  for (const SchemaArgument& a : n.op().schema().arguments()) {
    if (a.alias && a.alias->is_write) return true;
  }
  return false;
}

bool is_random(const Node& n) {
  if (n.kind() != NodeKind::Op) return false;
  if (n.op().entry().has_tag("random")) return true;
  for (const SchemaArgument& a : n.op().schema().arguments()) {
    if (a.type.kind == SchemaType::Kind::Generator) return true;
  }
  return false;
}

bool has_side_effects(const Node& n) {
  if (n.outputs().empty()) return true;
  if (n.kind() != NodeKind::Op) return false;
  return writes_arguments(n) || is_random(n) || n.op().schema().returns().empty();
}

AliasClasses::AliasClasses(const ir::Graph& g) {
  for (const Node* n : g.nodes()) add_node(*n);
  for (const Value* v : g.inputs()) info_[find(v)].has_input = true;
  for (const Value* v : g.outputs()) info_[find(v)].has_output = true;
}

void AliasClasses::add_node(const Node& n) {
  if (n.kind() == NodeKind::ListConstruct) {
    for (const Value* v : n.inputs()) unite(n.output(), v);
    return;
  }
  if (n.kind() == NodeKind::ListUnpack) {
    for (const Value* v : n.outputs()) unite(n.input(0), v);
    return;
  }
  if (n.kind() != NodeKind::Op) return;
  const auto binding = ir::bind_arguments(n);
  if (!binding) return;  // the verifier reports it
  const auto& args = n.op().schema().arguments();
  const auto& returns = n.op().schema().returns();
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].alias || (*binding)[i].is_attribute) continue;
    const Value* in = n.inputs()[(*binding)[i].index];
    for (size_t r = 0; r < returns.size() && r < n.outputs().size(); ++r) {
      if (returns[r].alias && returns[r].alias->set == args[i].alias->set) unite(n.outputs()[r], in);
    }
    if (args[i].alias->is_write) info_[find(in)].written = true;
  }
}

size_t AliasClasses::index_of(const Value* v) {
  auto [it, fresh] = index_.emplace(v, parent_.size());
  if (fresh) {
    parent_.push_back(it->second);
    info_.emplace_back();
  }
  return it->second;
}

size_t AliasClasses::find(const Value* v) {
  size_t i = index_of(v);
  while (parent_[i] != i) {
    parent_[i] = parent_[parent_[i]];
    i = parent_[i];
  }
  return i;
}

void AliasClasses::unite(const Value* a, const Value* b) {
  const size_t ra = find(a);
  const size_t rb = find(b);
  if (ra == rb) return;
  parent_[rb] = ra;
  info_[ra].written |= info_[rb].written;
  info_[ra].has_input |= info_[rb].has_input;
  info_[ra].has_output |= info_[rb].has_output;
}

bool AliasClasses::is_written(const Value* v) { return info_[find(v)].written; }
bool AliasClasses::may_alias(const Value* a, const Value* b) { return find(a) == find(b); }
bool AliasClasses::holds_output(const Value* v) { return info_[find(v)].has_output; }
bool AliasClasses::holds_input(const Value* v) { return info_[find(v)].has_input; }
size_t AliasClasses::class_of(const Value* v) { return find(v); }
void AliasClasses::merge(const Value* a, const Value* b) { unite(a, b); }

namespace {

bool same_layout(const ir::Type& a, const ir::Type& b) {
  if (!a.is_tensor() || !b.is_tensor()) return a == b;
  const ir::TensorType& x = a.tensor_type();
  const ir::TensorType& y = b.tensor_type();
  if (!x.dtype || !x.sizes) return false;
  return x.dtype == y.dtype && x.sizes == y.sizes && x.strides == y.strides && x.device == y.device;
}

}  // namespace

bool can_forward(const Value* from, const Value* to, AliasClasses& aliases) {
  if (!same_layout(from->type(), to->type())) return false;
  if (aliases.is_written(from) || aliases.is_written(to)) return false;
  if (aliases.may_alias(from, to)) return true;  // a view of `to`: eager returns the same memory too
  return !(aliases.holds_output(from) && (aliases.holds_output(to) || aliases.holds_input(to)));
}

}  // namespace kiln::passes
