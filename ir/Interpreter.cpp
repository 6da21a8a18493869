// Interpreter: runs a graph node by node through the boxed dispatcher.
#include "ir/Interpreter.h"

#include <iterator>
#include <unordered_map>

#include "eager/core/Error.h"
#include "eager/ops/Tensor.h"
#include "ir/ArgumentBinding.h"

namespace kiln::ir {

namespace {

/// Runs single nodes, reading their inputs through a getter.
class NodeRunner {
 public:
  explicit NodeRunner(const std::function<const IValue&(const Value*)>& get) : get_(get) {}

  /// The boxed form of literal `a` for an argument of type `s` (an empty list
  /// literal becomes the list kind the argument wants; See Note [Empty lists are int lists]).
  IValue literal_for(const SchemaType& s, const Attribute& a) {
    if (s.is_list && a.kind() == Attribute::Kind::IntList && a.to_int_list().empty()) {
      switch (s.kind) {
        case SchemaType::Kind::Float: return IValue(std::vector<double>{});
        case SchemaType::Kind::Bool: return IValue(std::vector<bool>{});
        case SchemaType::Kind::Tensor:
          if (s.element_optional) return IValue(std::vector<std::optional<Tensor>>{});
          return IValue(std::vector<Tensor>{});
        default: break;
      }
    }
    return a.to_ivalue();
  }

  std::vector<IValue> dispatch_node(const Node& n) {
    switch (n.kind()) {
      case NodeKind::Constant: return {n.attributes().at(0).value.to_ivalue()};
      case NodeKind::ListConstruct: return {construct_list(n)};
      case NodeKind::ListUnpack: return unpack_list(n);
      case NodeKind::Op: return run_op(n);
      case NodeKind::Param:
      case NodeKind::Return: KILN_FAIL(Runtime, "ir interpret: ", n.kind_name(), " in the node list");
    }
    return {};
  }

  std::vector<IValue> run_op(const Node& n) {
    const OperatorHandle& op = n.op();
    std::string why;
    const auto binding = bind_arguments(n, &why);
    KILN_CHECK(binding.has_value(), "ir interpret: ", n.kind_name(), ": ", why);
    const auto& args = op.schema().arguments();
    Stack stack;
    stack.reserve(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      const ArgumentSource& s = (*binding)[i];
      if (s.is_attribute) stack.push_back(literal_for(args[i].type, n.attributes()[s.index].value));
      else stack.push_back(get_(n.inputs()[s.index]));
    }
    op.call_boxed(&stack);
    KILN_CHECK(stack.size() == n.outputs().size(), "ir interpret: ", n.kind_name(), " returned ", stack.size(),
               " values for ", n.outputs().size(), " outputs");
    return std::vector<IValue>(std::make_move_iterator(stack.begin()), std::make_move_iterator(stack.end()));
  }

  IValue construct_list(const Node& n) {
    const Type& element = n.output()->type().element();
    switch (element.kind()) {
      case Type::Kind::Tensor: {
        std::vector<Tensor> l;
        for (const Value* v : n.inputs()) l.push_back(get_(v).to_tensor());
        return IValue(std::move(l));
      }
      case Type::Kind::Optional: {
        KILN_CHECK(element.element().is_tensor(), "ir interpret: no list of ", element.str());
        std::vector<std::optional<Tensor>> l;
        for (const Value* v : n.inputs()) {
          const IValue& x = get_(v);
          l.push_back(x.is_none() ? std::nullopt : std::optional<Tensor>(x.to_tensor()));
        }
        return IValue(std::move(l));
      }
      case Type::Kind::Int: {
        DimVector l;
        for (const Value* v : n.inputs()) l.push_back(get_(v).to_int());
        return IValue(std::move(l));
      }
      case Type::Kind::Float: {
        std::vector<double> l;
        for (const Value* v : n.inputs()) l.push_back(get_(v).to_double());
        return IValue(std::move(l));
      }
      case Type::Kind::Bool: {
        std::vector<bool> l;
        for (const Value* v : n.inputs()) l.push_back(get_(v).to_bool());
        return IValue(std::move(l));
      }
      default: KILN_FAIL(Runtime, "ir interpret: no list of ", element.str());
    }
  }

