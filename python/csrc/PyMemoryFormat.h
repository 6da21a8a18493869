// kiln.memory_format: one immortal Python object per MemoryFormat
// (kiln.contiguous_format, kiln.preserve_format, kiln.channels_last,
// kiln.channels_last_3d), compared by identity like torch.memory_format.
#pragma once

#include <Python.h>

#include "eager/core/MemoryFormat.h"

namespace kiln::python {

struct PyMemoryFormatObject {
  PyObject_HEAD
  MemoryFormat format;
};

extern PyTypeObject PyMemoryFormat_Type;

[[nodiscard]] inline bool is_memory_format_object(PyObject* obj) { return Py_TYPE(obj) == &PyMemoryFormat_Type; }
/// The MemoryFormat of a kiln.memory_format object, or TypeError naming `what`.
[[nodiscard]] MemoryFormat memory_format_from_object(PyObject* obj, const char* what = "memory_format");
[[nodiscard]] inline MemoryFormat unwrap_memory_format(PyObject* obj) {
  return reinterpret_cast<PyMemoryFormatObject*>(obj)->format;
}
/// Borrowed reference to the singleton for `f`.
[[nodiscard]] PyObject* memory_format_object(MemoryFormat f);

/// Creates the type and adds kiln.contiguous_format, ... to `module`.
void init_memory_formats(PyObject* module);

}  // namespace kiln::python
