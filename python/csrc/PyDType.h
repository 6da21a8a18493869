// kiln.dtype: one immortal Python object per DType (kiln.float32, ...),
// compared by identity like torch.dtype.
#pragma once

#include <Python.h>

#include "eager/core/DType.h"

namespace kiln::python {

struct PyDTypeObject {
  PyObject_HEAD
  DType dtype;
};

extern PyTypeObject PyDType_Type;

[[nodiscard]] inline bool is_dtype_object(PyObject* obj) { return Py_TYPE(obj) == &PyDType_Type; }
/// Borrowed reference to the singleton for `t`.
[[nodiscard]] PyObject* dtype_object(DType t);
/// The DType of a kiln.dtype object, or TypeError naming `what`.
[[nodiscard]] DType dtype_from_object(PyObject* obj, const char* what = "dtype");

/// Creates the type and adds kiln.float32, kiln.float, ... to `module`.
void init_dtypes(PyObject* module);

}  // namespace kiln::python