  std::vector<IValue> unpack_list(const Node& n) {
    const IValue& list = get_(n.input(0));
    std::vector<IValue> items;
    switch (list.tag()) {
      case IValue::Tag::TensorList:
        for (const Tensor& t : list.to_tensor_list()) items.emplace_back(t);
        break;
      case IValue::Tag::OptionalTensorList:
        for (const auto& t : list.to_optional_tensor_list()) items.push_back(t ? IValue(*t) : IValue());
        break;
      case IValue::Tag::IntList:
        for (int64_t x : list.to_int_list()) items.emplace_back(x);
        break;
      case IValue::Tag::DoubleList:
        for (double x : list.to_double_list()) items.emplace_back(x);
        break;
      case IValue::Tag::BoolList:
        for (bool x : list.to_bool_list()) items.emplace_back(x);
        break;
      default: KILN_FAIL(Runtime, "ir interpret: prim::ListUnpack of a ", list.tag_name());
    }
    KILN_CHECK(items.size() == n.outputs().size(), "ir interpret: prim::ListUnpack of a list of ", items.size(),
               " into ", n.outputs().size(), " values");
    return items;
  }


 private:
  const std::function<const IValue&(const Value*)>& get_;
};

class GraphInterpreter {
 public:
  explicit GraphInterpreter(const Graph& g) : g_(g) {}

  std::vector<IValue> run(std::vector<IValue> inputs) {
    KILN_CHECK(inputs.size() == g_.inputs().size(), "ir interpret: the graph takes ", g_.inputs().size(),
               " inputs but got ", inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      check_input(i, g_.inputs()[i]->type(), inputs[i]);
      set(g_.inputs()[i], std::move(inputs[i]));
    }
    const auto getter = [this](const Value* v) -> const IValue& { return get(v); };
    for (const Node* n : g_.nodes()) {
      std::vector<IValue> outputs = run_node(*n, getter);
      for (size_t i = 0; i < outputs.size(); ++i) set(n->outputs()[i], std::move(outputs[i]));
      for (const Value* v : n->inputs()) release_use(v);
    }
    std::vector<IValue> out;
    out.reserve(g_.outputs().size());
    for (const Value* v : g_.outputs()) out.push_back(get(v));
    return out;
  }

 private:
  void set(const Value* v, IValue value) {
    if (v->has_uses()) env_[v] = Slot{std::move(value), v->uses().size()};
  }
  const IValue& get(const Value* v) const {
    auto it = env_.find(v);
    KILN_CHECK(it != env_.end(), "ir interpret: value #", v->id(), " has no value (verify the graph first)");
    return it->second.value;
  }
  void release_use(const Value* v) {
    auto it = env_.find(v);
    if (it != env_.end() && --it->second.uses_left == 0) env_.erase(it);
  }

  void check_input(size_t i, const Type& type, const IValue& value) {
    if (!type.is_tensor()) return;
    KILN_CHECK(value.is_tensor(), "ir interpret: input ", i, " must be a tensor, got ", value.tag_name());
    const Tensor& t = value.to_tensor();
    const TensorType& tt = type.tensor_type();
    KILN_CHECK(!tt.dtype || *tt.dtype == t.dtype(), "ir interpret: input ", i, " must be ", dtype_name(*tt.dtype),
               ", got ", dtype_name(t.dtype()));
    if (!tt.sizes) return;
    KILN_CHECK(tt.sizes->size() == static_cast<size_t>(t.dim()), "ir interpret: input ", i, " must have ",
               tt.sizes->size(), " dimensions, got ", t.dim());
    for (size_t d = 0; d < tt.sizes->size(); ++d) {
      const SymbolicSize& s = (*tt.sizes)[d];
      const int64_t actual = t.sizes()[d];
      if (s.is_concrete()) {
        KILN_CHECK(s.value() == actual, "ir interpret: input ", i, " must have size ", s.value(), " at dimension ",
                   d, ", got ", actual);
        continue;
      }
      auto [it, fresh] = symbols_.emplace(s.name(), actual);
      KILN_CHECK(fresh || it->second == actual, "ir interpret: size ", s.name(), " is ", it->second,
                 " elsewhere but input ", i, " has ", actual, " at dimension ", d);
    }
  }

  struct Slot {
    IValue value;
    size_t uses_left;
  };
  const Graph& g_;
  std::unordered_map<const Value*, Slot> env_;
  std::unordered_map<std::string, int64_t> symbols_;
};

}  // namespace

std::vector<IValue> run_node(const Node& n, const std::function<const IValue&(const Value*)>& get) {
  return NodeRunner(get).dispatch_node(n);
}

std::vector<IValue> interpret(const Graph& g, std::vector<IValue> inputs) {
  return GraphInterpreter(g).run(std::move(inputs));
}

}  // namespace kiln::ir
