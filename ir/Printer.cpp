// Printer: graph -> text.
#include "ir/Printer.h"

#include <sstream>
#include <unordered_map>

#include "ir/ArgumentBinding.h"

namespace kiln::ir {

namespace {

class GraphPrinter {
 public:
  explicit GraphPrinter(const Graph& g) : g_(g) {}

  std::string run() {
    os_ << "graph(";
    print_definitions(g_.inputs());
    os_ << "):\n";
    for (const Node* n : g_.nodes()) print_node(*n);
    os_ << "  return (";
    print_uses(g_.outputs());
    os_ << ")\n";
    return os_.str();
  }

 private:
  const std::string& name_of(const Value* v) {
    auto it = names_.find(v);
    if (it != names_.end()) return it->second;
    // A value used before its definition is printed (only in a broken graph)
    // still gets a stable number.
    std::string name = v->name().empty() ? std::to_string(next_number_++) : v->name();
    return names_.emplace(v, std::move(name)).first->second;
  }

  void print_definitions(const std::vector<Value*>& values) {
    for (size_t i = 0; i < values.size(); ++i)
      os_ << (i ? ", " : "") << '%' << name_of(values[i]) << " : " << values[i]->type();
  }

  void print_uses(const std::vector<Value*>& values) {
    for (size_t i = 0; i < values.size(); ++i) os_ << (i ? ", " : "") << '%' << name_of(values[i]);
  }

  void print_node(const Node& n) {
    os_ << "  ";
    if (!n.outputs().empty()) {
      print_definitions(n.outputs());
      os_ << " = ";
    }
    os_ << n.kind_name() << '(';
    std::optional<std::vector<ArgumentSource>> binding;
    if (n.kind() == NodeKind::Op && n.op().entry().has_schema()) binding = bind_arguments(n);
    if (binding) print_bound_arguments(n, *binding);
    else print_raw_arguments(n);
    os_ << ")\n";
  }

  /// Schema order: values positionally until the first literal, then `name=...` for the rest.
  void print_bound_arguments(const Node& n, const std::vector<ArgumentSource>& binding) {
    const std::vector<SchemaArgument>& args = n.op().schema().arguments();
    bool keyword = false;
    for (size_t i = 0; i < binding.size(); ++i) {
      if (i) os_ << ", ";
      if (binding[i].is_attribute) keyword = true;
      if (keyword) os_ << args[i].name << '=';
      if (binding[i].is_attribute) os_ << n.attributes()[binding[i].index].value;
      else os_ << '%' << name_of(n.inputs()[binding[i].index]);
    }
  }

  void print_raw_arguments(const Node& n) {
    print_uses(n.inputs());
    for (size_t i = 0; i < n.attributes().size(); ++i) {
      if (i || !n.inputs().empty()) os_ << ", ";
      os_ << n.attributes()[i].name << '=' << n.attributes()[i].value;
    }
  }

  const Graph& g_;
  std::ostringstream os_;
  std::unordered_map<const Value*, std::string> names_;
  size_t next_number_ = 0;
};

}  // namespace

std::string print(const Graph& g) { return GraphPrinter(g).run(); }

}  // namespace kiln::ir
