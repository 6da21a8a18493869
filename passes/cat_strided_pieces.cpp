// A cat of reshaped contiguous copies -> a cat of the strided pieces (Note [A cat of reshaped copies]).
#include "passes/cat_strided_pieces.h"

#include <optional>
#include <string>
#include <vector>

#include "eager/core/MemoryFormat.h"
#include "passes/arguments.h"
#include "passes/effects.h"
#include "passes/type_facts.h"

namespace kiln::passes {

namespace {

using ir::Attribute;
using ir::Node;
using ir::Value;

/// x when v = view/reshape(clone(x, contiguous) or contiguous(x)), else nullptr.
Value* copied_piece(const Value* v) {
  const Node* view = v->node();
  const std::string kind = view->kind_name();
  if (kind != "kiln::view" && kind != "kiln::reshape" && kind != "kiln::_unsafe_view") return nullptr;
  const Value* copy = value_argument(*view, "self");
  if (copy == nullptr) return nullptr;
  const Node* c = copy->node();
  const std::string copy_kind = c->kind_name();
  const Attribute* format = literal_argument(*c, "memory_format");
  const bool contiguous_format = format != nullptr && format->kind() == Attribute::Kind::Int &&
                                 format->to_int() == static_cast<int64_t>(MemoryFormat::Contiguous);
  if (copy_kind == "kiln::clone" && !contiguous_format) return nullptr;
  if (copy_kind != "kiln::clone" && copy_kind != "kiln::contiguous") return nullptr;
  if (copy_kind == "kiln::contiguous" && !(contiguous_format || format == nullptr)) return nullptr;
  return value_argument(*c, "self");
}

/// Strides of x unsqueezed at `dim`, as the eager unsqueeze makes them (sizes[dim] * strides[dim], or 1 last).
std::optional<std::vector<ir::SymbolicSize>> unsqueezed_strides(const ir::TensorType& t, size_t dim) {
  if (!t.strides || !t.sizes) return std::nullopt;
  std::vector<ir::SymbolicSize> s = *t.strides;
  ir::SymbolicSize inserted(1);
  if (dim < s.size()) {
    if (!s[dim].is_concrete() || !(*t.sizes)[dim].is_concrete()) return std::nullopt;
    inserted = ir::SymbolicSize(s[dim].value() * (*t.sizes)[dim].value());
  }
  s.insert(s.begin() + static_cast<std::ptrdiff_t>(dim), inserted);
  return s;
}

bool rewrite(Node& cat) {
  Value* list = value_argument(cat, "tensors");
  const Attribute* dim_attr = literal_argument(cat, "dim");
  if (list == nullptr || list->node()->kind() != ir::NodeKind::ListConstruct || dim_attr == nullptr ||
      dim_attr->kind() != Attribute::Kind::Int || list->node()->inputs().size() < 2) {
    return false;
  }
  const auto out_sizes = concrete_sizes(cat.output());
  if (!out_sizes || !is_contiguous(cat.output()) || out_sizes->empty()) return false;
  int64_t dim = dim_attr->to_int();
  const auto rank = static_cast<int64_t>(out_sizes->size());
  if (dim < 0) dim += rank;
  if (dim != rank - 1) return false;  // the pieces' reshape merges the trailing dims only
  std::vector<Value*> pieces;
  std::optional<std::vector<int64_t>> piece_sizes;
  for (Value* v : list->node()->inputs()) {
    Value* x = copied_piece(v);
    if (x == nullptr || !x->type().is_tensor() || dtype_of(x) != dtype_of(cat.output())) return false;
    const auto xs = concrete_sizes(x);
    const auto vs = concrete_sizes(v);
    if (!xs || !vs || vs->size() != out_sizes->size() || xs->size() < static_cast<size_t>(dim)) return false;
    if (piece_sizes && *piece_sizes != *xs) return false;
    piece_sizes = *xs;
    // [P..., Q...] -> [P..., prod(Q)]: the leading dims kept.
    int64_t trailing = 1;
    for (size_t d = static_cast<size_t>(dim); d < xs->size(); ++d) trailing *= (*xs)[d];
    for (int64_t d = 0; d < dim; ++d) {
      if ((*xs)[static_cast<size_t>(d)] != (*vs)[static_cast<size_t>(d)]) return false;
    }
    if ((*vs)[static_cast<size_t>(dim)] != trailing) return false;
    pieces.push_back(x);
  }
  ir::Graph& g = cat.owning_graph();
  std::vector<Value*> unsqueezed;
  for (Value* x : pieces) {
    ir::TensorType t = x->type().tensor_type();
    const auto strides = unsqueezed_strides(t, static_cast<size_t>(dim));
    if (!strides) return false;
    t.sizes->insert(t.sizes->begin() + dim, ir::SymbolicSize(1));
    t.strides = *strides;
    Node* u = g.create_op("kiln::unsqueeze", {x}, {{"dim", Attribute::of_int(dim)}});
    u->output()->set_type(ir::Type::tensor(std::move(t)));
    u->insert_before(&cat);
    unsqueezed.push_back(u->output());
  }
  Node* stacked_list = g.create_list(unsqueezed, ir::Type::tensor());
  stacked_list->insert_before(&cat);
  ir::TensorType stacked = cat.output()->type().tensor_type();
  std::vector<ir::SymbolicSize> sizes;
  for (int64_t s : *piece_sizes) sizes.emplace_back(s);
  sizes.insert(sizes.begin() + dim, ir::SymbolicSize(static_cast<int64_t>(pieces.size())));
  stacked.strides = contiguous_strides(sizes);
  stacked.sizes = std::move(sizes);
  Node* new_cat = g.create_op("kiln::cat", {stacked_list->output()}, {{"dim", Attribute::of_int(dim)}});
  new_cat->output()->set_type(ir::Type::tensor(std::move(stacked)));
  new_cat->insert_before(&cat);
  Node* view = g.create_op("kiln::view", {new_cat->output()}, {{"size", Attribute::of_int_list(*out_sizes)}});
  view->output()->set_type(cat.output()->type());
  view->insert_before(&cat);
  cat.output()->replace_all_uses_with(view->output());
  if (!cat.output()->name().empty()) {
    std::string name = cat.output()->name();
    g.set_name(cat.output(), "");
    g.set_name(view->output(), std::move(name));
  }
  g.erase(&cat);
  return true;
}

}  // namespace

size_t cat_strided_pieces(ir::Graph& g) {
  for (const Node* n : g.nodes()) {
    if (n->kind() == ir::NodeKind::Op && writes_arguments(*n)) return 0;
  }
  size_t done = 0;
  for (Node* n : g.nodes()) {
    if (n->kind() == ir::NodeKind::Op && n->kind_name() == "kiln::cat" && rewrite(*n)) ++done;
  }
  return done;
}

}  // namespace kiln::passes
