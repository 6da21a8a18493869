// ArgGuards and ModuleGuards: see CallGuards.h.
#include "python/csrc/CallGuards.h"

#include "eager/autograd/GradMode.h"
#include "python/csrc/PyTensor.h"

namespace kiln::python {

namespace {

bool is_guardable_scalar(PyObject* obj) {
  return obj == Py_None || PyBool_Check(obj) || PyLong_CheckExact(obj) || PyFloat_CheckExact(obj) ||
         PyUnicode_CheckExact(obj);
}

bool same_ints(IntArrayRef a, const std::vector<int64_t>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < b.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

/// New references to the values of dict `d` (a module's _modules, _parameters or _buffers), in order.
bool dict_values(PyObject* d, std::vector<PyObject*>& out) {
  if (!PyDict_Check(d)) {
    PyErr_SetString(PyExc_TypeError, "ModuleGuard: a module's _modules/_parameters/_buffers is not a dict");
    return false;
  }
  Py_ssize_t pos = 0;
  PyObject* key = nullptr;
  PyObject* value = nullptr;
  while (PyDict_Next(d, &pos, &key, &value)) {
    Py_INCREF(value);
    out.push_back(value);
  }
  return true;
}

/// Whether dict `d`'s values are the objects `recorded`, in order.
bool same_values(PyObject* d, const std::vector<PyObject*>& recorded) {
  if (!PyDict_Check(d) || PyDict_GET_SIZE(d) != static_cast<Py_ssize_t>(recorded.size())) return false;
  Py_ssize_t pos = 0;
  PyObject* key = nullptr;
  PyObject* value = nullptr;
  size_t i = 0;
  while (PyDict_Next(d, &pos, &key, &value)) {
    if (value != recorded[i++]) return false;
  }
  return true;
}

void release_all(std::vector<PyObject*>& objects) {
  for (PyObject* o : objects) Py_XDECREF(o);
  objects.clear();
}

PyObject* interned(const char* s) {
  PyObject* name = PyUnicode_InternFromString(s);
  if (name == nullptr) throw std::runtime_error("CallGuards: cannot intern an attribute name");
  return name;
}

PyObject* attr_training() {
  static PyObject* name = interned("training");
  return name;
}
PyObject* attr_modules() {
  static PyObject* name = interned("_modules");
  return name;
}
PyObject* attr_parameters() {
  static PyObject* name = interned("_parameters");
  return name;
}
PyObject* attr_buffers() {
  static PyObject* name = interned("_buffers");
  return name;
}

}  // namespace

ArgGuards::~ArgGuards() {
  for (ArgGuard& a : args) Py_XDECREF(a.value);
}

std::unique_ptr<ArgGuards> make_arg_guards(PyObject* call_args) {
  if (!PyTuple_Check(call_args)) {
    PyErr_SetString(PyExc_TypeError, "GuardSet: the arguments must be a tuple");
    return nullptr;
  }
  auto data = std::make_unique<ArgGuards>();
  data->grad_enabled = autograd::GradMode::is_enabled();
  const Py_ssize_t n = PyTuple_GET_SIZE(call_args);
  data->args.resize(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* obj = PyTuple_GET_ITEM(call_args, i);
    ArgGuard& a = data->args[static_cast<size_t>(i)];
    if (is_tensor(obj)) {
      const Tensor& t = unwrap_tensor(obj);
      if (!t.defined()) {
        PyErr_Format(PyExc_TypeError, "GuardSet: argument %zd is an undefined tensor", i);
        return nullptr;
      }
      a.is_tensor = true;
      a.sizes.assign(t.sizes().begin(), t.sizes().end());
      a.strides.assign(t.strides().begin(), t.strides().end());
      a.dtype = t.dtype();
      a.device = t.device();
      a.requires_grad = t.requires_grad();
      for (int64_t j : data->tensor_positions) {
        if (PyTuple_GET_ITEM(call_args, j) == obj) {
          a.same_as = j;
          break;
        }
      }
      data->tensor_positions.push_back(i);
    } else if (is_guardable_scalar(obj)) {
      Py_INCREF(obj);
      a.value = obj;
      a.type = Py_TYPE(obj);
    } else {
      PyErr_Format(PyExc_TypeError, "GuardSet: argument %zd is a %s, neither a tensor nor a scalar", i,
                   Py_TYPE(obj)->tp_name);
      return nullptr;
    }
  }
  return data;
}

int check_arg_guards(const ArgGuards& g, PyObject* call_args) {
  if (!PyTuple_Check(call_args)) return 0;
  const Py_ssize_t n = PyTuple_GET_SIZE(call_args);
  if (static_cast<size_t>(n) != g.args.size()) return 0;
  if (autograd::GradMode::is_enabled() != g.grad_enabled) return 0;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* obj = PyTuple_GET_ITEM(call_args, i);
    const ArgGuard& a = g.args[static_cast<size_t>(i)];
    if (a.is_tensor) {
      if (!is_tensor(obj)) return 0;
      const Tensor& t = unwrap_tensor(obj);
      if (!t.defined() || t.dtype() != a.dtype || !(t.device() == a.device) ||
          t.requires_grad() != a.requires_grad || !same_ints(t.sizes(), a.sizes) ||
          !same_ints(t.strides(), a.strides))
        return 0;
      if (a.same_as >= 0) {
        if (PyTuple_GET_ITEM(call_args, a.same_as) != obj) return 0;
      } else {
        for (int64_t j : g.tensor_positions) {
          if (j >= i) break;
          if (PyTuple_GET_ITEM(call_args, j) == obj) return 0;
        }
      }
    } else {
      if (Py_TYPE(obj) != a.type) return 0;
      if (obj == a.value) continue;
      const int eq = PyObject_RichCompareBool(obj, a.value, Py_EQ);
      if (eq != 1) return eq;
    }
  }
  return 1;
}

ModuleGuards::~ModuleGuards() {
  release_all(modules);
  release_all(training);
  for (auto* lists : {&children, &parameters, &buffers})
    for (std::vector<PyObject*>& v : *lists) release_all(v);
  Py_XDECREF(state);
}

std::unique_ptr<ModuleGuards> make_module_guards(PyObject* modules, PyObject* state) {
  if (!PyList_Check(modules) || !PyTuple_Check(state)) {
    PyErr_SetString(PyExc_TypeError, "ModuleGuard(modules: list, state: tuple)");
    return nullptr;
  }
  auto g = std::make_unique<ModuleGuards>();
  const Py_ssize_t n = PyList_GET_SIZE(modules);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* m = PyList_GET_ITEM(modules, i);
    Py_INCREF(m);
    g->modules.push_back(m);
    PyObject* training = PyObject_GetAttr(m, attr_training());
    if (training == nullptr) return nullptr;
    g->training.push_back(training);
    for (auto [name, lists] : {std::pair{attr_modules(), &g->children}, std::pair{attr_parameters(), &g->parameters},
                               std::pair{attr_buffers(), &g->buffers}}) {
      PyObject* d = PyObject_GetAttr(m, name);
      if (d == nullptr) return nullptr;
      lists->emplace_back();
      const bool ok = dict_values(d, lists->back());
      Py_DECREF(d);
      if (!ok) return nullptr;
    }
  }
  Py_INCREF(state);
  g->state = state;
  g->state_guards = make_arg_guards(state);
  if (g->state_guards == nullptr) return nullptr;
  return g;
}

int check_module_guards(const ModuleGuards& g) {
  for (size_t i = 0; i < g.modules.size(); ++i) {
    PyObject* m = g.modules[i];
    PyObject* training = PyObject_GetAttr(m, attr_training());
    if (training == nullptr) return -1;
    int same = training == g.training[i] ? 1 : PyObject_RichCompareBool(training, g.training[i], Py_EQ);
    Py_DECREF(training);
    if (same != 1) return same;
    for (auto [name, lists] : {std::pair{attr_modules(), &g.children}, std::pair{attr_parameters(), &g.parameters},
                               std::pair{attr_buffers(), &g.buffers}}) {
      PyObject* d = PyObject_GetAttr(m, name);
      if (d == nullptr) return -1;
      same = same_values(d, (*lists)[i]) ? 1 : 0;
      Py_DECREF(d);
      if (!same) return 0;
    }
  }
  return check_arg_guards(*g.state_guards, g.state);
}

}  // namespace kiln::python
