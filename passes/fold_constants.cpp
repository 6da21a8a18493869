// Constant folding: lists of constants, unpacking of constant lists, and
// constant inputs of op nodes turned into literal arguments.
#include "passes/fold_constants.h"

#include <optional>
#include <string>
#include <vector>

#include "ir/ArgumentBinding.h"

namespace kiln::passes {

using ir::Attribute;
using ir::Node;
using ir::NodeKind;
using ir::Value;

namespace {

const Attribute* constant_of(const Value* v) {
  if (v->node()->kind() != NodeKind::Constant) return nullptr;
  return &v->node()->attributes().at(0).value;
}

/// The literal list [c0, c1, ...] for a list construction of constants of the
/// list's element type, or nullopt.
std::optional<Attribute> list_literal(const Node& n) {
  const ir::Type::Kind element = n.output()->type().element().kind();
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<bool> bools;
  for (const Value* v : n.inputs()) {
    const Attribute* c = constant_of(v);
    if (c == nullptr) return std::nullopt;
    switch (element) {
      case ir::Type::Kind::Int:
        if (c->kind() != Attribute::Kind::Int) return std::nullopt;
        ints.push_back(c->to_int());
        break;
      case ir::Type::Kind::Float:
        if (c->kind() != Attribute::Kind::Float) return std::nullopt;
        floats.push_back(c->to_float());
        break;
      case ir::Type::Kind::Bool:
        if (c->kind() != Attribute::Kind::Bool) return std::nullopt;
        bools.push_back(c->to_bool());
        break;
      default: return std::nullopt;
    }
  }
  switch (element) {
    case ir::Type::Kind::Int: return Attribute::of_int_list(std::move(ints));
    // An empty float or bool list reads back as an int list (Note [Empty lists
    // are int lists]): a value of that type would not fit its readers.
    case ir::Type::Kind::Float:
      if (floats.empty()) return std::nullopt;
      return Attribute::of_float_list(std::move(floats));
    default:
      if (bools.empty()) return std::nullopt;
      return Attribute::of_bool_list(std::move(bools));
  }
}

/// The elements of a constant list, as literals, or an empty vector.
std::vector<Attribute> list_elements(const Attribute& list) {
  std::vector<Attribute> out;
  switch (list.kind()) {
    case Attribute::Kind::IntList:
      for (int64_t x : list.to_int_list()) out.push_back(Attribute::of_int(x));
      break;
    case Attribute::Kind::FloatList:
      for (double x : list.to_float_list()) out.push_back(Attribute::of_float(x));
      break;
    case Attribute::Kind::BoolList:
      for (bool x : list.to_bool_list()) out.push_back(Attribute::of_bool(x));
      break;
    default: break;
  }
  return out;
}

/// Replaces every use of `from` by `to`, which takes over from's name (so a folded value reads as before).
void replace_and_rename(Value* from, Value* to) {
  from->replace_all_uses_with(to);
  std::string name = from->name();
  if (name.empty()) return;
  from->owning_graph().set_name(from, "");
  from->owning_graph().set_name(to, std::move(name));
}

Value* new_constant_before(Node* pos, const Attribute& value) {
  Node* c = pos->owning_graph().create_constant(value);
  c->insert_before(pos);
  return c->output();
}

size_t fold_list_construct(Node* n) {
  const std::optional<Attribute> literal = list_literal(*n);
  if (!literal) return 0;
  Value* folded = new_constant_before(n, *literal);
  if (!(folded->type() == n->output()->type())) {
    n->owning_graph().erase(folded->node());
    return 0;
  }
  replace_and_rename(n->output(), folded);
  return 1;
}

size_t fold_list_unpack(Node* n) {
  const Attribute* list = constant_of(n->input(0));
  if (list == nullptr) return 0;
  bool read = false;
  for (const Value* v : n->outputs()) read |= v->has_uses();
  if (!read) return 0;
  const std::vector<Attribute> elements = list_elements(*list);
  if (elements.size() != n->outputs().size()) return 0;
  for (size_t i = 0; i < elements.size(); ++i) {
    if (!n->output(i)->has_uses()) continue;
    Value* folded = new_constant_before(n, elements[i]);
    if (!(folded->type() == n->output(i)->type())) {
      n->owning_graph().erase(folded->node());
      continue;
    }
    replace_and_rename(n->output(i), folded);
  }
  return 1;
}

/// Moves each constant input of op node n into a literal argument of the same name.
size_t inline_constant_arguments(Node* n) {
  const auto binding = ir::bind_arguments(*n);
  if (!binding) return 0;
  const auto& args = n->op().schema().arguments();
  size_t folded = 0;
  for (size_t i = args.size(); i-- > 0;) {  // from the last: removing an input renumbers the later ones
    const ir::ArgumentSource& s = (*binding)[i];
    if (s.is_attribute) continue;
    const Attribute* c = constant_of(n->input(s.index));
    if (c == nullptr) continue;
    n->set_attribute(args[i].name, *c);
    n->remove_input(s.index);
    ++folded;
  }
  return folded;
}

}  // namespace

size_t fold_constants(ir::Graph& g) {
  size_t folds = 0;
  for (Node* n : g.nodes()) {
    switch (n->kind()) {
      case NodeKind::ListConstruct: folds += fold_list_construct(n); break;
      case NodeKind::ListUnpack: folds += fold_list_unpack(n); break;
      case NodeKind::Op: folds += inline_constant_arguments(n); break;
      default: break;
    }
  }
  return folds;
}

}  // namespace kiln::passes
