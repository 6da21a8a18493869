// Graph: owns the nodes of one SSA program in a topologically ordered list
// (its single block), plus the graph's inputs and outputs.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/Node.h"

namespace kiln::ir {

// Note [The IR's shape]
// ---------------------
// A Graph is one block of nodes in execution order. Its inputs are the
// outputs of a prim::Param node and its outputs are the inputs of a
// prim::Return node; both sit outside the node list, so every node in the
// list is a computation. Each value is defined once (by one output of one
// node) and every use is recorded on the value, so replace_all_uses_with and
// erase are O(uses). Op nodes bind their schema's arguments in order: a
// named attribute supplies the argument of that name as a literal, and the
// node's inputs fill the remaining arguments in schema order (see
// ArgumentBinding.h). Capture records every argument explicitly, so nodes
// never rely on schema defaults.

class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // --- inputs and outputs ----------------------------------------------------
  /// Given graph(%x).   Do add_input(t, "y").   Result graph(%x, %y : t).
  Value* add_input(Type type, std::string name = "");
  [[nodiscard]] const std::vector<Value*>& inputs() const;
  /// Given return (%a).   Do add_output(%b).   Result return (%a, %b).
  void add_output(Value* v);
  /// Given return (%a, %b).   Do set_output(1, %c).   Result return (%a, %c).
  void set_output(size_t i, Value* v);
  /// Given return (%a, %b).   Do erase_output(0).   Result return (%b).
  void erase_output(size_t i);
  [[nodiscard]] const std::vector<Value*>& outputs() const;
  [[nodiscard]] Node* param_node() const { return param_; }
  [[nodiscard]] Node* return_node() const { return return_; }

  // --- the node list -----------------------------------------------------------
  /// A snapshot of the list in order (safe to mutate the graph while walking it).
  [[nodiscard]] std::vector<Node*> nodes() const;
  [[nodiscard]] Node* first_node() const { return first_; }
  [[nodiscard]] Node* last_node() const { return last_; }
  [[nodiscard]] size_t num_nodes() const { return list_size_; }

  // --- creating nodes (detached until inserted) ----------------------------------
  /// Given op kiln::add.Tensor.
  /// Do    create_op(op, {%a, %b}, {{"alpha", Attribute::of_int(1)}}).
  /// Result a detached node kiln::add.Tensor(%a, %b, alpha=1) with one output
  ///        per schema return (unrefined types, set them with Value::set_type).
  Node* create_op(const OperatorHandle& op, std::vector<Value*> inputs, std::vector<NamedAttribute> attributes = {});
  /// Same, naming the op "kiln::add.Tensor"; RuntimeError when no such operator exists.
  Node* create_op(std::string_view qualified_name, std::vector<Value*> inputs,
                  std::vector<NamedAttribute> attributes = {});
  /// Given a literal 3.   Do create_constant(Attribute::of_int(3)).   Result prim::Constant(value=3) -> int.
  Node* create_constant(Attribute value);
  /// Given %a, %b of type Tensor.   Do create_list({%a, %b}, Type::tensor()).   Result prim::ListConstruct -> Tensor[].
  Node* create_list(std::vector<Value*> elements, const Type& element_type);
  /// Given %l : Tensor[].   Do create_list_unpack(%l, 2).   Result prim::ListUnpack(%l) -> two Tensor values.
  Node* create_list_unpack(Value* list, size_t count);
  /// A node of any kind with no inputs, outputs or attributes (the parser fills it).
  Node* create(NodeKind kind, std::optional<OperatorHandle> op = std::nullopt);
  /// Given a detached node n.   Do append(n).   Result n is the last node of the list.
  Node* append(Node* n);

  /// Given n whose outputs have no uses.
  /// Do    erase(n).
  /// Result n is gone, its inputs lose their uses, its output names are free.
  /// RuntimeError naming the value and a user when an output is still used.
  void erase(Node* n);
  /// Takes n out of the list without destroying it (it can be inserted again).
  void detach(Node* n);

  // --- names -------------------------------------------------------------------
  /// Names v (printed as %name). ValueError when the name is not an
  /// identifier or another value of this graph has it; "" clears the name.
  void set_name(Value* v, std::string name);
  /// `base` if free, else base_1, base_2, ... (the first free one).
  [[nodiscard]] std::string unique_name(std::string_view base) const;
  /// The value named `name`, or nullptr.
  [[nodiscard]] Value* find_value(std::string_view name) const;

  /// The text form (see Printer.h).
  [[nodiscard]] std::string str() const;

 private:
  friend class Node;
  friend class Value;
  Node* new_node(NodeKind kind, std::optional<OperatorHandle> op);
  Value* new_value(Node* node, size_t offset, Type type);
  void release_name(Value* v);

  std::vector<std::unique_ptr<Node>> nodes_pool_;  // every node, in the list or not
  Node* param_;
  Node* return_;
  Node* first_ = nullptr;
  Node* last_ = nullptr;
  size_t list_size_ = 0;
  size_t next_value_id_ = 0;
  std::unordered_map<std::string, Value*> names_;
};

std::ostream& operator<<(std::ostream& os, const Graph& g);

}  // namespace kiln::ir
