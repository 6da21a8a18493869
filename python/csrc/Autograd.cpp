// Autograd from Python: Tensor.grad / grad_fn / is_leaf / detach /
// retain_grad / register_hook, grad mode, anomaly mode, and the engine entry
// point kiln.autograd.backward and kiln.autograd.grad are built on.
#include <Python.h>

#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "eager/autograd/AccumulateGrad.h"
#include "eager/autograd/AutogradMeta.h"
#include "eager/autograd/Engine.h"
#include "eager/autograd/GradMode.h"
#include "eager/autograd/Variable.h"
#include "python/csrc/Exceptions.h"
#include "python/csrc/PyTensor.h"

namespace py = pybind11;

namespace kiln::python {

namespace {

using autograd::AutogradMeta;
using autograd::Edge;
using autograd::Node;

py::object to_py(const Tensor& t) {
  if (!t.defined()) return py::none();
  return py::reinterpret_steal<py::object>(wrap_tensor(t));
}

const Tensor& from_py(py::handle h, const char* what) { return tensor_from_object(h.ptr(), what); }

/// A Python view of a graph node (grad_fn).
struct PyNode {
  std::shared_ptr<Node> node;
};

py::object node_to_py(const std::shared_ptr<Node>& node) {
  if (!node) return py::none();
  return py::cast(PyNode{node});
}

// --- Tensor properties ----------------------------------------------------------

PyObject* get_grad(PyObject* self, void*) {
  KILN_PY_BEGIN
  const AutogradMeta* m = autograd::autograd_meta(unwrap_tensor(self));
  if (m == nullptr) Py_RETURN_NONE;
  const Tensor& g = m->retained_grad ? *m->retained_grad : m->grad;
  if (!g.defined()) Py_RETURN_NONE;
  return wrap_tensor(g);
  KILN_PY_END(nullptr)
}

int set_grad(PyObject* self, PyObject* value, void*) {
  KILN_PY_BEGIN
  const Tensor& t = unwrap_tensor(self);
  if (value == nullptr || value == Py_None) {
    if (AutogradMeta* m = autograd::autograd_meta(t)) {
      m->grad = Tensor();
      if (m->retained_grad) *m->retained_grad = Tensor();
    }
    return 0;
  }
  const Tensor& g = tensor_from_object(value, "assigned grad");
  KILN_CHECK(g.dtype() == t.dtype(), "attempting to assign a gradient with dtype '", g.dtype(),
             "' to a tensor with dtype '", t.dtype(), "'. Please ensure that the gradient and the tensor have the same dtype");
  KILN_CHECK(g.sizes().size() == t.sizes().size() && std::equal(g.sizes().begin(), g.sizes().end(), t.sizes().begin()),
             "assigned grad has data of a different size");
  autograd::materialize_autograd_meta(t).grad = g;
  return 0;
  KILN_PY_END(-1)
}

PyObject* get_grad_fn(PyObject* self, void*) {
  KILN_PY_BEGIN
  return node_to_py(autograd::grad_fn(unwrap_tensor(self))).release().ptr();
  KILN_PY_END(nullptr)
}

PyObject* get_is_leaf(PyObject* self, void*) { return PyBool_FromLong(autograd::is_leaf(unwrap_tensor(self))); }

/// Tensor._base: the tensor a view aliases (Note [Views know their base]), or None.
PyObject* get_base(PyObject* self, void*) {
  KILN_PY_BEGIN
  TensorImpl* base = unwrap_tensor(self).impl()->view_base();
  if (base == nullptr) Py_RETURN_NONE;
  return wrap_tensor(Tensor(intrusive_ptr<TensorImpl>(base)));
  KILN_PY_END(nullptr)
}

PyObject* tensor_is_view(PyObject* self, PyObject*) {
  return PyBool_FromLong(unwrap_tensor(self).impl()->view_base() != nullptr);
}

PyObject* get_retains_grad(PyObject* self, void*) {
  const AutogradMeta* m = autograd::autograd_meta(unwrap_tensor(self));
  return PyBool_FromLong(m != nullptr && m->retains_grad);
}

PyObject* tensor_retain_grad(PyObject* self, PyObject*) {
  KILN_PY_BEGIN
  autograd::retain_grad(unwrap_tensor(self));
  Py_RETURN_NONE;
  KILN_PY_END(nullptr)
}

/// register_hook(fn): fn(grad) -> Tensor or None; returns a removable handle id.
size_t register_hook(py::handle self, py::function fn) {
  const Tensor& t = from_py(self, "self");
  KILN_CHECK(t.requires_grad(), "cannot register a hook on a tensor that doesn't require gradient");
  auto call = [fn](const Tensor& grad) -> Tensor {
    py::gil_scoped_acquire gil;
    py::object out = fn(to_py(grad));
    if (out.is_none()) return Tensor();
    return tensor_from_object(out.ptr(), "hook result");
  };
  (void)autograd::grad_fn(t);  // a stale view's history, regenerated first
  AutogradMeta& m = autograd::materialize_autograd_meta(t);
  if (m.grad_fn) return m.grad_fn->add_tensor_pre_hook(m.output_nr, call);
  static size_t next_leaf_id = 1u << 30;
  const size_t id = next_leaf_id++;
  m.leaf_hooks.emplace_back(id, call);
  return id;
}

/// A Python callable the engine may copy and drop on a thread without the GIL:
/// the last copy takes the GIL to release it.
std::shared_ptr<py::function> held_with_gil(py::function fn) {
  return std::shared_ptr<py::function>(new py::function(std::move(fn)), [](py::function* f) {
    py::gil_scoped_acquire gil;
    delete f;
  });
}

/// register_post_accumulate_grad_hook(fn): fn(leaf) after backward accumulated into leaf.grad.
size_t register_post_accumulate_grad_hook(py::handle self, py::function fn) {
  const Tensor& t = from_py(self, "self");
  KILN_CHECK(t.requires_grad(), "cannot register a hook on a tensor that doesn't require gradient");
  KILN_CHECK(autograd::is_leaf(t), "post accumulate grad hooks cannot be registered on non-leaf tensors");
  auto held = held_with_gil(std::move(fn));
  auto call = [held](const Tensor& leaf) {
    py::gil_scoped_acquire gil;
    (void)(*held)(to_py(leaf));
  };
  static size_t next_id = 1;
  const size_t id = next_id++;
  autograd::materialize_autograd_meta(t).post_accumulate_grad_hooks.emplace_back(id, call);
  return id;
}

void remove_post_accumulate_grad_hook(py::handle self, size_t id) {
  const Tensor& t = from_py(self, "self");
  AutogradMeta* m = autograd::autograd_meta(t);
  if (m == nullptr) return;
  auto& hooks = m->post_accumulate_grad_hooks;
  for (auto it = hooks.begin(); it != hooks.end(); ++it) {
    if (it->first == id) {
      hooks.erase(it);
      break;
    }
  }
}

void remove_hook(py::handle self, size_t id) {
  const Tensor& t = from_py(self, "self");
  AutogradMeta* m = autograd::autograd_meta(t);
  if (m == nullptr) return;
  if (m->grad_fn) m->grad_fn->remove_tensor_pre_hook(id);
  for (auto it = m->leaf_hooks.begin(); it != m->leaf_hooks.end(); ++it) {
    if (it->first == id) {
      m->leaf_hooks.erase(it);
      break;
    }
  }
}

/// The engine entry: gradients of `tensors` (seeded with `grad_tensors`)
/// flow back; with `inputs` and accumulate=False they are returned (grad()).
py::object run_backward(py::sequence tensors, py::sequence grad_tensors, bool keep_graph, bool create_graph,
                        py::sequence inputs, bool allow_unused, bool accumulate_grad) {
  std::vector<Edge> roots;
  autograd::variable_list grads;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = from_py(tensors[i], "tensors");
    Edge e = autograd::gradient_edge(t);
    KILN_CHECK(e.is_valid(), "element ", i, " of tensors does not require grad and does not have a grad_fn");
    roots.push_back(e);
    grads.push_back(from_py(grad_tensors[i], "grad_tensors"));
  }
  std::vector<Edge> outputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = from_py(inputs[i], "inputs");
    Edge e = autograd::gradient_edge(t);
    KILN_CHECK(e.is_valid() || allow_unused, "One of the differentiated Tensors does not require grad");
    outputs.push_back(e);
  }
  autograd::variable_list result;
  {
    py::gil_scoped_release nogil;
    result = autograd::Engine::execute(roots, grads, keep_graph, create_graph, outputs, accumulate_grad);
  }
  if (accumulate_grad) return py::none();
  py::tuple out(result.size());
  for (size_t i = 0; i < result.size(); ++i) {
    KILN_CHECK(result[i].defined() || allow_unused, "One of the differentiated Tensors appears to not have been used "
               "in the graph. Set allow_unused=True if this is the desired behavior.");
    out[i] = to_py(result[i]);
  }
  return out;
}

