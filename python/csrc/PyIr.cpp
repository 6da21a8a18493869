// kiln._C._ir: the IR from Python for the capture work and for tests: parse
// and print the text form, verify, and run a graph with the reference
// interpreter. Graphs are opaque handles; their text is their interface.
#include <Python.h>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "ir/Interpreter.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "python/csrc/Exceptions.h"
#include "python/csrc/IValueConversion.h"
#include "python/csrc/PyIr.h"

namespace py = pybind11;

namespace kiln::python {

/// The schema argument a graph input of type `t` converts through.
SchemaArgument argument_for(const ir::Type& t, size_t index) {
  SchemaArgument a;
  a.name = "input" + std::to_string(index);
  const ir::Type* base = &t;
  if (t.kind() == ir::Type::Kind::Optional) {
    a.type.optional = true;
    base = &t.element();
  }
  if (base->kind() == ir::Type::Kind::List) {
    a.type.is_list = true;
    base = &base->element();
    if (base->kind() == ir::Type::Kind::Optional) {
      a.type.element_optional = true;
      base = &base->element();
    }
  }
  using K = SchemaType::Kind;
  switch (base->kind()) {
    case ir::Type::Kind::Tensor: a.type.kind = K::Tensor; break;
    case ir::Type::Kind::Int: a.type.kind = K::Int; break;
    case ir::Type::Kind::Float: a.type.kind = K::Float; break;
    case ir::Type::Kind::Bool: a.type.kind = K::Bool; break;
    case ir::Type::Kind::Scalar:
    case ir::Type::Kind::Complex: a.type.kind = K::Scalar; break;
    case ir::Type::Kind::Str: a.type.kind = K::Str; break;
    case ir::Type::Kind::ScalarType: a.type.kind = K::ScalarType; break;
    case ir::Type::Kind::Device: a.type.kind = K::Device; break;
    case ir::Type::Kind::Generator: a.type.kind = K::Generator; break;
    default: KILN_FAIL(Type, "ir.run: a graph input of type ", t.str(), " cannot be passed from Python");
  }
  return a;
}

namespace {

py::list run_graph(const ir::Graph& g, const py::sequence& inputs) {
  KILN_CHECK_TYPE(static_cast<size_t>(py::len(inputs)) == g.inputs().size(), "ir.run: the graph takes ",
                  g.inputs().size(), " inputs but got ", py::len(inputs));
  std::vector<IValue> values;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    py::object item = inputs[i];
    values.push_back(ivalue_from_python(item.ptr(), argument_for(g.inputs()[i]->type(), i), "ir.run"));
  }
  std::vector<IValue> outputs;
  {
    py::gil_scoped_release no_gil;
    outputs = ir::interpret(g, std::move(values));
  }
  py::list out;
  for (const IValue& v : outputs) out.append(py::reinterpret_steal<py::object>(ivalue_to_python(v)));
  return out;
}

}  // namespace

void init_ir(PyObject* module) {
  py::module_ m = py::reinterpret_borrow<py::module_>(module);
  py::module_ ir_module = m.def_submodule("_ir", "kiln's graph IR (see ir/README.md)");
  py::class_<ir::Graph, std::unique_ptr<ir::Graph>>(ir_module, "Graph")
      .def("__str__", [](const ir::Graph& g) { return ir::print(g); })
      .def("verify", [](const ir::Graph& g) { ir::verify(g); })
      .def_property_readonly("num_inputs", [](const ir::Graph& g) { return g.inputs().size(); })
      .def_property_readonly("num_outputs", [](const ir::Graph& g) { return g.outputs().size(); })
      .def_property_readonly("node_kinds", [](const ir::Graph& g) {
        std::vector<std::string> kinds;
        for (const ir::Node* n : g.nodes()) kinds.push_back(n->kind_name());
        return kinds;
      });
  ir_module.def("parse", [](const std::string& text) { return ir::parse(text); }, py::arg("text"),
                "Parses the text form into a Graph (RuntimeError naming line and column when malformed).");
  ir_module.def("print", [](const ir::Graph& g) { return ir::print(g); }, py::arg("graph"));
  ir_module.def("verify", [](const ir::Graph& g) { ir::verify(g); }, py::arg("graph"));
  ir_module.def("run", &run_graph, py::arg("graph"), py::arg("inputs"),
                "Runs a verified graph on inputs through the dispatcher; returns the outputs as a list.");
  ir_module.def(
      "run",
      [](const std::string& text, const py::sequence& inputs) {
        auto g = ir::parse(text);
        ir::verify(*g);
        return run_graph(*g, inputs);
      },
      py::arg("text"), py::arg("inputs"));
}

}  // namespace kiln::python
