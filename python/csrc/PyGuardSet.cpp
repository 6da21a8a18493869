// kiln._C._capture.GuardSet: the guard check of a cached kiln.compile call,
// in one C++ function (issue 23: the cached-call overhead).
//
//   g = kiln._C._capture.GuardSet(args)   # args: the call's positional tuple
//   g.check(args) -> bool                  # every guard holds for this call
//
// Built once per cache entry from the example call. It holds, for each
// positional argument, either a tensor's sizes, strides, dtype, device,
// requires_grad and which earlier argument it is the same object as, or a
// Python scalar (None, bool, int, float, str) compared by exact type and
// value; plus grad mode. Any other argument makes the constructor raise
// TypeError: such calls take the Python guard key (kiln/compiler/_guards.py),
// which also names a failing guard for explain() and recompile warnings.
// check() is METH_O and allocates nothing.
#include <Python.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include "eager/autograd/GradMode.h"
#include "python/csrc/PyTensor.h"

namespace kiln::python {

namespace {

struct ArgGuard {
  bool is_tensor = false;
  // tensor
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  DType dtype{};
  Device device{};
  bool requires_grad = false;
  int64_t same_as = -1;  // the first earlier argument that is this same tensor object, or -1
  // scalar
  PyObject* value = nullptr;  // owned
  PyTypeObject* type = nullptr;
};

struct GuardSetData {
  bool grad_enabled = true;
  std::vector<ArgGuard> args;
  std::vector<int64_t> tensor_positions;  // positions of the tensor arguments, in order
};

struct PyGuardSet {
  PyObject_HEAD
  GuardSetData* data;
};

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

void guard_set_dealloc(PyObject* self) {
  auto* g = reinterpret_cast<PyGuardSet*>(self);
  if (g->data != nullptr) {
    for (ArgGuard& a : g->data->args) Py_XDECREF(a.value);
    delete g->data;
  }
  Py_TYPE(self)->tp_free(self);
}

PyObject* guard_set_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* call_args = nullptr;
  static const char* names[] = {"args", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!:GuardSet", const_cast<char**>(names), &PyTuple_Type,
                                   &call_args))
    return nullptr;
  auto data = std::make_unique<GuardSetData>();
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
        for (ArgGuard& b : data->args) Py_XDECREF(b.value);
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
      for (ArgGuard& b : data->args) Py_XDECREF(b.value);
      return nullptr;
    }
  }
  PyObject* self = type->tp_alloc(type, 0);
  if (self == nullptr) {
    for (ArgGuard& b : data->args) Py_XDECREF(b.value);
    return nullptr;
  }
  reinterpret_cast<PyGuardSet*>(self)->data = data.release();
  return self;
}

/// 1 when every guard holds, 0 when one fails, -1 with a Python error set.
int check_guards(const GuardSetData& g, PyObject* call_args) {
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

PyObject* guard_set_check(PyObject* self, PyObject* call_args) {
  const int ok = check_guards(*reinterpret_cast<PyGuardSet*>(self)->data, call_args);
  if (ok < 0) return nullptr;
  if (ok) Py_RETURN_TRUE;
  Py_RETURN_FALSE;
}

PyObject* guard_set_num_args(PyObject* self, void*) {
  return PyLong_FromSize_t(reinterpret_cast<PyGuardSet*>(self)->data->args.size());
}

PyMethodDef guard_set_methods[] = {
    {"check", guard_set_check, METH_O,
     "check(args) -> bool: whether every guard holds for this positional-argument tuple."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef guard_set_getset[] = {
    {"num_args", guard_set_num_args, nullptr, "the number of positional arguments guarded", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyTypeObject PyGuardSet_Type = {PyVarObject_HEAD_INIT(nullptr, 0)};

}  // namespace

void init_guard_set(PyObject* capture_module) {
  PyGuardSet_Type.tp_name = "kiln._C._capture.GuardSet";
  PyGuardSet_Type.tp_basicsize = sizeof(PyGuardSet);
  PyGuardSet_Type.tp_flags = Py_TPFLAGS_DEFAULT;
  PyGuardSet_Type.tp_doc = "The guards of one cached kiln.compile entry: GuardSet(args); check(args) -> bool.";
  PyGuardSet_Type.tp_new = guard_set_new;
  PyGuardSet_Type.tp_dealloc = guard_set_dealloc;
  PyGuardSet_Type.tp_methods = guard_set_methods;
  PyGuardSet_Type.tp_getset = guard_set_getset;
  if (PyType_Ready(&PyGuardSet_Type) < 0) throw std::runtime_error("GuardSet: PyType_Ready failed");
  Py_INCREF(&PyGuardSet_Type);
  if (PyModule_AddObject(capture_module, "GuardSet", reinterpret_cast<PyObject*>(&PyGuardSet_Type)) < 0) {
    Py_DECREF(&PyGuardSet_Type);
    throw std::runtime_error("GuardSet: cannot add it to kiln._C._capture");
  }
}

}  // namespace kiln::python