std::string python_stack_trace() {
  py::gil_scoped_acquire gil;
  try {
    py::object tb = py::module_::import("traceback");
    py::list lines = tb.attr("format_stack")();
    std::string out;
    for (auto line : lines) out += line.cast<std::string>();
    return out;
  } catch (const py::error_already_set&) {
    return std::string();
  }
}

}  // namespace

void init_autograd(PyObject* module) {
  auto& g = tensor_getset_table();
  g.push_back({"grad", get_grad, set_grad, nullptr, nullptr});
  g.push_back({"grad_fn", get_grad_fn, nullptr, nullptr, nullptr});
  g.push_back({"is_leaf", get_is_leaf, nullptr, nullptr, nullptr});
  g.push_back({"retains_grad", get_retains_grad, nullptr, nullptr, nullptr});
  g.push_back({"_base", get_base, nullptr, nullptr, nullptr});
  auto& m = tensor_method_table();
  m.push_back({"retain_grad", tensor_retain_grad, METH_NOARGS, "Keeps .grad for a non-leaf tensor."});
  m.push_back({"_is_view", tensor_is_view, METH_NOARGS, "Whether the tensor is a view of another."});
  (void)module;
}

void init_autograd_module(PyObject* module) {
  py::module_ mod = py::reinterpret_borrow<py::module_>(module);
  autograd::AnomalyMode::set_trace_provider(&python_stack_trace);
  py::class_<PyNode>(mod, "_Node")
      .def("name", [](const PyNode& n) { return n.node->name(); })
      .def_property_readonly("next_functions",
                             [](const PyNode& n) {
                               py::tuple out(n.node->num_outputs());
                               for (size_t i = 0; i < n.node->num_outputs(); ++i) {
                                 const Edge& e = n.node->next_edge(i);
                                 out[i] = py::make_tuple(node_to_py(e.function), e.input_nr);
                               }
                               return out;
                             })
      .def_property_readonly("variable",
                             [](const PyNode& n) -> py::object {
                               auto* acc = dynamic_cast<autograd::AccumulateGrad*>(n.node.get());
                               if (acc == nullptr) throw py::attribute_error("variable");
                               return to_py(acc->variable());
                             })
      .def("__repr__", [](const PyNode& n) {
        return "<" + n.node->name() + " object at " + std::to_string(reinterpret_cast<uintptr_t>(n.node.get())) + ">";
      })
      .def("__eq__", [](const PyNode& a, const PyNode& b) { return a.node == b.node; })
      .def("__hash__", [](const PyNode& n) { return std::hash<const void*>()(n.node.get()); });
  mod.def("_run_backward", &run_backward, py::arg("tensors"), py::arg("grad_tensors"), py::arg("keep_graph"),
          py::arg("create_graph"), py::arg("inputs"), py::arg("allow_unused"), py::arg("accumulate_grad"));
  mod.def("is_grad_enabled", &autograd::GradMode::is_enabled);
  mod.def("_set_grad_enabled", &autograd::GradMode::set_enabled, py::arg("mode"));
  mod.def("is_anomaly_enabled", &autograd::AnomalyMode::is_enabled);
  mod.def("_set_anomaly_enabled", &autograd::AnomalyMode::set_enabled, py::arg("mode"));
  mod.def("_register_hook", &register_hook, py::arg("tensor"), py::arg("hook"));
  mod.def("_remove_hook", &remove_hook, py::arg("tensor"), py::arg("handle_id"));
  mod.def("_register_post_accumulate_grad_hook", &register_post_accumulate_grad_hook, py::arg("tensor"),
          py::arg("hook"));
  mod.def("_remove_post_accumulate_grad_hook", &remove_post_accumulate_grad_hook, py::arg("tensor"),
          py::arg("handle_id"));
  mod.def("_queue_backward_callback", [](py::function fn) {
    auto held = held_with_gil(std::move(fn));
    autograd::Engine::queue_callback([held] {
      py::gil_scoped_acquire gil;
      (void)(*held)();
    });
  }, py::arg("callback"));
}

}  // namespace kiln::python
