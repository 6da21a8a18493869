// The kiln.dtype type and its singletons.
#include "python/csrc/PyDType.h"

#include <array>
#include <string>

#include "python/csrc/Exceptions.h"

namespace kiln::python {

namespace {

std::array<PyObject*, kNumDTypes> g_dtype_objects{};

PyObject* dtype_repr(PyObject* self) {
  const auto t = reinterpret_cast<PyDTypeObject*>(self)->dtype;
  const std::string s = "kiln." + std::string(dtype_name(t));
  return PyUnicode_FromStringAndSize(s.data(), static_cast<Py_ssize_t>(s.size()));
}

DType self_dtype(PyObject* self) { return reinterpret_cast<PyDTypeObject*>(self)->dtype; }

PyObject* get_is_floating_point(PyObject* self, void*) { return PyBool_FromLong(is_floating_point(self_dtype(self))); }
PyObject* get_is_signed(PyObject* self, void*) { return PyBool_FromLong(is_signed(self_dtype(self))); }
PyObject* get_is_complex(PyObject* self, void*) { return PyBool_FromLong(is_complex(self_dtype(self))); }
PyObject* get_itemsize(PyObject* self, void*) { return PyLong_FromLongLong(itemsize(self_dtype(self))); }

/// Pickles as the attribute name, so unpickling finds the same singleton.
PyObject* dtype_reduce(PyObject* self, PyObject*) {
  const auto name = dtype_name(self_dtype(self));
  return PyUnicode_FromStringAndSize(name.data(), static_cast<Py_ssize_t>(name.size()));
}

PyGetSetDef dtype_getset[] = {
    {"is_floating_point", get_is_floating_point, nullptr, nullptr, nullptr},
    {"is_signed", get_is_signed, nullptr, nullptr, nullptr},
    {"is_complex", get_is_complex, nullptr, nullptr, nullptr},
    {"itemsize", get_itemsize, nullptr, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyMethodDef dtype_methods[] = {
    {"__reduce__", dtype_reduce, METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

PyTypeObject make_dtype_type() {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = "kiln.dtype";
  t.tp_basicsize = sizeof(PyDTypeObject);
  t.tp_flags = Py_TPFLAGS_DEFAULT;
  t.tp_doc = "The element type of a tensor (kiln.float32, kiln.int64, ...).";
  t.tp_repr = dtype_repr;
  t.tp_getset = dtype_getset;
  t.tp_methods = dtype_methods;
  return t;
}

}  // namespace

PyTypeObject PyDType_Type = make_dtype_type();

PyObject* dtype_object(DType t) { return g_dtype_objects[static_cast<size_t>(t)]; }

DType dtype_from_object(PyObject* obj, const char* what) {
  if (is_dtype_object(obj)) return reinterpret_cast<PyDTypeObject*>(obj)->dtype;
  // PyTorch also takes Python's own number types: float -> float64, int -> int64, bool -> bool.
  if (obj == reinterpret_cast<PyObject*>(&PyFloat_Type)) return DType::Float64;
  if (obj == reinterpret_cast<PyObject*>(&PyLong_Type)) return DType::Int64;
  if (obj == reinterpret_cast<PyObject*>(&PyBool_Type)) return DType::Bool;
  KILN_FAIL(Type, what, " must be kiln.dtype, not ", Py_TYPE(obj)->tp_name);
}

void init_dtypes(PyObject* module) {
  if (PyType_Ready(&PyDType_Type) < 0) throw python_error_already_set();
  Py_INCREF(&PyDType_Type);
  if (PyModule_AddObject(module, "dtype", reinterpret_cast<PyObject*>(&PyDType_Type)) < 0) {
    throw python_error_already_set();
  }
  auto add = [module](const char* name, PyObject* obj) {
    Py_INCREF(obj);
    if (PyModule_AddObject(module, name, obj) < 0) throw python_error_already_set();
  };
  for (int i = 0; i < kNumDTypes; ++i) {
    auto* obj = PyObject_New(PyDTypeObject, &PyDType_Type);
    if (obj == nullptr) throw python_error_already_set();
    obj->dtype = static_cast<DType>(i);
    g_dtype_objects[static_cast<size_t>(i)] = reinterpret_cast<PyObject*>(obj);  // owned forever
    add(std::string(dtype_name(obj->dtype)).c_str(), reinterpret_cast<PyObject*>(obj));
  }
  // PyTorch's aliases: kiln.float is kiln.float32, kiln.long is kiln.int64, ...
  for (const char* alias : {"float", "double", "half", "short", "int", "long", "cfloat", "cdouble"}) {
    add(alias, dtype_object(*dtype_from_name(alias)));
  }
}

}  // namespace kiln::python
