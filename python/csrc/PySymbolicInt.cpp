// kiln.compiler's SymInt as the argument parser sees it: See PySymbolicInt.h and capture
// Note [Symbolic sizes under capture].
#include "python/csrc/PySymbolicInt.h"

#include <pybind11/pybind11.h>

#include "capture/CaptureSession.h"
#include "python/csrc/Exceptions.h"

namespace py = pybind11;

namespace kiln::python {

namespace {
PyTypeObject* symbolic_int_type = nullptr;  // a strong reference, set once by kiln.compiler

int64_t read_int_attribute(PyObject* obj, const char* name) {
  PyObject* v = PyObject_GetAttrString(obj, name);
  if (v == nullptr) throw python_error_already_set();
  const long long x = PyLong_AsLongLong(v);
  Py_DECREF(v);
  if (x == -1 && PyErr_Occurred()) throw python_error_already_set();
  return x;
}
}  // namespace

bool is_symbolic_int(PyObject* obj) { return symbolic_int_type != nullptr && Py_TYPE(obj) == symbolic_int_type; }

int64_t symbolic_int_value(PyObject* obj, int64_t position) {
  const int64_t value = read_int_attribute(obj, "_value");
  if (capture::CaptureSession* s = capture::current_session()) {
    const int64_t handle = read_int_attribute(obj, "_handle");
    if (handle >= 0) s->note_symbolic_argument(value, static_cast<size_t>(handle), position);
  }
  return value;
}

void init_symbolic_int(PyObject* capture_module) {
  py::module_ cm = py::reinterpret_borrow<py::module_>(capture_module);
  cm.def(
      "set_symbolic_int_type",
      [](const py::type& cls) {
        PyTypeObject* t = reinterpret_cast<PyTypeObject*>(cls.ptr());
        Py_INCREF(t);
        std::swap(symbolic_int_type, t);
        Py_XDECREF(t);
      },
      py::arg("cls"),
      "Registers kiln.compiler's SymInt: int, int[] and Scalar arguments accept it (its `_value`), noting its "
      "`_handle` on the capture session (capture Note [Symbolic sizes under capture]).");
}

}  // namespace kiln::python
