// Common-subexpression elimination: a forward walk with a table keyed by each
// node's text (kind, input ids, attributes, output types).
#include "passes/eliminate_common_subexpressions.h"

#include <string>
#include <unordered_map>

#include "passes/effects.h"

namespace kiln::passes {

namespace {

/// What makes two nodes compute the same values: kind, the very input values,
/// the attributes (floats in their exact text, so -0.0 and 0.0 differ) and the
/// output types.
std::string key_of(const ir::Node& n) {
  std::string key = n.kind_name();
  key += '(';
  for (const ir::Value* v : n.inputs()) key += '#' + std::to_string(v->id()) + ',';
  for (const ir::NamedAttribute& a : n.attributes()) key += a.name + '=' + a.value.str() + ',';
  key += ")->";
  for (const ir::Value* v : n.outputs()) key += v->type().str() + ',';
  return key;
}

bool may_merge(const ir::Node& n, AliasClasses& aliases) {
  if (has_side_effects(n)) return false;
  for (const ir::Value* v : n.inputs()) {
    if (aliases.is_written(v)) return false;
  }
  for (const ir::Value* v : n.outputs()) {
    // A Generator is state that each draw advances: two are never one.
    if (aliases.is_written(v) || v->type().kind() == ir::Type::Kind::Generator) return false;
  }
  return true;
}

}  // namespace

size_t eliminate_common_subexpressions(ir::Graph& g) {
  AliasClasses aliases(g);
  std::unordered_map<std::string, ir::Node*> seen;
  size_t merged = 0;
  for (ir::Node* n : g.nodes()) {
    if (!may_merge(*n, aliases)) continue;
    auto [it, fresh] = seen.emplace(key_of(*n), n);
    if (fresh) continue;
    ir::Node* kept = it->second;
    bool both_returned = false;
    for (size_t i = 0; i < n->outputs().size(); ++i)
      both_returned |= aliases.holds_output(n->output(i)) && aliases.holds_output(kept->output(i));
    if (both_returned) continue;
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      aliases.merge(kept->output(i), n->output(i));
      n->output(i)->replace_all_uses_with(kept->output(i));
    }
    g.erase(n);
    ++merged;
  }
  return merged;
}

}  // namespace kiln::passes
