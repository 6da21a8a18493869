// Clone: node and graph copies through a value map.
#include "ir/Clone.h"

#include "eager/core/Error.h"

namespace kiln::ir {

namespace {

void carry_name(const Value* from, Value* to, Graph& dst) {
  if (!from->name().empty() && dst.find_value(from->name()) == nullptr) dst.set_name(to, from->name());
}

}  // namespace

Node* clone_node(const Node& n, Graph& dst, ValueMap& map) {
  Node* copy = dst.create(n.kind(), n.kind() == NodeKind::Op ? std::optional(n.op()) : std::nullopt);
  for (const Value* in : n.inputs()) {
    auto it = map.find(in);
    KILN_CHECK(it != map.end(), "ir clone: ", n.kind_name(), " reads a value the map does not cover");
    copy->add_input(it->second);
  }
  for (const NamedAttribute& a : n.attributes()) copy->set_attribute(a.name, a.value);
  for (const Value* out : n.outputs()) {
    Value* v = copy->add_output(out->type());
    carry_name(out, v, dst);
    map[out] = v;
  }
  return copy;
}

std::vector<Value*> clone_graph_into(const Graph& src, Graph& dst, const std::vector<Value*>& inputs, ValueMap& map,
                                     Node* pos) {
  KILN_CHECK(inputs.size() == src.inputs().size(), "ir clone: the graph takes ", src.inputs().size(),
             " inputs but got ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) map[src.inputs()[i]] = inputs[i];
  for (const Node* n : src.nodes()) {
    Node* copy = clone_node(*n, dst, map);
    if (pos) copy->insert_before(pos);
    else dst.append(copy);
  }
  std::vector<Value*> outputs;
  for (const Value* v : src.outputs()) {
    auto it = map.find(v);
    KILN_CHECK(it != map.end(), "ir clone: a graph output is not defined in the graph");
    outputs.push_back(it->second);
  }
  return outputs;
}

std::unique_ptr<Graph> clone(const Graph& g) {
  auto copy = std::make_unique<Graph>();
  ValueMap map;
  std::vector<Value*> inputs;
  for (const Value* in : g.inputs()) {
    Value* v = copy->add_input(in->type());
    carry_name(in, v, *copy);
    inputs.push_back(v);
  }
  for (Value* out : clone_graph_into(g, *copy, inputs, map)) copy->add_output(out);
  return copy;
}

}  // namespace kiln::ir
