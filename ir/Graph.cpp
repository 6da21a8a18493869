// Graph: node ownership, the node list, inputs/outputs, names.
#include "ir/Graph.h"

#include "eager/core/Error.h"
#include "ir/Printer.h"
#include "ir/SchemaTypes.h"

namespace kiln::ir {

Graph::Graph() {
  param_ = new_node(NodeKind::Param, std::nullopt);
  return_ = new_node(NodeKind::Return, std::nullopt);
}

Graph::~Graph() {
  // Values are destroyed with their nodes; drop every use first so no
  // destructor walks a freed value.
  for (auto& n : nodes_pool_) n->inputs_.clear();
}

Node* Graph::new_node(NodeKind kind, std::optional<OperatorHandle> op) {
  nodes_pool_.push_back(std::unique_ptr<Node>(new Node(this, kind, op)));
  Node* n = nodes_pool_.back().get();
  n->pool_index_ = nodes_pool_.size() - 1;
  return n;
}

Value* Graph::new_value(Node* node, size_t offset, Type type) {
  return new Value(node, offset, next_value_id_++, std::move(type));
}

Value* Graph::add_input(Type type, std::string name) {
  Value* v = param_->add_output(std::move(type));
  if (!name.empty()) set_name(v, std::move(name));
  return v;
}

const std::vector<Value*>& Graph::inputs() const { return param_->outputs(); }
const std::vector<Value*>& Graph::outputs() const { return return_->inputs(); }
void Graph::add_output(Value* v) { return_->add_input(v); }
void Graph::set_output(size_t i, Value* v) { return_->replace_input(i, v); }
void Graph::erase_output(size_t i) { return_->remove_input(i); }

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(list_size_);
  for (Node* n = first_; n != nullptr; n = n->next_) out.push_back(n);
  return out;
}

Node* Graph::create(NodeKind kind, std::optional<OperatorHandle> op) {
  KILN_CHECK(kind != NodeKind::Param && kind != NodeKind::Return, "ir: a graph has exactly one ",
             structural_kind_name(kind));
  KILN_CHECK((kind == NodeKind::Op) == op.has_value(), "ir: an op node needs an operator, a ",
             structural_kind_name(kind), " node takes none");
  return new_node(kind, op);
}

Node* Graph::create_op(const OperatorHandle& op, std::vector<Value*> inputs, std::vector<NamedAttribute> attributes) {
  Node* n = create(NodeKind::Op, op);
  for (Value* v : inputs) n->add_input(v);
  n->attributes_ = std::move(attributes);
  for (const SchemaArgument& r : op.schema().returns()) n->add_output(type_of_schema(r.type));
  return n;
}

Node* Graph::create_op(std::string_view qualified_name, std::vector<Value*> inputs,
                       std::vector<NamedAttribute> attributes) {
  // "kiln::add.Tensor": the overload follows the first '.' after "::".
  const size_t ns_end = qualified_name.find("::");
  const size_t dot = qualified_name.find('.', ns_end == std::string_view::npos ? 0 : ns_end + 2);
  const std::string_view base = qualified_name.substr(0, dot);
  const std::string_view overload = dot == std::string_view::npos ? "" : qualified_name.substr(dot + 1);
  return create_op(Dispatcher::singleton().find_schema_or_throw(base, overload), std::move(inputs),
                   std::move(attributes));
}

Node* Graph::create_constant(Attribute value) {
  Node* n = create(NodeKind::Constant);
  n->add_output(value.type());
  n->set_attribute("value", std::move(value));
  return n;
}

Node* Graph::create_list(std::vector<Value*> elements, const Type& element_type) {
  Node* n = create(NodeKind::ListConstruct);
  for (Value* v : elements) n->add_input(v);
  n->add_output(Type::list(element_type));
  return n;
}

Node* Graph::create_list_unpack(Value* list, size_t count) {
  Node* n = create(NodeKind::ListUnpack);
  n->add_input(list);
  const Type element = list->type().kind() == Type::Kind::List ? list->type().element() : Type::tensor();
  for (size_t i = 0; i < count; ++i) n->add_output(element);
  return n;
}

Node* Graph::append(Node* n) {
  KILN_CHECK(n != nullptr && n->graph_ == this, "ir: append needs a node of this graph");
  if (last_ == nullptr) {
    KILN_CHECK(n->kind_ != NodeKind::Param && n->kind_ != NodeKind::Return, "ir: ", n->kind_name(),
               " never joins the node list");
    KILN_CHECK(!n->in_list_, "ir: ", n->kind_name(), " is already in the node list");
    first_ = last_ = n;
    n->in_list_ = true;
    ++list_size_;
    return n;
  }
  n->insert_after(last_);
  return n;
}

void Graph::detach(Node* n) {
  KILN_CHECK(n != nullptr && n->graph_ == this, "ir: detach needs a node of this graph");
  n->unlink();
}

void Graph::erase(Node* n) {
  KILN_CHECK(n != nullptr && n->graph_ == this, "ir: erase needs a node of this graph");
  KILN_CHECK(n != param_ && n != return_, "ir: cannot erase ", n->kind_name());
  for (Value* out : n->outputs_) {
    KILN_CHECK(!out->has_uses(), "ir: cannot erase ", n->kind_name(), ": its output ",
               out->name().empty() ? "value #" + std::to_string(out->id()) : "%" + out->name(), " is still used by ",
               out->uses().front().user->kind_name());
  }
  if (n->in_list_) n->unlink();
  while (!n->inputs_.empty()) n->remove_input(n->inputs_.size() - 1);
  for (Value* out : n->outputs_) release_name(out);
  const size_t i = n->pool_index_;
  std::swap(nodes_pool_[i], nodes_pool_.back());
  nodes_pool_[i]->pool_index_ = i;
  nodes_pool_.pop_back();  // destroys n and its outputs
}

void Graph::set_name(Value* v, std::string name) {
  KILN_CHECK(v != nullptr && &v->owning_graph() == this, "ir: set_name needs a value of this graph");
  if (name == v->name_) return;
  KILN_CHECK_VALUE(name.empty() || is_identifier(name), "ir: a value name must be an identifier, got '", name, "'");
  KILN_CHECK_VALUE(name.empty() || !names_.contains(name), "ir: the name %", name, " is taken");
  release_name(v);
  v->name_ = std::move(name);
  if (!v->name_.empty()) names_.emplace(v->name_, v);
}

void Graph::release_name(Value* v) {
  if (!v->name_.empty()) names_.erase(v->name_);
  v->name_.clear();
}

std::string Graph::unique_name(std::string_view base) const {
  std::string name(base);
  for (size_t i = 1; names_.contains(name); ++i) name = std::string(base) + "_" + std::to_string(i);
  return name;
}

Value* Graph::find_value(std::string_view name) const {
  auto it = names_.find(std::string(name));
  return it == names_.end() ? nullptr : it->second;
}

std::string Graph::str() const { return print(*this); }

std::ostream& operator<<(std::ostream& os, const Graph& g) { return os << print(g); }

}  // namespace kiln::ir
