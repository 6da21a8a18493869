// Turning C++ errors into Python exceptions at the boundary.
// See Note [Errors cross into Python by kind] (eager/core/Error.h).
#pragma once

#include <Python.h>

#include "eager/core/Error.h"

namespace kiln::python {

/// kiln.OutOfMemoryError (a RuntimeError subclass), created at module init.
extern PyObject* g_out_of_memory_error;

/// Sets the Python error for the exception in flight. Call inside a catch.
void set_python_error_from_current_exception();

/// Registers the pybind11 translator and creates kiln.OutOfMemoryError.
void init_exceptions(PyObject* module);

/// Thrown by code that already set a Python error (a CPython call failed).
struct python_error_already_set {};

}  // namespace kiln::python

/// Wrap the body of a raw CPython entry point:
///   KILN_PY_BEGIN ... return result; KILN_PY_END(nullptr)
#define KILN_PY_BEGIN try {
#define KILN_PY_END(retval)                                 \
  }                                                         \
  catch (...) {                                             \
    ::kiln::python::set_python_error_from_current_exception(); \
    return retval;                                          \
  }
