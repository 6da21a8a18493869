// Op node arguments by schema name.
#include "passes/arguments.h"

#include "ir/ArgumentBinding.h"

namespace kiln::passes {

namespace {

/// The source of argument `name` of op node n, or nullopt.
std::optional<ir::ArgumentSource> source_of(const ir::Node& n, std::string_view name) {
  if (n.kind() != ir::NodeKind::Op) return std::nullopt;
  const auto binding = ir::bind_arguments(n);
  if (!binding) return std::nullopt;
  const auto& args = n.op().schema().arguments();
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].name == name) return (*binding)[i];
  }
  return std::nullopt;
}

}  // namespace

const ir::Attribute* literal_argument(const ir::Node& n, std::string_view name) {
  const auto s = source_of(n, name);
  if (!s) return nullptr;
  if (s->is_attribute) return &n.attributes()[s->index].value;
  const ir::Node* producer = n.inputs()[s->index]->node();
  return producer->kind() == ir::NodeKind::Constant ? &producer->attributes().at(0).value : nullptr;
}

ir::Value* value_argument(const ir::Node& n, std::string_view name) {
  const auto s = source_of(n, name);
  return s && !s->is_attribute ? n.inputs()[s->index] : nullptr;
}

ir::Value* first_argument(const ir::Node& n) {
  if (n.kind() != ir::NodeKind::Op || n.op().schema().arguments().empty()) return nullptr;
  return value_argument(n, n.op().schema().arguments()[0].name);
}

}  // namespace kiln::passes
