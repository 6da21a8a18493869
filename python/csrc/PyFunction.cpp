// Backward nodes implemented in Python: kiln.autograd.Function's backward,
// wrapped as a Node so the engine runs it like any other.
#include <Python.h>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "eager/autograd/AutogradMeta.h"
#include "eager/autograd/Engine.h"
#include "python/csrc/Exceptions.h"
#include "python/csrc/PyTensor.h"

namespace py = pybind11;

namespace kiln::python {

namespace {

using autograd::Edge;
using autograd::variable_list;

class PythonFunctionNode final : public autograd::Node {
 public:
  PythonFunctionNode(std::string name, py::function backward, py::function release)
      : name_(std::move(name)), backward_(std::move(backward)), release_(std::move(release)) {}

  ~PythonFunctionNode() override {
    py::gil_scoped_acquire gil;
    backward_ = py::function();
    release_ = py::function();
  }

  variable_list apply(variable_list&& grads) override {
    py::gil_scoped_acquire gil;
    py::tuple args(grads.size());
    for (size_t i = 0; i < grads.size(); ++i) {
      args[i] = grads[i].defined() ? py::reinterpret_steal<py::object>(wrap_tensor(grads[i])) : py::none();
    }
    py::object result = backward_(*args);
    py::tuple results = py::isinstance<py::tuple>(result) ? py::reinterpret_borrow<py::tuple>(result)
                                                           : py::make_tuple(result);
    KILN_CHECK(results.size() >= num_outputs(), "function ", name_, " returned an incorrect number of gradients (expected ",
               num_outputs(), ", got ", results.size(), ")");
    variable_list out(num_outputs());
    for (size_t i = 0; i < num_outputs(); ++i) {
      py::handle r = results[i];
      if (r.is_none()) continue;
      if (!next_edge(i).is_valid()) continue;  // a non-tensor input's "gradient" is ignored
      out[i] = tensor_from_object(r.ptr(), "gradient returned by backward");
    }
    return out;
  }

  [[nodiscard]] std::string name() const override { return name_; }

  void release_variables() override {
    py::gil_scoped_acquire gil;
    if (release_) release_();
  }

 private:
  std::string name_;
  py::function backward_;
  py::function release_;
};

/// A node for `inputs` (None where an argument is not a tensor) that calls
/// backward(*grads) -> one gradient per input.
py::object make_function_node(const std::string& name, py::function backward, py::function release,
                               py::sequence inputs) {
  auto node = std::make_shared<PythonFunctionNode>(name, std::move(backward), std::move(release));
  std::vector<Edge> edges;
  for (size_t i = 0; i < inputs.size(); ++i) {
    py::handle h = inputs[i];
    edges.push_back(h.is_none() ? Edge{} : autograd::gradient_edge(tensor_from_object(h.ptr(), "input")));
  }
  node->set_next_edges(std::move(edges));
  autograd::record_forward_trace(*node);
  return py::cast(std::static_pointer_cast<autograd::Node>(node));
}

void set_history(py::handle output, py::object node) {
  const Tensor& t = tensor_from_object(output.ptr(), "output");
  autograd::set_history(t, node.cast<std::shared_ptr<autograd::Node>>());
}

}  // namespace

void init_python_function(PyObject* module) {
  py::module_ m = py::reinterpret_borrow<py::module_>(module);
  py::class_<autograd::Node, std::shared_ptr<autograd::Node>>(m, "_FunctionNode")
      .def("name", &autograd::Node::name);
  m.def("_make_function_node", &make_function_node, py::arg("name"), py::arg("backward"), py::arg("release"),
        py::arg("inputs"));
  m.def("_set_history", &set_history, py::arg("output"), py::arg("node"));
}

}  // namespace kiln::python
