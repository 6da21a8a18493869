// Verifier: SSA, use lists, schemas, structural kinds and tensor types.
#include "ir/Verifier.h"

#include <algorithm>
#include <unordered_set>

#include "eager/core/Error.h"
#include "ir/ArgumentBinding.h"
#include "ir/SchemaTypes.h"

namespace kiln::ir {

namespace {

class GraphVerifier {
 public:
  explicit GraphVerifier(const Graph& g) : g_(g) {}

  void run() {
    for (Value* v : g_.inputs()) define(*g_.param_node(), v);
    for (const Node* n : g_.nodes()) in_list_.insert(n);
    for (Value* v : g_.inputs()) check_type(*g_.param_node(), v->type());
    for (const Node* n : g_.nodes()) {
      if (n->kind() == NodeKind::Param || n->kind() == NodeKind::Return)
        fail(*n, "a " + n->kind_name() + " node sits in the node list");
      check_inputs_defined(*n);
      for (Value* v : n->outputs()) define(*n, v);
      check_node(*n);
      for (Value* v : n->outputs()) check_type(*n, v->type());
    }
    check_inputs_defined(*g_.return_node());
    if (!g_.return_node()->outputs().empty()) fail(*g_.return_node(), "the return node has outputs");
    if (!g_.param_node()->inputs().empty()) fail(*g_.param_node(), "the param node has inputs");
    check_use_lists();
  }

 private:
  [[noreturn]] static void fail(const Node& n, const std::string& problem) {
    KILN_FAIL(Runtime, "ir verify: ", n.kind_name(), ": ", problem);
  }
  std::string name(const Value* v) const {
    return v->name().empty() ? "value #" + std::to_string(v->id()) : "%" + v->name();
  }

  void define(const Node& n, Value* v) {
    if (v->node() != &n) fail(n, "output " + name(v) + " records another node as its producer");
    if (n.outputs().size() <= v->offset() || n.outputs()[v->offset()] != v)
      fail(n, "output " + name(v) + " records a wrong offset " + std::to_string(v->offset()));
    if (!defined_.insert(v).second) fail(n, "value " + name(v) + " is defined twice");
  }

  void check_inputs_defined(const Node& n) {
    for (size_t i = 0; i < n.inputs().size(); ++i) {
      const Value* v = n.inputs()[i];
      if (v == nullptr) fail(n, "input " + std::to_string(i) + " is null");
      if (!defined_.contains(v)) {
        const bool later = in_list_.contains(v->node());
        fail(n, "input " + std::to_string(i) + " (" + name(v) + ") is " +
                    (later ? "used before its definition" : "not defined by any node of the graph"));
      }
    }
  }

  void check_use_lists() {
    const std::vector<Node*> nodes = g_.nodes();
    std::vector<const Node*> users(nodes.begin(), nodes.end());
    users.push_back(g_.return_node());
    // Every input of a live node has the matching use.
    for (const Node* n : users) {
      for (size_t i = 0; i < n->inputs().size(); ++i) {
        const auto& uses = n->inputs()[i]->uses();
        if (std::count(uses.begin(), uses.end(), Use{const_cast<Node*>(n), i}) != 1)
          fail(*n, "the use list of input " + std::to_string(i) + " (" + name(n->inputs()[i]) +
                       ") does not record this use exactly once");
      }
    }
    // Every use recorded on a defined value is by a live node that reads it there.
    for (const Value* v : defined_) {
      for (const Use& u : v->uses()) {
        if (u.user != g_.return_node() && !in_list_.contains(u.user))
          fail(*v->node(), "value " + name(v) + " has a dangling use by " + u.user->kind_name() +
                               " (a node not in the graph)");
        if (u.index >= u.user->inputs().size() || u.user->inputs()[u.index] != v)
          fail(*v->node(), "value " + name(v) + " lists a use by " + u.user->kind_name() + " at input " +
                               std::to_string(u.index) + " that reads another value");
      }
    }
  }

  void check_attribute_names(const Node& n) {
    std::unordered_set<std::string> seen;
    for (const NamedAttribute& a : n.attributes()) {
      if (!is_identifier(a.name)) fail(n, "attribute name '" + a.name + "' is not an identifier");
      if (!seen.insert(a.name).second) fail(n, "attribute '" + a.name + "' is given twice");
    }
  }

  void check_node(const Node& n) {
    check_attribute_names(n);
    switch (n.kind()) {
      case NodeKind::Op: return check_op(n);
      case NodeKind::Constant: return check_constant(n);
      case NodeKind::ListConstruct: return check_list_construct(n);
      case NodeKind::ListUnpack: return check_list_unpack(n);
      case NodeKind::Param:
      case NodeKind::Return: return;
    }
  }

