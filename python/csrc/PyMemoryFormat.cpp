// The kiln.memory_format type and its singletons.
#include "python/csrc/PyMemoryFormat.h"

#include <array>
#include <string>

#include "python/csrc/Exceptions.h"

namespace kiln::python {

namespace {

std::array<PyObject*, kNumMemoryFormats> g_memory_format_objects{};

std::string_view name_of(PyObject* self) { return memory_format_name(unwrap_memory_format(self)); }

PyObject* memory_format_repr(PyObject* self) {
  const std::string s = "kiln." + std::string(name_of(self));
  return PyUnicode_FromStringAndSize(s.data(), static_cast<Py_ssize_t>(s.size()));
}

/// Pickles as the attribute name, so unpickling finds the same singleton.
PyObject* memory_format_reduce(PyObject* self, PyObject*) {
  const auto name = name_of(self);
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
  t.tp_doc = "How a new tensor's strides are laid out (kiln.contiguous_format, kiln.preserve_format, ...).";
  t.tp_repr = memory_format_repr;
  t.tp_methods = memory_format_methods;
  return t;
}

}  // namespace

PyTypeObject PyMemoryFormat_Type = make_memory_format_type();

PyObject* memory_format_object(MemoryFormat f) { return g_memory_format_objects[static_cast<size_t>(f)]; }

void init_memory_formats(PyObject* module) {
  if (PyType_Ready(&PyMemoryFormat_Type) < 0) throw python_error_already_set();
  Py_INCREF(&PyMemoryFormat_Type);
  if (PyModule_AddObject(module, "memory_format", reinterpret_cast<PyObject*>(&PyMemoryFormat_Type)) < 0) {
    throw python_error_already_set();
  }
  for (int i = 0; i < kNumMemoryFormats; ++i) {
    auto* obj = PyObject_New(PyMemoryFormatObject, &PyMemoryFormat_Type);
    if (obj == nullptr) throw python_error_already_set();
    obj->format = static_cast<MemoryFormat>(i);
    g_memory_format_objects[static_cast<size_t>(i)] = reinterpret_cast<PyObject*>(obj);  // owned forever
    Py_INCREF(obj);
    if (PyModule_AddObject(module, std::string(memory_format_name(obj->format)).c_str(),
                           reinterpret_cast<PyObject*>(obj)) < 0) {
      throw python_error_already_set();
    }
  }
}

}  // namespace kiln::python
