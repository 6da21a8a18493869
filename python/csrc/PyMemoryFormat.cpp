// The kiln.memory_format type and its singletons.
#include "python/csrc/PyMemoryFormat.h"

#include <array>
#include <string>

#include "eager/core/Error.h"
#include "python/csrc/Exceptions.h"

namespace kiln::python {

namespace {

MemoryFormat self_format(PyObject* self) { return reinterpret_cast<PyMemoryFormatObject*>(self)->format; }

PyObject* memory_format_repr(PyObject* self) {
  const std::string s = "kiln." + std::string(memory_format_name(self_format(self)));
  return PyUnicode_FromStringAndSize(s.data(), static_cast<Py_ssize_t>(s.size()));
}

/// Pickles as the attribute name, so unpickling finds the same singleton.
PyObject* memory_format_reduce(PyObject* self, PyObject*) {
  const auto name = memory_format_name(self_format(self));
  return PyUnicode_FromStringAndSize(name.data(), static_cast<Py_ssize_t>(name.size()));
}

PyMethodDef memory_format_methods[] = {
    {"__reduce__", memory_format_reduce, METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

PyTypeObject make_memory_format_type() {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = "kiln.memory_format";
  t.tp_basicsize = sizeof(PyMemoryFormatObject);
  t.tp_flags = Py_TPFLAGS_DEFAULT;
  t.tp_doc = "The memory layout a new tensor should have (kiln.contiguous_format, kiln.channels_last, ...).";
  t.tp_repr = memory_format_repr;
  t.tp_methods = memory_format_methods;
  return t;
}

std::array<PyObject*, kNumMemoryFormats> g_memory_format_objects{};

}  // namespace

PyTypeObject PyMemoryFormat_Type = make_memory_format_type();

PyObject* memory_format_object(MemoryFormat f) { return g_memory_format_objects[static_cast<size_t>(f)]; }

MemoryFormat memory_format_from_object(PyObject* obj, const char* what) {
  if (is_memory_format_object(obj)) return self_format(obj);
  KILN_FAIL(Type, what, " must be kiln.memory_format, not ", Py_TYPE(obj)->tp_name);
}

void init_memory_formats(PyObject* module) {
  if (PyType_Ready(&PyMemoryFormat_Type) < 0) throw python_error_already_set();
  Py_INCREF(&PyMemoryFormat_Type);
  if (PyModule_AddObject(module, "memory_format", reinterpret_cast<PyObject*>(&PyMemoryFormat_Type)) < 0) {
    throw python_error_already_set();
  }
  for (int i = 0; i < kNumMemoryFormats; ++i) {
    auto* obj = PyObject_New(PyMemoryFormatObject, &PyMemoryFormat_Type);
    if (obj == nullptr) throw python_error_already_set();
    obj->format = static_cast<MemoryFormat>(i);  // owned forever, by the module
    g_memory_format_objects[static_cast<size_t>(i)] = reinterpret_cast<PyObject*>(obj);
    Py_INCREF(obj);  // one reference for the table, one given to the module
    if (PyModule_AddObject(module, std::string(memory_format_name(obj->format)).c_str(),
                           reinterpret_cast<PyObject*>(obj)) < 0) {
      throw python_error_already_set();
    }
  }
}

}  // namespace kiln::python
