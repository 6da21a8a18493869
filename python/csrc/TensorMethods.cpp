// Tensor properties and the hand-written methods: geometry queries, item,
// tolist, requires_grad, _slice. The op methods (view, transpose, add, ...) are
// generated from ops.yaml (python_methods.cpp, tools/opgen).
#include <Python.h>

#include <optional>
#include <type_traits>
#include <vector>

#include "eager/kernels/cuda/CudaCopy.h"
#include "kiln/generated/Functions.h"
#include "python/csrc/Exceptions.h"
#include "python/csrc/PyDType.h"
#include "python/csrc/PyCapture.h"
#include "python/csrc/PyDevice.h"
#include "python/csrc/PyTensor.h"
#include "python/csrc/PythonArgs.h"

namespace kiln::python {

namespace {

const Tensor& self_tensor(PyObject* self) { return unwrap_tensor(self); }

PyObject* element_to_python(const void* p, DType dtype) {
  return visit_dtype_and_complex(dtype, [p](auto tag) -> PyObject* {
    using T = decltype(tag);
    const T v = *static_cast<const T*>(p);
    if constexpr (is_complex_v<T>) {
      return PyComplex_FromDoubles(static_cast<double>(v.real()), static_cast<double>(v.imag()));
    } else if constexpr (std::is_same_v<T, bool>) {
      return PyBool_FromLong(v);
    } else if constexpr (std::is_integral_v<T>) {
      return PyLong_FromLongLong(static_cast<long long>(v));
    } else if constexpr (std::is_same_v<T, double>) {
      return PyFloat_FromDouble(v);
    } else {
      return PyFloat_FromDouble(static_cast<double>(static_cast<float>(v)));
    }
  });
}

PyObject* nested_list(const char* data, IntArrayRef sizes, IntArrayRef strides, int64_t itemsize, DType dtype,
                      size_t d) {
  if (d == sizes.size()) return element_to_python(data, dtype);
  PyObject* list = PyList_New(sizes[d]);
  if (list == nullptr) throw python_error_already_set();
  for (int64_t i = 0; i < sizes[d]; ++i) {
    PyObject* item = nested_list(data + i * strides[d] * itemsize, sizes, strides, itemsize, dtype, d + 1);
    if (item == nullptr) {
      Py_DECREF(list);
      throw python_error_already_set();
    }
    PyList_SET_ITEM(list, i, item);
  }
  return list;
}

void check_host_readable(const Tensor& t, const char* fn) {
  KILN_CHECK_TYPE(t.device().is_cpu(), "can't convert ", t.device(), " device type tensor to ", fn,
                  ". Use Tensor.cpu() to copy the tensor to host memory first.");
}

// --- properties ------------------------------------------------------------

PyObject* get_shape(PyObject* self, void*) {
  KILN_PY_BEGIN
  return make_size(self_tensor(self).sizes());
  KILN_PY_END(nullptr)
}
PyObject* get_dtype(PyObject* self, void*) {
  PyObject* d = dtype_object(self_tensor(self).dtype());
  Py_INCREF(d);
  return d;
}
PyObject* get_device(PyObject* self, void*) {
  KILN_PY_BEGIN
  return device_object(self_tensor(self).device());
  KILN_PY_END(nullptr)
}
PyObject* get_ndim(PyObject* self, void*) { return PyLong_FromLongLong(self_tensor(self).dim()); }
PyObject* get_is_cpu(PyObject* self, void*) { return PyBool_FromLong(self_tensor(self).device().is_cpu()); }
PyObject* get_is_cuda(PyObject* self, void*) { return PyBool_FromLong(self_tensor(self).device().is_cuda()); }
PyObject* get_is_meta(PyObject* self, void*) { return PyBool_FromLong(self_tensor(self).device().is_meta()); }
PyObject* get_itemsize(PyObject* self, void*) { return PyLong_FromLongLong(self_tensor(self).itemsize()); }
PyObject* get_nbytes(PyObject* self, void*) { return PyLong_FromLongLong(self_tensor(self).nbytes()); }
PyObject* get_version(PyObject* self, void*) { return PyLong_FromLong(self_tensor(self).version()); }
PyObject* get_requires_grad(PyObject* self, void*) { return PyBool_FromLong(self_tensor(self).requires_grad()); }
int set_requires_grad(PyObject* self, PyObject* value, void*) {
  KILN_PY_BEGIN
  KILN_CHECK(value != nullptr && PyBool_Check(value), "requires_grad must be a bool");
  self_tensor(self).set_requires_grad(value == Py_True);
  return 0;
  KILN_PY_END(-1)
}

// --- methods -----------------------------------------------------------------

/// A dim argument of size()/stride(), wrapped; IndexError in PyTorch's words,
/// including for 0-dim tensors, which have no dim to name.
int64_t checked_dim(const Tensor& t, PyObject* dim, const char* fn) {
  const int64_t d = int_from_object(dim, fn, "dim");
  KILN_CHECK_INDEX(t.dim() > 0, "Dimension specified as ", d, " but tensor has no dimensions");
  return wrap_dim(d, t.dim());
}

/// size() -> kiln.Size; size(dim) -> int. Same for stride.
PyObject* tensor_size(PyObject* self, PyObject* args, PyObject* kwargs) {
  KILN_PY_BEGIN
  static const char* kw[] = {"dim", nullptr};
  PyObject* dim = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:size", const_cast<char**>(kw), &dim)) return nullptr;
  const Tensor& t = self_tensor(self);
  if (dim == Py_None) return make_size(t.sizes());
  return PyLong_FromLongLong(t.size(checked_dim(t, dim, "size")));
  KILN_PY_END(nullptr)
}

PyObject* tensor_stride(PyObject* self, PyObject* args, PyObject* kwargs) {
  KILN_PY_BEGIN
  static const char* kw[] = {"dim", nullptr};
  PyObject* dim = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:stride", const_cast<char**>(kw), &dim)) return nullptr;
  const Tensor& t = self_tensor(self);
  if (dim != Py_None) return PyLong_FromLongLong(t.stride(checked_dim(t, dim, "stride")));
  PyObject* out = PyTuple_New(t.dim());
  if (out == nullptr) return nullptr;
  for (int64_t i = 0; i < t.dim(); ++i) PyTuple_SET_ITEM(out, i, PyLong_FromLongLong(t.strides()[i]));
  return out;
  KILN_PY_END(nullptr)
}

PyObject* tensor_dim(PyObject* self, PyObject*) { return PyLong_FromLongLong(self_tensor(self).dim()); }
PyObject* tensor_numel(PyObject* self, PyObject*) { return PyLong_FromLongLong(self_tensor(self).numel()); }
PyObject* tensor_is_contiguous(PyObject* self, PyObject*) {
  return PyBool_FromLong(self_tensor(self).is_contiguous());
}
PyObject* tensor_storage_offset(PyObject* self, PyObject*) {
  return PyLong_FromLongLong(self_tensor(self).storage_offset());
}
PyObject* tensor_data_ptr(PyObject* self, PyObject*) {
  const Tensor& t = self_tensor(self);
  return t.impl()->is_meta() ? PyLong_FromLong(0) : PyLong_FromVoidPtr(t.data_ptr());  // meta: no data, address 0
}
PyObject* tensor_element_size(PyObject* self, PyObject*) { return PyLong_FromLongLong(self_tensor(self).itemsize()); }

PyObject* tensor_item(PyObject* self, PyObject*) {
  KILN_PY_BEGIN
  const Tensor& t = self_tensor(self);
  note_capture_escape("Tensor.item() (or bool/int/float/index of a tensor)");
  KILN_CHECK(t.numel() == 1, "a Tensor with ", t.numel(), " elements cannot be converted to Scalar");
  KILN_CHECK(!t.impl()->is_meta(), "Tensor.item() cannot be called on meta tensors");
  if (t.device().is_cuda()) {  // as torch's: a synchronous copy to the host
    const Tensor host = native::to_copy_across_devices(t, std::nullopt, Device(), false, std::nullopt);
    return element_to_python(host.data_ptr(), host.dtype());
  }
  check_host_readable(t, "Python scalar");
  return element_to_python(t.data_ptr(), t.dtype());
  KILN_PY_END(nullptr)
}

PyObject* tensor_tolist(PyObject* self, PyObject*) {
  KILN_PY_BEGIN
  const Tensor& t = self_tensor(self);
  note_capture_escape("Tensor.tolist()");
  KILN_CHECK_NOT_IMPLEMENTED(!t.impl()->is_meta(), "Cannot copy out of meta tensor; no data!");
  if (t.device().is_cuda()) {  // as torch's: a synchronous copy to the host
    const Tensor host = native::to_copy_across_devices(t, std::nullopt, Device(), false, std::nullopt);
    return nested_list(static_cast<const char*>(host.data_ptr()), host.sizes(), host.strides(), host.itemsize(),
                       host.dtype(), 0);
  }
  check_host_readable(t, "list");
  return nested_list(static_cast<const char*>(t.data_ptr()), t.sizes(), t.strides(), t.itemsize(), t.dtype(), 0);
  KILN_PY_END(nullptr)
}

PyObject* tensor_requires_grad_(PyObject* self, PyObject* args, PyObject* kwargs) {
  KILN_PY_BEGIN
  static const char* kw[] = {"requires_grad", nullptr};
  int flag = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|p:requires_grad_", const_cast<char**>(kw), &flag)) {
    return nullptr;
  }
  KILN_CHECK(flag == 0 || is_differentiable_dtype(self_tensor(self).dtype()),
             "only Tensors of floating point dtype can require gradients");
  self_tensor(self).set_requires_grad(flag != 0);
  Py_INCREF(self);
  return self;
  KILN_PY_END(nullptr)
}

/// _slice(dim, start, end, step): Python slice semantics along one dim.
PyObject* tensor_slice(PyObject* self, PyObject* args) {
  KILN_PY_BEGIN
  PyObject *dim = nullptr, *start = Py_None, *end = Py_None, *step = nullptr;
  if (!PyArg_ParseTuple(args, "O|OOO:_slice", &dim, &start, &end, &step)) return nullptr;
  std::optional<int64_t> lo, hi;
  if (start != Py_None) lo = int_from_object(start, "slice", "start");
  if (end != Py_None) hi = int_from_object(end, "slice", "end");
  const int64_t st = step && step != Py_None ? int_from_object(step, "slice", "step") : 1;
  return wrap_tensor(slice(self_tensor(self), int_from_object(dim, "slice", "dim"), lo, hi, st));
  KILN_PY_END(nullptr)
}

Py_ssize_t tensor_len(PyObject* self) {
  const Tensor& t = self_tensor(self);
  if (t.dim() == 0) {
    PyErr_SetString(PyExc_TypeError, "len() of a 0-d tensor");
    return -1;
  }
  return static_cast<Py_ssize_t>(t.size(0));
}

PySequenceMethods tensor_as_sequence = {tensor_len, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                        nullptr, nullptr};

#define KILN_KW_METHOD(name, fn) {name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(fn)), METH_VARARGS | METH_KEYWORDS, nullptr}

}  // namespace

