// Python -> C++ conversions for ints, int lists and scalars.
#include "python/csrc/PythonArgs.h"

#include <pybind11/pybind11.h>

#include "python/csrc/Exceptions.h"
#include "python/csrc/Numpy.h"
#include "python/csrc/PyTensor.h"

namespace py = pybind11;

namespace kiln::python {

int64_t int_from_object(PyObject* obj, const char* fn, const char* arg) {
  if (PyLong_CheckExact(obj)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    KILN_CHECK_TYPE(overflow == 0, fn, "(): argument '", arg, "' is out of range for int64");
    return v;
  }
  if (is_tensor(obj)) {
    const Tensor& t = unwrap_tensor(obj);
    KILN_CHECK_TYPE(t.numel() == 1 && is_integral(t.dtype(), false) && t.dim() == 0, fn, "(): argument '", arg,
                    "' must be int, not Tensor");
    return visit_dtype(t.dtype(), [&](auto tag) { return static_cast<int64_t>(*t.data_ptr<decltype(tag)>()); });
  }
  KILN_CHECK_TYPE(!PyBool_Check(obj) && PyIndex_Check(obj), fn, "(): argument '", arg, "' must be int, not ",
                  Py_TYPE(obj)->tp_name);
  PyObject* index = PyNumber_Index(obj);
  if (index == nullptr) throw python_error_already_set();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(index, &overflow);
  Py_DECREF(index);
  KILN_CHECK_TYPE(overflow == 0, fn, "(): argument '", arg, "' is out of range for int64");
  return v;
}

DimVector int_list_from_object(PyObject* obj, const char* fn, const char* arg) {
  KILN_CHECK_TYPE(PyTuple_Check(obj) || PyList_Check(obj), fn, "(): argument '", arg,
                  "' must be tuple of ints, not ", Py_TYPE(obj)->tp_name);
  PyObject* seq = PySequence_Fast(obj, "expected a sequence");
  if (seq == nullptr) throw python_error_already_set();
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  DimVector out;
  out.reserve(static_cast<size_t>(n));
  try {
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* item = PySequence_Fast_GET_ITEM(seq, i);
      KILN_CHECK_TYPE(!PyFloat_Check(item), fn, "(): argument '", arg, "' must be tuple of ints, but found element "
                      "of type float at pos ", i);
      out.push_back(int_from_object(item, fn, arg));
    }
  } catch (...) {
    Py_DECREF(seq);
    throw;
  }
  Py_DECREF(seq);
  return out;
}

DimVector int_list_from_args(PyObject* args, const char* fn, const char* arg) {
  const Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (n == 1) {
    PyObject* first = PyTuple_GET_ITEM(args, 0);
    if (PyTuple_Check(first) || PyList_Check(first)) return int_list_from_object(first, fn, arg);
  }
  return int_list_from_object(args, fn, arg);
}

bool is_scalar_object(PyObject* obj) {
  return PyLong_Check(obj) || PyFloat_Check(obj) || PyBool_Check(obj) || PyComplex_Check(obj);
}

Scalar scalar_from_object(PyObject* obj, const char* fn, const char* arg) {
  if (PyBool_Check(obj)) return Scalar(obj == Py_True);
  if (PyLong_Check(obj)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow != 0) {
      PyErr_SetString(PyExc_OverflowError, "int too big to convert");  // PyTorch's words
      throw python_error_already_set();
    }
    return Scalar(static_cast<int64_t>(v));
  }
  if (PyFloat_Check(obj)) return Scalar(PyFloat_AS_DOUBLE(obj));
  if (PyComplex_Check(obj)) return Scalar(std::complex<double>(PyComplex_RealAsDouble(obj), PyComplex_ImagAsDouble(obj)));
  if (is_tensor(obj)) {
    const Tensor& t = unwrap_tensor(obj);
    KILN_CHECK(t.numel() == 1, fn, "(): argument '", arg, "': a Tensor with ", t.numel(),
               " elements cannot be converted to Scalar");
    return visit_dtype_and_complex(t.dtype(), [&](auto tag) { return Scalar(*t.data_ptr<decltype(tag)>()); });
  }
  if (is_numpy_scalar(obj)) {  // np.int32(3), np.float32(2.5), np.bool_(True), ...
    // Integers stay integers; everything else, np.bool_ included, is read through
    // __float__, as PyTorch's argument parser reads numpy scalars.
    if (PyIndex_Check(obj) && !is_numpy_bool(obj)) {
      py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(obj));
      if (!index) throw python_error_already_set();
      return scalar_from_object(index.ptr(), fn, arg);
    }
    const double v = PyFloat_AsDouble(obj);
    if (v == -1.0 && PyErr_Occurred()) throw python_error_already_set();
    return Scalar(v);
  }
  KILN_FAIL(Type, fn, "(): argument '", arg, "' must be Number, not ", Py_TYPE(obj)->tp_name);
}

}  // namespace kiln::python
