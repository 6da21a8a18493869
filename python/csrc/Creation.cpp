// Tensor creation from Python: kiln.tensor(data) (kiln/_creation.py holds its
// PyTorch-shaped signature). The factories and the *_like forms are ops
// (eager/ops/ops.yaml, creation.yaml) with generated bindings.
#include <Python.h>

#include <string>
#include <vector>

#include <pybind11/pybind11.h>

#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "python/csrc/Exceptions.h"
#include "python/csrc/Numpy.h"
#include "python/csrc/PyDType.h"
#include "python/csrc/PyDevice.h"
#include "python/csrc/PyTensor.h"
#include "python/csrc/PythonArgs.h"

namespace py = pybind11;

namespace kiln::python {

namespace {

std::optional<DType> optional_dtype(py::handle obj, const char* what) {
  if (obj.is_none()) return std::nullopt;
  return dtype_from_object(obj.ptr(), what);
}

Device optional_device(py::handle obj, const char* what) {
  return obj.is_none() ? Device() : device_from_object(obj.ptr(), what);
}


py::object finish(Tensor t, bool requires_grad) {
  if (requires_grad) {
    KILN_CHECK(is_differentiable_dtype(t.dtype()), "Only Tensors of floating point and complex dtype can require gradients");
    t.set_requires_grad(true);
  }
  return py::reinterpret_steal<py::object>(wrap_tensor(std::move(t)));
}

// --- kiln.tensor(nested data) -----------------------------------------------
//
// Note [kiln.tensor reads data as PyTorch does]
// ---------------------------------------------
// PyTorch's internal_new_from_data makes three passes over nested data, and the
// errors a user sees depend on which pass meets a problem first, so kiln keeps
// the same passes:
// 1. The shape follows first elements only (compute_sizes): anything passing
//    PySequence_Check that is not a tensor is a sequence, strings included, so
//    ["a"] recurses until "too many dimensions 'str'".
// 2. The dtype, unless given, promotes over every leaf (infer_scalar_type): a
//    Python float is the default dtype, an int int64, a bool bool; tensors,
//    numpy arrays and numpy scalars bring their own dtype.
// 3. The values are stored (recursive_store), checking each sequence's length
//    ("expected sequence of length 2 at dim 1 (got 3)"), that inner items are
//    sequences ("not a sequence") and that integers fit ("value cannot be
//    converted to type uint8 without overflow"). A tensor with no elements skips
//    this pass.

constexpr size_t kMaxTensorDims = 64;  // PyTorch's MAX_DIMS for nested data

bool is_nested_sequence(PyObject* obj) { return !is_tensor(obj) && PySequence_Check(obj); }

DimVector compute_sizes(PyObject* data) {
  DimVector sizes;
  py::object current = py::reinterpret_borrow<py::object>(data);
  while (is_nested_sequence(current.ptr())) {
    const Py_ssize_t length = PySequence_Length(current.ptr());
    if (length < 0) throw python_error_already_set();
    sizes.push_back(length);
    KILN_CHECK_VALUE(sizes.size() <= kMaxTensorDims, "too many dimensions '", Py_TYPE(current.ptr())->tp_name, "'");
    if (length == 0) break;
    PyObject* first = PySequence_GetItem(current.ptr(), 0);
    KILN_CHECK_VALUE(first != nullptr, "could not determine the shape of object type '",
                     Py_TYPE(current.ptr())->tp_name, "'");
    current = py::reinterpret_steal<py::object>(first);
  }
  return sizes;
}

DType infer_scalar_type(PyObject* obj) {
  if (is_tensor(obj)) return unwrap_tensor(obj).dtype();
  if (is_numpy_array(obj) || is_numpy_scalar(obj)) return dtype_of_numpy_object(obj);
  if (PyFloat_Check(obj)) return default_dtype();
  if (PyComplex_Check(obj)) return to_complex_type(default_dtype());
  if (PyBool_Check(obj)) return DType::Bool;
  if (PyLong_Check(obj)) return DType::Int64;
  KILN_CHECK_TYPE(!PyUnicode_Check(obj) && !PyBytes_Check(obj), "new(): invalid data type '", Py_TYPE(obj)->tp_name,
                  "'");
  KILN_CHECK(PySequence_Check(obj), "Could not infer dtype of ", Py_TYPE(obj)->tp_name);
  const Py_ssize_t length = PySequence_Length(obj);
  if (length < 0) throw python_error_already_set();
  if (length == 0) return default_dtype();
  std::optional<DType> result;
  for (Py_ssize_t i = 0; i < length; ++i) {
    py::object item = py::reinterpret_steal<py::object>(PySequence_GetItem(obj, i));
    if (!item) throw python_error_already_set();
    KILN_CHECK_TYPE(item.ptr() != obj, "new(): self-referential lists are incompatible");
    const DType item_dtype = infer_scalar_type(item.ptr());
    result = result ? promote_types(*result, item_dtype) : item_dtype;
  }
  return *result;
}

/// One leaf's value, read as PyTorch's store_scalar reads it for `dtype`.
Scalar leaf_value(PyObject* obj, DType dtype) {
  if (is_tensor(obj)) {
    KILN_CHECK_VALUE(unwrap_tensor(obj).numel() == 1, "only one element tensors can be converted to Python scalars");
    return scalar_from_object(obj, "tensor", "data");
  }
  if (is_floating_point(dtype)) {
    const double v = PyFloat_AsDouble(obj);  // "must be real number, not NoneType"
    if (v == -1.0 && PyErr_Occurred()) throw python_error_already_set();
    return Scalar(v);
  }
  if (PyFloat_Check(obj)) return Scalar(PyFloat_AS_DOUBLE(obj));
  if (is_numpy_scalar(obj)) return scalar_from_object(obj, "tensor", "data");
  if (dtype == DType::Bool && !PyLong_Check(obj)) {
    const double v = PyFloat_AsDouble(obj);
    if (v == -1.0 && PyErr_Occurred()) throw python_error_already_set();
    return Scalar(v != 0.0);
  }
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);  // "'list' object cannot be interpreted..."
  if (v == -1 && PyErr_Occurred()) throw python_error_already_set();
  KILN_CHECK_VALUE(overflow == 0, "Overflow when unpacking long long");
  return Scalar(static_cast<int64_t>(v));
}

template <typename T>
void recursive_store(PyObject* obj, const DimVector& sizes, size_t dim, T*& out) {
  if (dim == sizes.size()) {
    if constexpr (is_complex_v<T>) {  // a complex leaf: a Python complex (floats and ints too, as PyTorch)
      const Py_complex v = PyComplex_AsCComplex(obj);
      if (v.real == -1.0 && PyErr_Occurred()) throw python_error_already_set();
      using R = typename T::value_type;
      *out++ = T(static_cast<R>(v.real), static_cast<R>(v.imag));
    } else {
      const Scalar value = leaf_value(obj, dtype_of<T>());
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        KILN_CHECK(!overflows(value, dtype_of<T>()), "value cannot be converted to type ",
                   dtype_name(dtype_of<T>()), " without overflow");
      }
      *out++ = value.to<T>();
    }
    return;
  }
  py::object seq = py::reinterpret_steal<py::object>(PySequence_Fast(obj, "not a sequence"));
  if (!seq) throw python_error_already_set();
  const Py_ssize_t length = PySequence_Fast_GET_SIZE(seq.ptr());
  KILN_CHECK_VALUE(length == sizes[dim], "expected sequence of length ", sizes[dim], " at dim ", dim, " (got ",
                   length, ")");
  for (Py_ssize_t i = 0; i < length; ++i) {
    recursive_store(PySequence_Fast_GET_ITEM(seq.ptr(), i), sizes, dim + 1, out);
  }
}

