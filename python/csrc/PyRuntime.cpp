// kiln._C._runtime: compile a captured graph into a runtime::CompiledGraph
// (fused LLVM kernels + eager steps) and run it; introspection for tests and
// KILN_LOGS=codegen.
#include <Python.h>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "codegen/PointwiseMath.h"
#include "codegen/llvm/KernelJit.h"
#include "python/csrc/Exceptions.h"
#include "python/csrc/IValueConversion.h"
#include "python/csrc/PyIr.h"
#include "runtime/CompiledGraph.h"

namespace py = pybind11;

namespace kiln::python {

namespace {

struct PyCompiledGraph {
  std::unique_ptr<runtime::CompiledGraph> compiled;
  std::vector<SchemaArgument> arguments;  // how each input converts from Python
};

py::list run_compiled(const PyCompiledGraph& self, const py::sequence& inputs) {
  KILN_CHECK_TYPE(static_cast<size_t>(py::len(inputs)) == self.arguments.size(), "compiled graph: takes ",
                  self.arguments.size(), " inputs but got ", py::len(inputs));
  std::vector<IValue> values;
  values.reserve(self.arguments.size());
  for (size_t i = 0; i < self.arguments.size(); ++i) {
    py::object item = inputs[i];
    values.push_back(ivalue_from_python(item.ptr(), self.arguments[i], "compiled graph"));
  }
  std::vector<IValue> outputs;
  {
    py::gil_scoped_release no_gil;
    outputs = self.compiled->run(std::move(values));
  }
  py::list out;
  for (const IValue& v : outputs) out.append(py::reinterpret_steal<py::object>(ivalue_to_python(v)));
  return out;
}

}  // namespace

void init_runtime(PyObject* module) {
  py::module_ m = py::reinterpret_borrow<py::module_>(module);
  py::module_ rt = m.def_submodule("_runtime", "compiled graphs: fused LLVM kernels + eager steps (runtime/README.md)");
  py::class_<PyCompiledGraph>(rt, "CompiledGraph")
      .def("run", &run_compiled, py::arg("inputs"), "Runs the graph; returns its outputs as a list.")
      .def("__call__", &run_compiled, py::arg("inputs"))
      .def_property_readonly("kernel_count", [](const PyCompiledGraph& g) { return g.compiled->kernel_count(); })
      .def_property_readonly("kernels", [](const PyCompiledGraph& g) { return g.compiled->kernel_ir(); })
      .def_property_readonly("kernel_ops", [](const PyCompiledGraph& g) { return g.compiled->kernel_ops(); })
      .def_property_readonly("eager_ops", [](const PyCompiledGraph& g) { return g.compiled->eager_ops(); })
      .def_property_readonly("llvm_ir", [](const PyCompiledGraph& g) { return g.compiled->llvm_ir(); });
  rt.def(
      "compile",
      [](const ir::Graph& g, bool fuse, bool keep_llvm_ir, bool runs_without_autograd, bool decompose) {
        PyCompiledGraph out;
        for (size_t i = 0; i < g.inputs().size(); ++i) out.arguments.push_back(argument_for(g.inputs()[i]->type(), i));
        runtime::CompileOptions options;
        options.fuse = fuse;
        options.keep_llvm_ir = keep_llvm_ir;
        options.runs_without_autograd = runs_without_autograd;
        options.decompose = decompose;
        py::gil_scoped_release no_gil;
        out.compiled = std::make_unique<runtime::CompiledGraph>(g, options);
        return out;
      },
      py::arg("graph"), py::arg("fuse") = true, py::arg("keep_llvm_ir") = false,
      py::arg("runs_without_autograd") = false, py::arg("decompose") = true,
      "Compiles a verified graph: fusion groups become LLVM kernels, other nodes eager steps.");
  rt.def("pointwise_math_ops", &codegen::pointwise_math_ops,
         "The ops the kernel math table covers (codegen/PointwiseMath.h).");
  rt.def("compiled_kernel_count", &codegen::compiled_kernel_count, "Kernels in the process's JIT cache.");
}

}  // namespace kiln::python