  void check_constant(const Node& n) {
    if (!n.inputs().empty()) fail(n, "a constant takes no inputs");
    if (n.attributes().size() != 1 || n.attributes()[0].name != "value")
      fail(n, "a constant has exactly one attribute, 'value'");
    if (n.outputs().size() != 1) fail(n, "a constant has exactly one output");
    const Type expected = n.attributes()[0].value.type();
    if (!(n.output()->type() == expected))
      fail(n, "output " + name(n.output()) + " has type " + n.output()->type().str() + " but the constant " +
                  n.attributes()[0].value.str() + " is a " + expected.str());
  }

  void check_list_construct(const Node& n) {
    if (!n.attributes().empty()) fail(n, "a list construction takes no attributes");
    if (n.outputs().size() != 1 || n.output()->type().kind() != Type::Kind::List)
      fail(n, "a list construction has exactly one output, of a list type");
    const Type& element = n.output()->type().element();
    for (size_t i = 0; i < n.inputs().size(); ++i) {
      if (!fits(element, n.inputs()[i]->type()))
        fail(n, "element " + std::to_string(i) + " (" + name(n.inputs()[i]) + ") has type " +
                    n.inputs()[i]->type().str() + ", not " + element.str());
    }
  }

  void check_list_unpack(const Node& n) {
    if (!n.attributes().empty()) fail(n, "a list unpacking takes no attributes");
    if (n.inputs().size() != 1 || n.input(0)->type().kind() != Type::Kind::List)
      fail(n, "a list unpacking takes exactly one input, of a list type");
    const Type& element = n.input(0)->type().element();
    for (const Value* v : n.outputs()) {
      if (!fits(element, v->type()))
        fail(n, "output " + name(v) + " has type " + v->type().str() + ", not " + element.str());
    }
  }

  /// A value of type `t` may stand where `expected` is declared: same kind;
  /// tensors may be refined; an optional accepts its element and None.
  static bool fits(const Type& expected, const Type& t) {
    if (expected.kind() == Type::Kind::Optional)
      return t.kind() == Type::Kind::None || fits(expected.element(), t) || expected == t;
    if (expected.is_tensor()) return t.is_tensor();
    return expected == t;
  }

  void check_op(const Node& n) {
    if (!n.op().entry().has_schema()) fail(n, "is not a registered operator (no schema)");
    const FunctionSchema& schema = n.op().schema();
    std::string why;
    const auto binding = bind_arguments(n, &why);
    if (!binding) fail(n, why + " for schema " + schema.str());
    const auto& args = schema.arguments();
    for (size_t i = 0; i < args.size(); ++i) {
      const ArgumentSource& s = (*binding)[i];
      if (s.is_attribute) {
        const Attribute& a = n.attributes()[s.index].value;
        if (!schema_accepts(args[i].type, a))
          fail(n, "argument '" + args[i].name + "' expects " + args[i].type.str() + " but got the literal " + a.str());
      } else {
        const Value* v = n.inputs()[s.index];
        if (!schema_accepts(args[i].type, v->type()))
          fail(n, "argument '" + args[i].name + "' expects " + args[i].type.str() + " but got " + name(v) + " : " +
                      v->type().str());
      }
    }
    const auto& returns = schema.returns();
    if (returns.size() != n.outputs().size())
      fail(n, "has " + std::to_string(n.outputs().size()) + " outputs but its schema returns " +
                  std::to_string(returns.size()) + " values");
    for (size_t i = 0; i < returns.size(); ++i) {
      if (!schema_accepts(returns[i].type, n.outputs()[i]->type()))
        fail(n, "output " + name(n.outputs()[i]) + " has type " + n.outputs()[i]->type().str() +
                    " but the schema returns " + returns[i].type.str());
    }
  }

  void check_type(const Node& n, const Type& t) {
    if (t.kind() == Type::Kind::List || t.kind() == Type::Kind::Optional) return check_type(n, t.element());
    if (!t.is_tensor()) return;
    const TensorType& tt = t.tensor_type();
    if (tt.strides && !tt.sizes) fail(n, "type " + t.str() + " has strides but no sizes");
    if (tt.strides && tt.sizes && tt.strides->size() != tt.sizes->size())
      fail(n, "type " + t.str() + " has " + std::to_string(tt.strides->size()) + " strides for " +
                  std::to_string(tt.sizes->size()) + " dimensions");
    if (tt.requires_grad && tt.dtype && !is_differentiable_dtype(*tt.dtype))
      fail(n, "type " + t.str() + " requires grad but only floating and complex tensors can");
  }

  const Graph& g_;
  std::unordered_set<const Value*> defined_;
  std::unordered_set<const Node*> in_list_;
};

}  // namespace

void verify(const Graph& g) { GraphVerifier(g).run(); }

}  // namespace kiln::ir
