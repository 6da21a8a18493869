// Raw tensor bytes for serialization (kiln.save / kiln.load, safetensors):
// every dtype, bfloat16 included, without going through numpy; and which
// storage a tensor views, for checkpoints that write each storage once.
#include <Python.h>

#include <cstring>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "python/csrc/Exceptions.h"
#include "python/csrc/PyDType.h"
#include "python/csrc/PyTensor.h"

namespace py = pybind11;

namespace kiln::python {

namespace {

/// The tensor's elements in row-major order, as little-endian bytes.
py::bytes tensor_bytes(py::handle obj) {
  const Tensor& t = tensor_from_object(obj.ptr(), "tensor");
  KILN_CHECK(t.device().is_cpu(), "tensor bytes: only CPU tensors");
  const Tensor dense = t.is_contiguous() ? t : to_dtype_copy(t, t.dtype());
  return py::bytes(static_cast<const char*>(dense.data_ptr()), static_cast<size_t>(dense.nbytes()));
}

/// A new tensor of `dtype` and `shape` holding a copy of `data`.
py::object tensor_from_bytes(py::bytes data, py::handle dtype_obj, std::vector<int64_t> shape) {
  const DType dtype = dtype_from_object(dtype_obj.ptr(), "dtype");
  const std::string_view view = data;
  Tensor t = empty(shape, dtype);
  KILN_CHECK(static_cast<int64_t>(view.size()) == t.nbytes(), "tensor from bytes: ", view.size(),
             " bytes do not hold a tensor of shape ", IntArrayRef(shape), " and dtype ", dtype, " (",
             t.nbytes(), " bytes)");
  if (!view.empty()) std::memcpy(t.data_ptr(), view.data(), view.size());
  return py::reinterpret_steal<py::object>(wrap_tensor(std::move(t)));
}

/// (identity, nbytes) of the storage behind `tensor`: views of one storage share
/// the identity, so a checkpoint writes each storage once (kiln.serialization).
py::tuple storage_info(py::handle obj) {
  const Tensor& t = tensor_from_object(obj.ptr(), "tensor");
  const Storage& storage = t.storage();
  if (!storage) return py::make_tuple(0, 0);
  return py::make_tuple(reinterpret_cast<uintptr_t>(storage.get()), storage->nbytes());
}

}  // namespace

void init_raw_bytes(PyObject* module) {
  py::module_ m = py::reinterpret_borrow<py::module_>(module);
  m.def("_tensor_bytes", &tensor_bytes, py::arg("tensor"));
  m.def("_tensor_from_bytes", &tensor_from_bytes, py::arg("data"), py::arg("dtype"), py::arg("shape"));
  m.def("_storage_info", &storage_info, py::arg("tensor"));
}

}  // namespace kiln::python
