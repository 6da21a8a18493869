// Zero-copy interop with numpy: kiln.from_numpy and Tensor.numpy().
// Both directions share one buffer; see Note [Foreign memory keeps its owner alive].
#include <Python.h>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "eager/kernels/Views.h"
#include "python/csrc/Exceptions.h"
#include "python/csrc/ForeignMemory.h"
#include "python/csrc/Numpy.h"
#include "python/csrc/PyCapture.h"
#include "python/csrc/PyTensor.h"

namespace py = pybind11;

namespace kiln::python {

namespace {

std::optional<DType> dtype_from_numpy(const py::dtype& dt) {
  if (dt.kind() == 'b' && dt.itemsize() == 1) return DType::Bool;
  if (dt.kind() == 'f') {
    switch (dt.itemsize()) {
      case 2: return DType::Float16;
      case 4: return DType::Float32;
      case 8: return DType::Float64;
    }
  }
  if (dt.kind() == 'i') {
    switch (dt.itemsize()) {
      case 1: return DType::Int8;
      case 2: return DType::Int16;
      case 4: return DType::Int32;
      case 8: return DType::Int64;
    }
  }
  if (dt.kind() == 'u' && dt.itemsize() == 1) return DType::UInt8;
  if (dt.kind() == 'c' && dt.itemsize() == 8) return DType::Complex64;
  if (dt.kind() == 'c' && dt.itemsize() == 16) return DType::Complex128;
  return std::nullopt;
}

/// DType of a numpy dtype, or TypeError naming it as PyTorch does ("numpy.uint16").
DType supported_dtype_from_numpy(const py::dtype& dt) {
  const auto dtype = dtype_from_numpy(dt);
  KILN_CHECK_TYPE(dtype.has_value(), "can't convert np.ndarray of type numpy.",
                  py::str(dt.attr("type").attr("__name__")).cast<std::string>(),
                  ". The only supported types are: float64, float32, float16, complex64, complex128, int64, int32, "
                  "int16, int8, uint8, and bool.");
  return *dtype;
}

/// numpy's types, looked up once: ndarray, generic (every scalar) and bool_.
struct NumpyTypes {
  PyObject* ndarray = nullptr;
  PyObject* generic = nullptr;
  PyObject* bool_ = nullptr;
};

const NumpyTypes& numpy_types() {
  static const NumpyTypes types = [] {
    py::module_ np = py::module_::import("numpy");
    NumpyTypes t;
    t.ndarray = py::object(np.attr("ndarray")).release().ptr();  // kept for the life of the process
    t.generic = py::object(np.attr("generic")).release().ptr();
    t.bool_ = py::object(np.attr("bool_")).release().ptr();
    return t;
  }();
  return types;
}

py::dtype numpy_dtype_for(DType t) {
  switch (t) {
    case DType::Float32: return py::dtype("float32");
    case DType::Float64: return py::dtype("float64");
    case DType::Float16: return py::dtype("float16");
    case DType::Int8: return py::dtype("int8");
    case DType::Int16: return py::dtype("int16");
    case DType::Int32: return py::dtype("int32");
    case DType::Int64: return py::dtype("int64");
    case DType::UInt8: return py::dtype("uint8");
    case DType::Bool: return py::dtype("bool");
    case DType::Complex64: return py::dtype("complex64");
    case DType::Complex128: return py::dtype("complex128");
    case DType::BFloat16: break;
  }
  KILN_FAIL(Type, "Got unsupported ScalarType ", dtype_name(t) == "bfloat16" ? "BFloat16" : dtype_name(t));
}

/// kiln.from_numpy(ndarray): a tensor over the array's memory.
py::object from_numpy(py::handle obj) {
  KILN_CHECK_TYPE(py::isinstance<py::array>(obj), "expected np.ndarray (got ", Py_TYPE(obj.ptr())->tp_name, ")");
  auto array = py::reinterpret_borrow<py::array>(obj);
  const std::optional<DType> dtype = supported_dtype_from_numpy(array.dtype());
  const char byteorder = array.dtype().attr("byteorder").cast<std::string>()[0];
  KILN_CHECK_VALUE(byteorder != '>', "given numpy array has byte order different from the native byte order. "
                   "Conversion between byte orders is currently not supported.");
  const int64_t item = itemsize(*dtype);
  const auto ndim = static_cast<size_t>(array.ndim());
  DimVector sizes(ndim), strides(ndim);
  int64_t extent = 1;  // elements spanned from the data pointer
  bool empty = false;
  for (size_t i = 0; i < ndim; ++i) {
    sizes[i] = array.shape(static_cast<py::ssize_t>(i));
    const auto byte_stride = static_cast<int64_t>(array.strides(static_cast<py::ssize_t>(i)));
    KILN_CHECK_VALUE(byte_stride >= 0, "At least one stride in the given numpy array is negative, and tensors "
                     "with negative strides are not currently supported. (You can probably work around this by "
                     "making a copy of your array  with array.copy().) ");
    KILN_CHECK_VALUE(byte_stride % item == 0, "given numpy array strides not a multiple of the element byte size. "
                     "Copy the numpy array to reallocate the memory.");
    strides[i] = byte_stride / item;
    if (sizes[i] == 0) empty = true;
    extent += (sizes[i] - 1) * strides[i];
  }
  if (!array.writeable()) {
    if (PyErr_WarnEx(PyExc_UserWarning, "The given NumPy array is not writable, and kiln does not support "
                     "non-writable tensors. This means writing to this tensor will result in undefined behavior.",
                     1) < 0) {
      throw python_error_already_set();
    }
  }
  const size_t nbytes = empty ? 0 : static_cast<size_t>(extent * item);
  void* data = const_cast<void*>(array.data());
  Storage storage = make_intrusive<StorageImpl>(keep_python_owner_alive(data, obj.ptr()), nbytes,
                                                /*resizable=*/false);
  Tensor t(make_intrusive<TensorImpl>(std::move(storage), *dtype, sizes, strides, 0));
  return py::reinterpret_steal<py::object>(wrap_tensor(std::move(t)));
}

/// Tensor.numpy(*, force=False): an ndarray over the tensor's memory whose
/// base is the tensor object.
PyObject* tensor_numpy(PyObject* self, PyObject* args, PyObject* kwargs) {
  KILN_PY_BEGIN
  static const char* kw[] = {"force", nullptr};
  int force = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$p:numpy", const_cast<char**>(kw), &force)) return nullptr;
  const Tensor& t = unwrap_tensor(self);
  note_capture_escape("Tensor.numpy()");
  KILN_CHECK_TYPE(t.device().is_cpu(), "can't convert ", t.device(), " device type tensor to numpy. Use "
                  "Tensor.cpu() to copy the tensor to host memory first.");
  KILN_CHECK(force || !t.requires_grad(), "Can't call numpy() on Tensor that requires grad. Use "
             "tensor.detach().numpy() instead.");
  py::dtype dt = numpy_dtype_for(t.dtype());
  std::vector<py::ssize_t> shape(t.sizes().begin(), t.sizes().end());
  std::vector<py::ssize_t> byte_strides;
  for (int64_t s : t.strides()) byte_strides.push_back(static_cast<py::ssize_t>(s * t.itemsize()));
  py::array out(dt, shape, byte_strides, t.data_ptr(), py::handle(self));
  return out.release().ptr();
  KILN_PY_END(nullptr)
}

}  // namespace

bool is_numpy_array(PyObject* obj) {
  return PyObject_TypeCheck(obj, reinterpret_cast<PyTypeObject*>(numpy_types().ndarray));
}

bool is_numpy_scalar(PyObject* obj) {
  return PyObject_TypeCheck(obj, reinterpret_cast<PyTypeObject*>(numpy_types().generic));
}

bool is_numpy_bool(PyObject* obj) {
  return PyObject_TypeCheck(obj, reinterpret_cast<PyTypeObject*>(numpy_types().bool_));
}

DType dtype_of_numpy_object(PyObject* obj) {
  return supported_dtype_from_numpy(py::reinterpret_borrow<py::object>(obj).attr("dtype").cast<py::dtype>());
}

void register_numpy_tensor_methods() {
  tensor_method_table().push_back({"numpy", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(tensor_numpy)),
                                   METH_VARARGS | METH_KEYWORDS, "The tensor's memory as a numpy array (no copy)."});
}

void init_numpy(PyObject* module) {
  py::module_ m = py::reinterpret_borrow<py::module_>(module);
  m.def("from_numpy", &from_numpy, py::arg("ndarray"),
        "A tensor that shares memory with a numpy array (no copy).");
}

}  // namespace kiln::python
