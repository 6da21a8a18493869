// Tensor creation from Python: kiln.tensor(data) and the factory functions'
// C++ halves (kiln/_creation.py holds the PyTorch-shaped signatures).
#include <Python.h>

#include <pybind11/pybind11.h>

#include "eager/kernels/cpu/Copy.h"
#include "eager/kernels/cpu/Factories.h"
#include "python/csrc/Exceptions.h"
#include "python/csrc/PyDType.h"
#include "python/csrc/PyDevice.h"
#include "python/csrc/PyTensor.h"
#include "python/csrc/PythonArgs.h"

namespace py = pybind11;

namespace kiln::python {

namespace {

std::optional<DType> optional_dtype(py::handle obj) {
  if (obj.is_none()) return std::nullopt;
  return dtype_from_object(obj.ptr());
}

Device optional_device(py::handle obj) { return obj.is_none() ? Device() : device_from_object(obj.ptr()); }

py::object finish(Tensor t, bool requires_grad) {
  if (requires_grad) t.set_requires_grad(true);
  return py::reinterpret_steal<py::object>(wrap_tensor(std::move(t)));
}

// --- kiln.tensor(nested data) -----------------------------------------------

bool is_sequence_like(PyObject* obj) {
  return PyList_Check(obj) || PyTuple_Check(obj) || (is_tensor(obj) && unwrap_tensor(obj).dim() > 0) ||
         (!PyUnicode_Check(obj) && !PyBytes_Check(obj) && !is_tensor(obj) && PySequence_Check(obj) &&
          !PyNumber_Check(obj));
}

/// The shape of nested sequences, read along the first elements.
DimVector infer_shape(PyObject* obj) {
  DimVector shape;
  py::object current = py::reinterpret_borrow<py::object>(obj);
  while (is_sequence_like(current.ptr())) {
    const Py_ssize_t n = PySequence_Length(current.ptr());
    if (n < 0) throw python_error_already_set();
    shape.push_back(n);
    KILN_CHECK(shape.size() <= 64, "tensor(): too many dimensions");
    if (n == 0) break;
    current = py::reinterpret_steal<py::object>(PySequence_GetItem(current.ptr(), 0));
    if (!current) throw python_error_already_set();
  }
  return shape;
}

/// Widest scalar category among the leaves: 0 bool, 1 int, 2 float.
struct LeafScan {
  int category = -1;
};

void scan_and_check(PyObject* obj, const DimVector& shape, size_t d, LeafScan& scan) {
  if (d == shape.size()) {
    KILN_CHECK_TYPE(!is_sequence_like(obj) || (is_tensor(obj) && unwrap_tensor(obj).numel() == 1),
                    "tensor(): too many dimensions in the data at dim ", d);
    int cat = -1;
    if (PyBool_Check(obj)) {
      cat = 0;
    } else if (PyLong_Check(obj)) {
      cat = 1;
    } else if (PyFloat_Check(obj)) {
      cat = 2;
    } else if (is_tensor(obj)) {
      const DType t = unwrap_tensor(obj).dtype();
      cat = static_cast<int>(category(t));
    } else if (PyIndex_Check(obj)) {
      cat = 1;  // numpy integers
    } else if (PyNumber_Check(obj) && PyObject_HasAttrString(obj, "__float__")) {
      cat = 2;  // numpy floats
    } else {
      KILN_FAIL(Type, "new(): invalid data type '", Py_TYPE(obj)->tp_name, "'");
    }
    scan.category = std::max(scan.category, cat);
    return;
  }
  KILN_CHECK_VALUE(is_sequence_like(obj), "expected sequence of length ", shape[d], " at dim ", d, " (got ",
                   Py_TYPE(obj)->tp_name, ")");
  const Py_ssize_t n = PySequence_Length(obj);
  if (n < 0) throw python_error_already_set();
  KILN_CHECK_VALUE(n == shape[d], "expected sequence of length ", shape[d], " at dim ", d, " (got ", n, ")");
  for (Py_ssize_t i = 0; i < n; ++i) {
    py::object item = py::reinterpret_steal<py::object>(PySequence_GetItem(obj, i));
    if (!item) throw python_error_already_set();
    scan_and_check(item.ptr(), shape, d + 1, scan);
  }
}

template <typename T>
void store_leaf(PyObject* obj, T* out) {
  Scalar s;
  if (is_tensor(obj)) {
    s = scalar_from_object(obj, "tensor", "data");
  } else if (PyBool_Check(obj) || PyLong_Check(obj) || PyFloat_Check(obj)) {
    s = scalar_from_object(obj, "tensor", "data");
  } else if (PyIndex_Check(obj)) {
    s = Scalar(int_from_object(obj, "tensor", "data"));
  } else {
    const double v = PyFloat_AsDouble(obj);
    if (v == -1.0 && PyErr_Occurred()) throw python_error_already_set();
    s = Scalar(v);
  }
  *out = s.to<T>();
}

template <typename T>
void fill_from_nested(PyObject* obj, const DimVector& shape, size_t d, T*& out) {
  if (d == shape.size()) {
    store_leaf<T>(obj, out++);
    return;
  }
  for (int64_t i = 0; i < shape[d]; ++i) {
    py::object item = py::reinterpret_steal<py::object>(PySequence_GetItem(obj, static_cast<Py_ssize_t>(i)));
    if (!item) throw python_error_already_set();
    fill_from_nested(item.ptr(), shape, d + 1, out);
  }
}

py::object tensor_from_data(py::handle data, py::handle dtype_obj, py::handle device_obj, bool requires_grad) {
  const auto dtype = optional_dtype(dtype_obj);
  const Device device = optional_device(device_obj);
  PyObject* obj = data.ptr();
  // Tensors and arrays: copy with conversion.
  if (is_tensor(obj)) {
    const Tensor& src = unwrap_tensor(obj);
    return finish(to_dtype_copy(src, dtype.value_or(src.dtype())), requires_grad);
  }
  if (py::isinstance(data, py::module_::import("numpy").attr("ndarray"))) {
    py::object view = py::module_::import("kiln._C").attr("from_numpy")(data);
    const Tensor& src = unwrap_tensor(view.ptr());
    return finish(to_dtype_copy(src, dtype.value_or(src.dtype())), requires_grad);
  }
  const DimVector shape = infer_shape(obj);
  LeafScan scan;
  scan_and_check(obj, shape, 0, scan);
  DType out_dtype = default_dtype();
  if (dtype) {
    out_dtype = *dtype;
  } else if (scan.category == 0) {
    out_dtype = DType::Bool;
  } else if (scan.category == 1) {
    out_dtype = DType::Int64;
  }
  Tensor t = empty(shape, out_dtype, device);
  visit_dtype(out_dtype, [&](auto tag) {
    using T = decltype(tag);
    T* out = t.data_ptr<T>();
    fill_from_nested<T>(obj, shape, 0, out);
  });
  return finish(std::move(t), requires_grad);
}

// --- factories --------------------------------------------------------------

py::object py_empty(py::handle size, py::handle dtype, py::handle device, bool requires_grad) {
  const DimVector sizes = int_list_from_object(size.ptr(), "empty", "size");
  return finish(empty(sizes, optional_dtype(dtype).value_or(default_dtype()), optional_device(device)), requires_grad);
}

py::object py_zeros(py::handle size, py::handle dtype, py::handle device, bool requires_grad) {
  const DimVector sizes = int_list_from_object(size.ptr(), "zeros", "size");
  return finish(zeros(sizes, optional_dtype(dtype).value_or(default_dtype()), optional_device(device)), requires_grad);
}

py::object py_ones(py::handle size, py::handle dtype, py::handle device, bool requires_grad) {
  const DimVector sizes = int_list_from_object(size.ptr(), "ones", "size");
  return finish(ones(sizes, optional_dtype(dtype).value_or(default_dtype()), optional_device(device)), requires_grad);
}

py::object py_full(py::handle size, py::handle fill_value, py::handle dtype, py::handle device, bool requires_grad) {
  const DimVector sizes = int_list_from_object(size.ptr(), "full", "size");
  const Scalar value = scalar_from_object(fill_value.ptr(), "full", "fill_value");
  const DType out = optional_dtype(dtype).value_or(value.natural_dtype());
  return finish(full(sizes, value, out, optional_device(device)), requires_grad);
}

py::object py_arange(py::handle start, py::handle end, py::handle step, py::handle dtype, py::handle device,
                     bool requires_grad) {
  return finish(arange(scalar_from_object(start.ptr(), "arange", "start"),
                       scalar_from_object(end.ptr(), "arange", "end"),
                       scalar_from_object(step.ptr(), "arange", "step"), optional_dtype(dtype),
                       optional_device(device)),
                requires_grad);
}

py::object py_linspace(py::handle start, py::handle end, py::handle steps, py::handle dtype, py::handle device,
                       bool requires_grad) {
  return finish(linspace(scalar_from_object(start.ptr(), "linspace", "start"),
                         scalar_from_object(end.ptr(), "linspace", "end"),
                         int_from_object(steps.ptr(), "linspace", "steps"), optional_dtype(dtype),
                         optional_device(device)),
                requires_grad);
}

}  // namespace

void init_creation(PyObject* module) {
  py::module_ m = py::reinterpret_borrow<py::module_>(module);
  m.def("_tensor", &tensor_from_data, py::arg("data"), py::arg("dtype"), py::arg("device"), py::arg("requires_grad"));
  m.def("_empty", &py_empty, py::arg("size"), py::arg("dtype"), py::arg("device"), py::arg("requires_grad"));
  m.def("_zeros", &py_zeros, py::arg("size"), py::arg("dtype"), py::arg("device"), py::arg("requires_grad"));
  m.def("_ones", &py_ones, py::arg("size"), py::arg("dtype"), py::arg("device"), py::arg("requires_grad"));
  m.def("_full", &py_full, py::arg("size"), py::arg("fill_value"), py::arg("dtype"), py::arg("device"),
        py::arg("requires_grad"));
  m.def("_arange", &py_arange, py::arg("start"), py::arg("end"), py::arg("step"), py::arg("dtype"),
        py::arg("device"), py::arg("requires_grad"));
  m.def("_linspace", &py_linspace, py::arg("start"), py::arg("end"), py::arg("steps"), py::arg("dtype"),
        py::arg("device"), py::arg("requires_grad"));
  m.def("get_default_dtype", [] { return py::reinterpret_borrow<py::object>(dtype_object(default_dtype())); });
  m.def("set_default_dtype", [](py::handle d) { set_default_dtype(dtype_from_object(d.ptr())); }, py::arg("d"));
}

}  // namespace kiln::python
