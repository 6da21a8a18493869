// ArgGuards and ModuleGuards: see CallGuards.h.
#include "python/csrc/CallGuards.h"

#include <stdexcept>

#include "eager/autograd/GradMode.h"
#include "python/csrc/PyTensor.h"

namespace kiln::python {

namespace {

// Deeper argument trees (or a list holding itself) are left to the Python key.
constexpr int kMaxDepth = 32;

bool is_guardable_scalar(PyObject* obj) {
  return obj == Py_None || PyBool_Check(obj) || PyLong_CheckExact(obj) || PyFloat_CheckExact(obj) ||
         PyUnicode_CheckExact(obj);
}

/// 1 when `obj` is `recorded` (a guardable scalar) by exact type and value, 0 if not, -1 on an error.
int same_scalar(PyObject* obj, PyObject* recorded) {
  if (obj == recorded) return 1;
  if (Py_TYPE(obj) != Py_TYPE(recorded)) return 0;
  return PyObject_RichCompareBool(obj, recorded, Py_EQ);
}

bool same_ints(IntArrayRef a, const std::vector<int64_t>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < b.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

/// A tuple subclass the Python key walks as a "sequence" and whose items are PyTuple_GET_ITEM's (it
/// iterates as a tuple does).
bool is_plain_tuple_subclass(PyTypeObject* type) {
  return PyType_IsSubtype(type, &PyTuple_Type) && type->tp_iter == PyTuple_Type.tp_iter;
}

struct Builder {
  ArgGuards& g;
  std::vector<PyObject*> tensors;  // in walk order: aliasing

  bool fail(const char* what, PyObject* obj) {
    PyErr_Format(PyExc_TypeError, "GuardSet: %s (a %s): the Python key guards this call", what,
                 Py_TYPE(obj)->tp_name);
    return false;
  }

  bool add(PyObject* obj, int depth) {
    if (depth > kMaxDepth) return fail("arguments nested too deeply", obj);
    const size_t index = g.nodes.size();
    g.nodes.emplace_back();
    if (is_tensor(obj)) {
      const Tensor& t = unwrap_tensor(obj);
      if (!t.defined()) return fail("an undefined tensor", obj);
      ArgGuard& a = g.nodes[index];
      a.kind = GuardKind::Tensor;
      a.sizes.assign(t.sizes().begin(), t.sizes().end());
      a.strides.assign(t.strides().begin(), t.strides().end());
      a.dtype = t.dtype();
      a.device = t.device();
      a.requires_grad = t.requires_grad();
      for (size_t j = 0; j < tensors.size(); ++j) {
        if (tensors[j] == obj) {
          a.same_as = static_cast<int64_t>(j);
          break;
        }
      }
      tensors.push_back(obj);
      return true;
    }
    if (is_guardable_scalar(obj)) {
      ArgGuard& a = g.nodes[index];
      a.kind = GuardKind::Scalar;
      Py_INCREF(obj);
      a.value = obj;
      a.type = Py_TYPE(obj);
      return true;
    }
    PyTypeObject* type = Py_TYPE(obj);
    if (type == &PyTuple_Type || type == &PyList_Type || (type != &PyList_Type && is_plain_tuple_subclass(type))) {
      const bool list = type == &PyList_Type;
      const Py_ssize_t n = list ? PyList_GET_SIZE(obj) : PyTuple_GET_SIZE(obj);
      g.nodes[index].kind = list ? GuardKind::List : type == &PyTuple_Type ? GuardKind::Tuple : GuardKind::Sequence;
      g.nodes[index].type = type;
      g.nodes[index].length = n;
      for (Py_ssize_t i = 0; i < n; ++i) {
        if (!add(list ? PyList_GET_ITEM(obj, i) : PyTuple_GET_ITEM(obj, i), depth + 1)) return false;
        if (list && PyList_GET_SIZE(obj) != n) return fail("a list changed while it was read", obj);
      }
      return true;
    }
    if (type == &PyDict_Type) {
      g.nodes[index].kind = GuardKind::Dict;
      g.nodes[index].type = type;
      g.nodes[index].length = PyDict_GET_SIZE(obj);
      Py_ssize_t pos = 0;
      PyObject* key = nullptr;
      PyObject* value = nullptr;
      // Keys are read first: the walk below may reallocate g.nodes.
      std::vector<PyObject*> keys, values;
      while (PyDict_Next(obj, &pos, &key, &value)) {
        keys.push_back(key);
        values.push_back(value);
      }
      for (PyObject* k : keys) {
        if (!is_guardable_scalar(k)) return fail("a dict key that is not a str, int, float, bool or None", k);
      }
      for (PyObject* k : keys) Py_INCREF(k);
      g.nodes[index].keys = std::move(keys);
      for (PyObject* v : values) {
        if (!add(v, depth + 1)) return false;
      }
      return true;
    }
    return fail("neither a tensor, a scalar nor a tuple, list or dict of them", obj);
  }
};

/// Checks the tree of node `i` against `obj`, advancing `i` past it; tensors appended in walk order.
int check_node(const ArgGuards& g, size_t& i, PyObject* obj, CallTensors& tensors) {
  const ArgGuard& a = g.nodes[i++];
  switch (a.kind) {
    case GuardKind::Tensor: {
      if (!is_tensor(obj)) return 0;
      const Tensor& t = unwrap_tensor(obj);
      if (!t.defined() || t.dtype() != a.dtype || !(t.device() == a.device) || t.requires_grad() != a.requires_grad ||
          !same_ints(t.sizes(), a.sizes) || !same_ints(t.strides(), a.strides))
        return 0;
      if (a.same_as >= 0) {
        if (tensors[static_cast<size_t>(a.same_as)] != obj) return 0;
      } else {
        for (PyObject* earlier : tensors)
          if (earlier == obj) return 0;
      }
      tensors.push_back(obj);
      return 1;
    }
    case GuardKind::Scalar:
      return same_scalar(obj, a.value);
    case GuardKind::Tuple:
    case GuardKind::List:
    case GuardKind::Sequence: {
      if (Py_TYPE(obj) != a.type || Py_SIZE(obj) != a.length) return 0;
      if (a.kind == GuardKind::Sequence && a.type->tp_iter != PyTuple_Type.tp_iter) return 0;  // its class changed
      PyObject** items = a.kind == GuardKind::List ? reinterpret_cast<PyListObject*>(obj)->ob_item
                                                   : reinterpret_cast<PyTupleObject*>(obj)->ob_item;
      for (Py_ssize_t k = 0; k < a.length; ++k) {
        const int ok = check_node(g, i, items[k], tensors);
        if (ok != 1) return ok;
      }
      return 1;
    }
    case GuardKind::Dict: {
      if (Py_TYPE(obj) != &PyDict_Type || PyDict_GET_SIZE(obj) != a.length) return 0;
      Py_ssize_t pos = 0;
      PyObject* key = nullptr;
      PyObject* value = nullptr;
      size_t k = 0;
      while (PyDict_Next(obj, &pos, &key, &value)) {
        int ok = same_scalar(key, a.keys[k++]);
        if (ok == 1) ok = check_node(g, i, value, tensors);
        if (ok != 1) return ok;
      }
      return 1;
    }
  }
  return 0;
}

/// New references to the keys and values of dict `d` (a module's _modules, _parameters or _buffers), in order.
bool dict_items(PyObject* d, std::vector<PyObject*>& keys, std::vector<PyObject*>& values) {
  if (d == nullptr || !PyDict_CheckExact(d)) {
    PyErr_SetString(PyExc_TypeError, "ModuleGuard: a module's _modules/_parameters/_buffers is not a dict");
    return false;
  }
  Py_ssize_t pos = 0;
  PyObject* key = nullptr;
  PyObject* value = nullptr;
  while (PyDict_Next(d, &pos, &key, &value)) {
    Py_INCREF(key);
    keys.push_back(key);
    Py_INCREF(value);
    values.push_back(value);
  }
  return true;
}

/// Whether dict `d`'s keys and values are `keys` and the objects `values`, in order.
bool same_items(PyObject* d, const std::vector<PyObject*>& keys, const std::vector<PyObject*>& values) {
  if (d == nullptr || !PyDict_CheckExact(d) || PyDict_GET_SIZE(d) != static_cast<Py_ssize_t>(values.size()))
    return false;
  Py_ssize_t pos = 0;
  PyObject* key = nullptr;
  PyObject* value = nullptr;
  size_t i = 0;
  while (PyDict_Next(d, &pos, &key, &value)) {
    if (value != values[i]) return false;
    if (key != keys[i] && same_scalar(key, keys[i]) != 1) {
      PyErr_Clear();
      return false;
    }
    ++i;
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

enum Attr { kTraining, kModules, kParameters, kBuffers, kNumRead };
// The names the guard reads from each module's instance dict, then the walks the Python key calls:
// none may be the instance's own (nor, for the first four, the class's).
constexpr const char* kAttrNames[] = {"training",       "_modules", "_parameters",     "_buffers",
                                      "modules",        "named_modules", "named_parameters", "named_buffers",
                                      "_named_members"};
constexpr int kNumAttrs = sizeof(kAttrNames) / sizeof(kAttrNames[0]);

PyObject* attr(int a) {
  static PyObject* names[kNumAttrs] = {};
  if (names[a] == nullptr) names[a] = interned(kAttrNames[a]);
  return names[a];
}

/// Module m's instance dict (borrowed), or nullptr.
PyObject* instance_dict(PyObject* m) {
  PyObject** slot = _PyObject_GetDictPtr(m);
  return slot != nullptr ? *slot : nullptr;
}

}  // namespace

ArgGuards::~ArgGuards() {
  for (ArgGuard& a : nodes) {
    Py_XDECREF(a.value);
    release_all(a.keys);
  }
  release_all(kwarg_names);
}

std::unique_ptr<ArgGuards> make_arg_guards(PyObject* call_args, PyObject* kwargs) {
  if (!PyTuple_Check(call_args) || (kwargs != nullptr && kwargs != Py_None && !PyDict_Check(kwargs))) {
    PyErr_SetString(PyExc_TypeError, "GuardSet: the arguments must be a tuple and the keyword arguments a dict");
    return nullptr;
  }
  auto data = std::make_unique<ArgGuards>();
  data->grad_enabled = autograd::GradMode::is_enabled();
  Builder b{*data, {}};
  data->num_args = PyTuple_GET_SIZE(call_args);
  for (Py_ssize_t i = 0; i < data->num_args; ++i)
    if (!b.add(PyTuple_GET_ITEM(call_args, i), 1)) return nullptr;
  if (kwargs != nullptr && kwargs != Py_None) {
    Py_ssize_t pos = 0;
    PyObject* key = nullptr;
    PyObject* value = nullptr;
    while (PyDict_Next(kwargs, &pos, &key, &value)) {
      Py_INCREF(key);
      data->kwarg_names.push_back(key);
      if (!b.add(value, 1)) return nullptr;
    }
  }
  data->num_tensors = b.tensors.size();
  return data;
}

int check_arg_guards(const ArgGuards& g, PyObject* call_args, PyObject* kwargs, CallTensors* tensors) {
  if (!PyTuple_Check(call_args) || PyTuple_GET_SIZE(call_args) != g.num_args) return 0;
  const Py_ssize_t num_kwargs = kwargs != nullptr && kwargs != Py_None ? PyDict_GET_SIZE(kwargs) : 0;
  if (static_cast<size_t>(num_kwargs) != g.kwarg_names.size()) return 0;
  if (autograd::GradMode::is_enabled() != g.grad_enabled) return 0;
  CallTensors local;
  CallTensors& out = tensors != nullptr ? *tensors : local;
  out.clear();
  size_t i = 0;
  for (Py_ssize_t k = 0; k < g.num_args; ++k) {
    const int ok = check_node(g, i, PyTuple_GET_ITEM(call_args, k), out);
    if (ok != 1) return ok;
  }
  if (num_kwargs > 0) {
    Py_ssize_t pos = 0;
    PyObject* key = nullptr;
    PyObject* value = nullptr;
    size_t k = 0;
    while (PyDict_Next(kwargs, &pos, &key, &value)) {
      int ok = same_scalar(key, g.kwarg_names[k++]);
      if (ok == 1) ok = check_node(g, i, value, out);
      if (ok != 1) return ok;
    }
  }
  return 1;
}

ModuleGuards::~ModuleGuards() {
  release_all(modules);
  for (PyTypeObject* t : types) Py_XDECREF(t);
  release_all(dicts);
  release_all(training);
  for (auto* lists : {&children, &parameters, &buffers, &child_names, &parameter_names, &buffer_names})
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
    PyTypeObject* type = Py_TYPE(m);
    Py_INCREF(type);
    g->types.push_back(type);
    PyObject* d = instance_dict(m);
    if (d == nullptr || !PyDict_CheckExact(d)) {
      PyErr_Format(PyExc_TypeError, "ModuleGuard: a %s has no instance dict", type->tp_name);
      return nullptr;
    }
    for (int a = 0; a < kNumAttrs; ++a) {
      // The guard reads these from the instance dict: the class must not define them (a property would
      // win over the dict), and the instance must not hold a walk of its own.
      if ((a < kNumRead && _PyType_Lookup(type, attr(a)) != nullptr) ||
          (a >= kNumRead && PyDict_GetItemWithError(d, attr(a)) != nullptr)) {
        if (!PyErr_Occurred())
          PyErr_Format(PyExc_TypeError, "ModuleGuard: a %s defines %s itself", type->tp_name, kAttrNames[a]);
        return nullptr;
      }
      if (PyErr_Occurred()) return nullptr;
    }
    // _PyType_Lookup gave the class a version tag if it can have one; a modified class gets a new one.
    if ((type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) == 0 || type->tp_version_tag == 0) {
      PyErr_Format(PyExc_TypeError, "ModuleGuard: the class %s has no version tag", type->tp_name);
      return nullptr;
    }
    g->type_tags.push_back(type->tp_version_tag);
    Py_INCREF(d);
    g->dicts.push_back(d);
    g->dict_sizes.push_back(PyDict_GET_SIZE(d));
    PyObject* training = PyDict_GetItemWithError(d, attr(kTraining));
    if (training == nullptr) {
      if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "ModuleGuard: a %s has no training flag", type->tp_name);
      return nullptr;
    }
    Py_INCREF(training);
    g->training.push_back(training);
    for (auto [a, names, values] :
         {std::tuple{kModules, &g->child_names, &g->children}, std::tuple{kParameters, &g->parameter_names, &g->parameters},
          std::tuple{kBuffers, &g->buffer_names, &g->buffers}}) {
      names->emplace_back();
      values->emplace_back();
      if (!dict_items(PyDict_GetItemWithError(d, attr(a)), names->back(), values->back())) return nullptr;
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
    PyTypeObject* type = g.types[i];
    if (Py_TYPE(m) != type || (type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) == 0 ||
        type->tp_version_tag != g.type_tags[i])
      return 0;
    PyObject* d = instance_dict(m);
    if (d != g.dicts[i]) return 0;
    if (PyDict_GET_SIZE(d) != g.dict_sizes[i]) {  // an attribute came or went: not a walk of the instance's own?
      for (int a = kNumRead; a < kNumAttrs; ++a) {
        if (PyDict_GetItemWithError(d, attr(a)) != nullptr) return 0;
        if (PyErr_Occurred()) return -1;
      }
      g.dict_sizes[i] = PyDict_GET_SIZE(d);
    }
    PyObject* training = PyDict_GetItemWithError(d, attr(kTraining));  // borrowed
    if (training == nullptr) return PyErr_Occurred() ? -1 : 0;
    if (training != g.training[i]) {
      const int same = PyObject_RichCompareBool(training, g.training[i], Py_EQ);
      if (same != 1) return same;
    }
    if (!same_items(PyDict_GetItemWithError(d, attr(kModules)), g.child_names[i], g.children[i]) ||
        !same_items(PyDict_GetItemWithError(d, attr(kParameters)), g.parameter_names[i], g.parameters[i]) ||
        !same_items(PyDict_GetItemWithError(d, attr(kBuffers)), g.buffer_names[i], g.buffers[i]))
      return PyErr_Occurred() ? -1 : 0;
  }
  return check_arg_guards(*g.state_guards, g.state);
}

}  // namespace kiln::python
