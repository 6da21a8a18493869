// numpy facts other bindings need: which objects are numpy arrays and scalars, and their dtypes.
#pragma once

#include <Python.h>

#include <optional>

#include "eager/core/DType.h"

namespace kiln::python {

/// Whether `obj` is a numpy.ndarray (numpy is imported on first use).
[[nodiscard]] bool is_numpy_array(PyObject* obj);

/// Whether `obj` is a numpy scalar (an instance of numpy.generic: np.float32(1), np.bool_(True), ...).
[[nodiscard]] bool is_numpy_scalar(PyObject* obj);

/// Whether `obj` is a numpy.bool_ scalar.
[[nodiscard]] bool is_numpy_bool(PyObject* obj);

/// The kiln dtype of a numpy array or scalar `obj`; TypeError, in from_numpy's words, for a
/// numpy dtype kiln has no counterpart for.
[[nodiscard]] DType dtype_of_numpy_object(PyObject* obj);

}  // namespace kiln::python
