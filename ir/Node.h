// Node, Value and Use: the SSA vocabulary of an ir::Graph. A Node is one
// operation (an operator of the dispatcher or a structural kind); a Value is
// one result of one node, with a type and the list of its uses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "eager/dispatch/Dispatcher.h"
#include "ir/Attribute.h"
#include "ir/Type.h"

namespace kiln::ir {

class Graph;
class Node;

/// What a node does. Op nodes name an operator registered with the
/// dispatcher (its kind text is the qualified name from ops.yaml,
/// "kiln::add.Tensor"); the others are structural and spelled "prim::...".
enum class NodeKind : uint8_t {
  Param,          // prim::Param: its outputs are the graph's inputs (kept outside the node list)
  Return,         // prim::Return: its inputs are the graph's outputs (kept outside the node list)
  Constant,       // prim::Constant(value=<literal>) -> one value of the literal's type
  ListConstruct,  // prim::ListConstruct(%a, %b) -> T[]
  ListUnpack,     // prim::ListUnpack(%list) -> %a, %b
  Op,             // an operator of the dispatcher
  // Room for the compiler's own kinds: FusionGroup (a subgraph) and Kernel
  // (a compiled kernel) join here when passes/ and codegen/ need them.
};

/// "prim::Constant", ...; for Op, "op" (the node's kind_name() has the real name).
[[nodiscard]] std::string_view structural_kind_name(NodeKind k);
/// The structural kind named by "prim::..." text, or nullopt.
[[nodiscard]] std::optional<NodeKind> structural_kind_from_name(std::string_view name);

/// One use of a value: input `index` of node `user`.
struct Use {
  Node* user;
  size_t index;
  bool operator==(const Use&) const = default;
};

class Value {
 public:
  Value(const Value&) = delete;
  Value& operator=(const Value&) = delete;

  /// Unique within the graph, never reused; stable across mutation.
  [[nodiscard]] size_t id() const { return id_; }
  /// The name given with Graph::set_name ("" when unnamed; the printer numbers those).
  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] Node* node() const { return node_; }
  /// Which output of node() this is.
  [[nodiscard]] size_t offset() const { return offset_; }
  [[nodiscard]] Graph& owning_graph() const;
  [[nodiscard]] const Type& type() const { return type_; }
  void set_type(Type t) { type_ = std::move(t); }
  [[nodiscard]] const std::vector<Use>& uses() const { return uses_; }
  [[nodiscard]] bool has_uses() const { return !uses_.empty(); }

  /// Given %a used by n1 and n2, and %b defined before n1.
  /// Do    a->replace_all_uses_with(b).
  /// Result n1 and n2 read %b where they read %a (graph outputs too); %a has no uses.
  void replace_all_uses_with(Value* other);

 private:
  friend class Node;
  friend class Graph;
  Value(Node* node, size_t offset, size_t id, Type type) : node_(node), offset_(offset), id_(id), type_(std::move(type)) {}

  Node* node_;
  size_t offset_;
  size_t id_;
  std::string name_;
  Type type_;
  std::vector<Use> uses_;
};

struct NamedAttribute {
  std::string name;
  Attribute value;
  bool operator==(const NamedAttribute&) const = default;
};

class Node {
 public:
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  ~Node();

  [[nodiscard]] NodeKind kind() const { return kind_; }
  /// "kiln::add.Tensor" for an op node, "prim::Constant" for a constant, ...
  [[nodiscard]] std::string kind_name() const;
  /// The operator of an Op node; RuntimeError for structural nodes.
  [[nodiscard]] const OperatorHandle& op() const;
  [[nodiscard]] Graph& owning_graph() const { return *graph_; }
  /// True between insertion into the graph's node list and erasure or detaching.
  [[nodiscard]] bool in_node_list() const { return in_list_; }

  [[nodiscard]] const std::vector<Value*>& inputs() const { return inputs_; }
  [[nodiscard]] Value* input(size_t i) const;
  [[nodiscard]] const std::vector<Value*>& outputs() const { return outputs_; }
  [[nodiscard]] Value* output(size_t i = 0) const;
  [[nodiscard]] const std::vector<NamedAttribute>& attributes() const { return attributes_; }
  /// The attribute called `name`, or nullptr.
  [[nodiscard]] const Attribute* attribute(std::string_view name) const;

  /// The next / previous node in the graph's list (nullptr at either end or when detached).
  [[nodiscard]] Node* next() const { return next_; }
  [[nodiscard]] Node* prev() const { return prev_; }

  /// Given n(%a).   Do n->add_input(%b).   Result n(%a, %b); %b's uses gain (n, 1).
  void add_input(Value* v);
  /// Given n(%a, %b).   Do n->replace_input(1, %c).   Result n(%a, %c); the use moves from %b to %c.
  void replace_input(size_t i, Value* v);
  /// Given n(%a, %b).   Do n->remove_input(0).   Result n(%b); later uses renumbered.
  void remove_input(size_t i);
  /// Given n with k outputs.   Do n->add_output(t).   Result output k of type t.
  Value* add_output(Type type);
  /// Sets (replaces, or appends) the attribute `name`.
  void set_attribute(std::string name, Attribute value);
  /// Removes the attribute `name` (no-op when absent).
  void remove_attribute(std::string_view name);

  /// Given a detached node n and p in the list [.., p, ..].
  /// Do    n->insert_before(p).
  /// Result [.., n, p, ..]. RuntimeError when n is already in the list or p is not.
  void insert_before(Node* pos);
  /// Given a detached node n and p in the list [.., p, ..].
  /// Do    n->insert_after(p).
  /// Result [.., p, n, ..].
  void insert_after(Node* pos);
  /// Given n in the list.   Do n->move_before(p).   Result n sits just before p.
  void move_before(Node* pos);
  /// Given n in the list.   Do n->move_after(p).   Result n sits just after p.
  void move_after(Node* pos);
  /// True when this node comes before `other` in the list (both in it).
  [[nodiscard]] bool is_before(const Node* other) const;

 private:
  friend class Graph;
  Node(Graph* graph, NodeKind kind, std::optional<OperatorHandle> op) : graph_(graph), kind_(kind), op_(op) {}
  void unlink();

  Graph* graph_;
  NodeKind kind_;
  std::optional<OperatorHandle> op_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;  // owned
  std::vector<NamedAttribute> attributes_;
  Node* prev_ = nullptr;
  Node* next_ = nullptr;
  bool in_list_ = false;
  size_t pool_index_ = 0;  // position in Graph::nodes_pool_
};

}  // namespace kiln::ir
