// kiln._C._capture.GuardSet: the guard check of a cached kiln.compile call,
// in one C++ function (issue 23: the cached-call overhead).
//
//   g = kiln._C._capture.GuardSet(args, kwargs=None)   # the call's positional tuple and keyword dict
//   g.check(args, kwargs=None) -> bool                  # every guard holds for this call
//
// Built once per cache entry from the example call. It holds an ArgGuards
// (CallGuards.h: the arguments' tuples, lists, named tuples and dicts by exact
// type, length and keys, each tensor's metadata and aliasing, each Python
// scalar by exact type and value; plus grad mode), which the C++ hit path
// (PyCachedCall.cpp) checks directly. Any other argument makes the constructor
// raise TypeError: such calls take the Python guard key
// (kiln/compiler/_guards.py), which also names a failing guard for explain()
// and recompile warnings.
#include <Python.h>

#include <memory>
#include <stdexcept>

#include "python/csrc/CallGuards.h"

namespace kiln::python {

namespace {

struct PyGuardSet {
  PyObject_HEAD
  ArgGuards* data;
};

void guard_set_dealloc(PyObject* self) {
  auto* g = reinterpret_cast<PyGuardSet*>(self);
  delete g->data;
  Py_TYPE(self)->tp_free(self);
}

PyObject* guard_set_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* call_args = nullptr;
  PyObject* call_kwargs = nullptr;
  static const char* names[] = {"args", "kwargs", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!|O:GuardSet", const_cast<char**>(names), &PyTuple_Type,
                                   &call_args, &call_kwargs))
    return nullptr;
  std::unique_ptr<ArgGuards> data = make_arg_guards(call_args, call_kwargs);
  if (data == nullptr) return nullptr;
  PyObject* self = type->tp_alloc(type, 0);
  if (self == nullptr) return nullptr;
  reinterpret_cast<PyGuardSet*>(self)->data = data.release();
  return self;
}

PyObject* guard_set_check(PyObject* self, PyObject* args, PyObject* kwargs) {
  PyObject* call_args = nullptr;
  PyObject* call_kwargs = nullptr;
  static const char* names[] = {"args", "kwargs", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:check", const_cast<char**>(names), &call_args, &call_kwargs))
    return nullptr;
  if (call_kwargs != nullptr && call_kwargs != Py_None && !PyDict_Check(call_kwargs)) {
    PyErr_SetString(PyExc_TypeError, "GuardSet.check: kwargs must be a dict or None");
    return nullptr;
  }
  const int ok = check_arg_guards(*reinterpret_cast<PyGuardSet*>(self)->data, call_args, call_kwargs);
  if (ok < 0) return nullptr;
  if (ok) Py_RETURN_TRUE;
  Py_RETURN_FALSE;
}

PyObject* guard_set_num_args(PyObject* self, void*) {
  return PyLong_FromSsize_t(reinterpret_cast<PyGuardSet*>(self)->data->num_args);
}

PyObject* guard_set_num_tensors(PyObject* self, void*) {
  return PyLong_FromSize_t(reinterpret_cast<PyGuardSet*>(self)->data->num_tensors);
}

PyMethodDef guard_set_methods[] = {
    {"check", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(guard_set_check)),
     METH_VARARGS | METH_KEYWORDS,
     "check(args, kwargs=None) -> bool: whether every guard holds for this call."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef guard_set_getset[] = {
    {"num_args", guard_set_num_args, nullptr, "the number of positional arguments guarded", nullptr},
    {"num_tensors", guard_set_num_tensors, nullptr, "the number of tensors in the guarded arguments", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyTypeObject PyGuardSet_Type = {PyVarObject_HEAD_INIT(nullptr, 0)};

}  // namespace

const ArgGuards* guard_set_data(PyObject* obj) {
  if (!PyObject_TypeCheck(obj, &PyGuardSet_Type)) return nullptr;
  return reinterpret_cast<PyGuardSet*>(obj)->data;
}

void init_guard_set(PyObject* capture_module) {
  PyGuardSet_Type.tp_name = "kiln._C._capture.GuardSet";
  PyGuardSet_Type.tp_basicsize = sizeof(PyGuardSet);
  PyGuardSet_Type.tp_flags = Py_TPFLAGS_DEFAULT;
  PyGuardSet_Type.tp_doc = "The guards of one cached kiln.compile entry: GuardSet(args, kwargs=None); check(args, kwargs=None) -> bool.";
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