py::object tensor_from_data(py::handle data, py::handle dtype_obj, py::handle device_obj, bool requires_grad) {
  const auto dtype = optional_dtype(dtype_obj, "tensor(): argument 'dtype'");
  const Device device = optional_device(device_obj, "tensor(): argument 'device'");
  PyObject* obj = data.ptr();
  KILN_CHECK_TYPE(!PyUnicode_Check(obj) && !PyBytes_Check(obj), "new(): invalid data type '", Py_TYPE(obj)->tp_name,
                  "'");
  // Tensors and arrays: copy with conversion.
  if (is_tensor(obj)) {
    const Tensor& src = unwrap_tensor(obj);
    return finish(to_dtype_copy(src, dtype.value_or(src.dtype())), requires_grad);
  }
  if (is_numpy_array(obj)) {
    py::object view = py::module_::import("kiln._C").attr("from_numpy")(data);
    const Tensor& src = unwrap_tensor(view.ptr());
    return finish(to_dtype_copy(src, dtype.value_or(src.dtype())), requires_grad);
  }
  // See Note [kiln.tensor reads data as PyTorch does].
  const DimVector sizes = compute_sizes(obj);
  const DType out_dtype = dtype ? *dtype : infer_scalar_type(obj);
  Tensor t = empty(sizes, out_dtype, device);
  if (t.numel() > 0) {
    visit_dtype_and_complex(out_dtype, [&](auto tag) {
      using T = decltype(tag);
      T* out = t.data_ptr<T>();
      recursive_store<T>(obj, sizes, 0, out);
    });
  }
  return finish(std::move(t), requires_grad);
}

}  // namespace

void init_creation(PyObject* module) {
  py::module_ m = py::reinterpret_borrow<py::module_>(module);
  m.def("_tensor", &tensor_from_data, py::arg("data"), py::arg("dtype"), py::arg("device"), py::arg("requires_grad"));
  m.def("get_default_dtype", [] { return py::reinterpret_borrow<py::object>(dtype_object(default_dtype())); });
  m.def("set_default_dtype", [](py::handle d) { set_default_dtype(dtype_from_object(d.ptr())); }, py::arg("d"));
}

}  // namespace kiln::python
