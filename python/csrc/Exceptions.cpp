// C++ exception -> Python exception translation.
#include "python/csrc/Exceptions.h"

#include <new>

#include "eager/core/Warning.h"
#include <pybind11/pybind11.h>

namespace kiln::python {

PyObject* g_out_of_memory_error = nullptr;

namespace {

PyObject* python_type_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Runtime:
      return PyExc_RuntimeError;
    case ErrorKind::Value:
      return PyExc_ValueError;
    case ErrorKind::Type:
      return PyExc_TypeError;
    case ErrorKind::Index:
      return PyExc_IndexError;
    case ErrorKind::NotImplemented:
      return PyExc_NotImplementedError;
    case ErrorKind::OutOfMemory:
      return g_out_of_memory_error ? g_out_of_memory_error : PyExc_MemoryError;
  }
  return PyExc_RuntimeError;
}

}  // namespace

void set_python_error_from_current_exception() {
  try {
    throw;
  } catch (const python_error_already_set&) {
    // The Python error indicator is already set.
  } catch (pybind11::error_already_set& e) {
    e.restore();
  } catch (const kiln::Error& e) {
    PyErr_SetString(python_type_for(e.kind()), e.what());
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "kiln: unknown C++ exception");
  }
}

namespace {

/// C++ warnings (KILN_WARN) become Python UserWarnings. With warnings turned
/// into errors the Python exception propagates out of the op.
void warn_in_python(const std::string& message) {
  if (!Py_IsInitialized()) return;
  PyGILState_STATE gil = PyGILState_Ensure();
  const int failed = PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 1);
  PyGILState_Release(gil);
  if (failed < 0) throw python_error_already_set();
}

}  // namespace

void init_exceptions(PyObject* module) {
  set_warning_handler(&warn_in_python);
  g_out_of_memory_error = PyErr_NewExceptionWithDoc(
      "kiln.OutOfMemoryError", "Raised when a device allocator cannot satisfy a request.", PyExc_RuntimeError,
      nullptr);
  if (g_out_of_memory_error == nullptr) throw pybind11::error_already_set();
  Py_INCREF(g_out_of_memory_error);
  if (PyModule_AddObject(module, "OutOfMemoryError", g_out_of_memory_error) < 0) {
    throw pybind11::error_already_set();
  }
  pybind11::register_exception_translator([](std::exception_ptr p) {
    if (!p) return;
    try {
      std::rethrow_exception(p);
    } catch (const python_error_already_set&) {
      // A CPython call inside a pybind11-bound function failed: its error is already set.
    } catch (const kiln::Error& e) {
      PyErr_SetString(python_type_for(e.kind()), e.what());
    }
  });
}

}  // namespace kiln::python
