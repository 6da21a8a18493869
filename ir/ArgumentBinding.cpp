// Binding an op node's inputs and attributes to its schema's arguments.
#include "ir/ArgumentBinding.h"

namespace kiln::ir {

std::optional<std::vector<ArgumentSource>> bind_arguments(const Node& n, std::string* why) {
  auto fail = [why](std::string reason) -> std::optional<std::vector<ArgumentSource>> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  const std::vector<SchemaArgument>& args = n.op().schema().arguments();
  std::vector<std::optional<size_t>> attribute_of(args.size());
  for (size_t a = 0; a < n.attributes().size(); ++a) {
    const std::string& name = n.attributes()[a].name;
    size_t i = 0;
    while (i < args.size() && args[i].name != name) ++i;
    if (i == args.size()) return fail("unknown argument '" + name + "'");
    if (attribute_of[i]) return fail("argument '" + name + "' is given twice");
    attribute_of[i] = a;
  }
  std::vector<ArgumentSource> out;
  out.reserve(args.size());
  std::string value_args;
  size_t next_input = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (attribute_of[i]) {
      out.push_back({true, *attribute_of[i]});
      continue;
    }
    value_args += (value_args.empty() ? "" : ", ") + args[i].name;
    out.push_back({false, next_input++});
  }
  if (next_input != n.inputs().size()) {
    return fail("expects " + std::to_string(next_input) + " value arguments (" + value_args + "), got " +
                std::to_string(n.inputs().size()));
  }
  return out;
}

}  // namespace kiln::ir