void register_basic_tensor_methods() {
  auto& m = tensor_method_table();
  m.push_back(KILN_KW_METHOD("size", tensor_size));
  m.push_back(KILN_KW_METHOD("stride", tensor_stride));
  m.push_back({"dim", tensor_dim, METH_NOARGS, nullptr});
  m.push_back({"ndimension", tensor_dim, METH_NOARGS, nullptr});
  m.push_back({"numel", tensor_numel, METH_NOARGS, nullptr});
  m.push_back({"nelement", tensor_numel, METH_NOARGS, nullptr});
  m.push_back({"is_contiguous", tensor_is_contiguous, METH_NOARGS, nullptr});
  m.push_back({"storage_offset", tensor_storage_offset, METH_NOARGS, nullptr});
  m.push_back({"data_ptr", tensor_data_ptr, METH_NOARGS, nullptr});
  m.push_back({"element_size", tensor_element_size, METH_NOARGS, nullptr});
  m.push_back({"item", tensor_item, METH_NOARGS, nullptr});
  m.push_back({"tolist", tensor_tolist, METH_NOARGS, nullptr});
  m.push_back(KILN_KW_METHOD("requires_grad_", tensor_requires_grad_));
  m.push_back({"_slice", tensor_slice, METH_VARARGS, nullptr});

  auto& g = tensor_getset_table();
  g.push_back({"shape", get_shape, nullptr, nullptr, nullptr});
  g.push_back({"dtype", get_dtype, nullptr, nullptr, nullptr});
  g.push_back({"device", get_device, nullptr, nullptr, nullptr});
  g.push_back({"ndim", get_ndim, nullptr, nullptr, nullptr});
  g.push_back({"is_cpu", get_is_cpu, nullptr, nullptr, nullptr});
  g.push_back({"is_cuda", get_is_cuda, nullptr, nullptr, nullptr});
  g.push_back({"is_meta", get_is_meta, nullptr, nullptr, nullptr});
  g.push_back({"itemsize", get_itemsize, nullptr, nullptr, nullptr});
  g.push_back({"nbytes", get_nbytes, nullptr, nullptr, nullptr});
  g.push_back({"_version", get_version, nullptr, nullptr, nullptr});
  g.push_back({"requires_grad", get_requires_grad, set_requires_grad, nullptr, nullptr});

  PyTensorBase_Type.tp_as_sequence = &tensor_as_sequence;
}

}  // namespace kiln::python
