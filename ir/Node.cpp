// Node and Value: operands, uses, attributes and position in the list.
#include "ir/Node.h"

#include <algorithm>

#include "eager/core/Error.h"
#include "ir/Graph.h"

namespace kiln::ir {

std::string_view structural_kind_name(NodeKind k) {
  switch (k) {
    case NodeKind::Param: return "prim::Param";
    case NodeKind::Return: return "prim::Return";
    case NodeKind::Constant: return "prim::Constant";
    case NodeKind::ListConstruct: return "prim::ListConstruct";
    case NodeKind::ListUnpack: return "prim::ListUnpack";
    case NodeKind::Op: return "op";
  }
  return "?";
}

std::optional<NodeKind> structural_kind_from_name(std::string_view name) {
  for (NodeKind k : {NodeKind::Param, NodeKind::Return, NodeKind::Constant, NodeKind::ListConstruct,
                     NodeKind::ListUnpack}) {
    if (structural_kind_name(k) == name) return k;
  }
  return std::nullopt;
}

// --- Value -------------------------------------------------------------------

Graph& Value::owning_graph() const { return node_->owning_graph(); }

void Value::replace_all_uses_with(Value* other) {
  KILN_CHECK(other != nullptr, "ir: replace_all_uses_with(nullptr)");
  KILN_CHECK(&other->owning_graph() == &owning_graph(), "ir: replace_all_uses_with a value of another graph");
  if (other == this) return;
  const std::vector<Use> uses = uses_;
  for (const Use& u : uses) u.user->replace_input(u.index, other);
}

// --- Node --------------------------------------------------------------------

Node::~Node() {
  for (Value* v : outputs_) delete v;
}

std::string Node::kind_name() const {
  if (kind_ == NodeKind::Op) return op_->name().str();
  return std::string(structural_kind_name(kind_));
}

const OperatorHandle& Node::op() const {
  KILN_CHECK(op_.has_value(), "ir: ", kind_name(), " is not an operator node");
  return *op_;
}

Value* Node::input(size_t i) const {
  KILN_CHECK_INDEX(i < inputs_.size(), "ir: ", kind_name(), " has ", inputs_.size(), " inputs, asked for input ", i);
  return inputs_[i];
}

Value* Node::output(size_t i) const {
  KILN_CHECK_INDEX(i < outputs_.size(), "ir: ", kind_name(), " has ", outputs_.size(), " outputs, asked for output ",
                   i);
  return outputs_[i];
}

const Attribute* Node::attribute(std::string_view name) const {
  for (const NamedAttribute& a : attributes_)
    if (a.name == name) return &a.value;
  return nullptr;
}

void Node::add_input(Value* v) {
  KILN_CHECK(v != nullptr, "ir: ", kind_name(), ": input is null");
  KILN_CHECK(&v->owning_graph() == graph_, "ir: ", kind_name(), ": input belongs to another graph");
  v->uses_.push_back(Use{this, inputs_.size()});
  inputs_.push_back(v);
}

void Node::replace_input(size_t i, Value* v) {
  KILN_CHECK(v != nullptr, "ir: ", kind_name(), ": input is null");
  KILN_CHECK(&v->owning_graph() == graph_, "ir: ", kind_name(), ": input belongs to another graph");
  Value* old = input(i);
  const size_t dropped = std::erase(old->uses_, Use{this, i});
  KILN_INTERNAL_ASSERT(dropped == 1, "use list out of sync");
  inputs_[i] = v;
  v->uses_.push_back(Use{this, i});
}

void Node::remove_input(size_t i) {
  Value* old = input(i);
  std::erase(old->uses_, Use{this, i});
  for (size_t j = i + 1; j < inputs_.size(); ++j) {
    for (Use& u : inputs_[j]->uses_)
      if (u == Use{this, j}) u.index = j - 1;
  }
  inputs_.erase(inputs_.begin() + static_cast<std::ptrdiff_t>(i));
}

Value* Node::add_output(Type type) {
  Value* v = graph_->new_value(this, outputs_.size(), std::move(type));
  outputs_.push_back(v);
  return v;
}

void Node::set_attribute(std::string name, Attribute value) {
  for (NamedAttribute& a : attributes_) {
    if (a.name == name) {
      a.value = std::move(value);
      return;
    }
  }
  attributes_.push_back(NamedAttribute{std::move(name), std::move(value)});
}

void Node::remove_attribute(std::string_view name) {
  std::erase_if(attributes_, [&](const NamedAttribute& a) { return a.name == name; });
}

void Node::insert_before(Node* pos) {
  KILN_CHECK(kind_ != NodeKind::Param && kind_ != NodeKind::Return, "ir: ", kind_name(), " never joins the node list");
  KILN_CHECK(!in_list_, "ir: ", kind_name(), " is already in the node list");
  KILN_CHECK(pos != nullptr && pos->graph_ == graph_ && pos->in_list_,
             "ir: insert_before needs a position in the same graph's node list");
  next_ = pos;
  prev_ = pos->prev_;
  if (prev_) prev_->next_ = this;
  else graph_->first_ = this;
  pos->prev_ = this;
  in_list_ = true;
  ++graph_->list_size_;
}

void Node::insert_after(Node* pos) {
  KILN_CHECK(kind_ != NodeKind::Param && kind_ != NodeKind::Return, "ir: ", kind_name(), " never joins the node list");
  KILN_CHECK(!in_list_, "ir: ", kind_name(), " is already in the node list");
  KILN_CHECK(pos != nullptr && pos->graph_ == graph_ && pos->in_list_,
             "ir: insert_after needs a position in the same graph's node list");
  prev_ = pos;
  next_ = pos->next_;
  if (next_) next_->prev_ = this;
  else graph_->last_ = this;
  pos->next_ = this;
  in_list_ = true;
  ++graph_->list_size_;
}

void Node::unlink() {
  KILN_CHECK(in_list_, "ir: ", kind_name(), " is not in the node list");
  if (prev_) prev_->next_ = next_;
  else graph_->first_ = next_;
  if (next_) next_->prev_ = prev_;
  else graph_->last_ = prev_;
  prev_ = next_ = nullptr;
  in_list_ = false;
  --graph_->list_size_;
}

void Node::move_before(Node* pos) {
  KILN_CHECK(pos != this, "ir: cannot move a node before itself");
  unlink();
  insert_before(pos);
}

void Node::move_after(Node* pos) {
  KILN_CHECK(pos != this, "ir: cannot move a node after itself");
  unlink();
  insert_after(pos);
}

bool Node::is_before(const Node* other) const {
  KILN_CHECK(in_list_ && other->in_list_ && other->graph_ == graph_, "ir: is_before needs two nodes of one list");
  for (const Node* n = next_; n != nullptr; n = n->next_)
    if (n == other) return true;
  return false;
}

}  // namespace kiln::ir
