// The Python tensor object: kiln._C.TensorBase, a raw CPython type holding a
// kiln::Tensor; kiln.Tensor (python/kiln/_tensor.py) subclasses it.
// See Note [Tensor and its Python object].
#pragma once

#include <Python.h>

#include <vector>

#include "eager/ops/Tensor.h"

namespace kiln::python {

struct PyTensorObject {
  PyObject_HEAD
  Tensor tensor;
  PyObject* weakreflist;
};

extern PyTypeObject PyTensorBase_Type;

[[nodiscard]] inline bool is_tensor(PyObject* obj) { return PyObject_TypeCheck(obj, &PyTensorBase_Type); }
[[nodiscard]] inline const Tensor& unwrap_tensor(PyObject* obj) {
  return reinterpret_cast<PyTensorObject*>(obj)->tensor;
}
/// The tensor in `obj`, or TypeError naming `what`.
[[nodiscard]] const Tensor& tensor_from_object(PyObject* obj, const char* what);

/// A new reference to the Python object for `t`: the existing one if `t`'s
/// impl already has one, else a fresh instance of kiln.Tensor.
[[nodiscard]] PyObject* wrap_tensor(Tensor t);

/// kiln.Size: a tuple subclass printed as "kiln.Size([2, 3])".
extern PyTypeObject PySize_Type;
[[nodiscard]] PyObject* make_size(IntArrayRef sizes);

/// Each file that defines tensor methods appends them here (from its
/// register_*_tensor_methods function) before init_tensor_type.
std::vector<PyMethodDef>& tensor_method_table();
std::vector<PyGetSetDef>& tensor_getset_table();

/// Readies TensorBase and Size and adds them to the module; also the
/// `_set_tensor_class` hook kiln/_tensor.py calls with its subclass.
void init_tensor_type(PyObject* module);

void register_basic_tensor_methods();   // TensorMethods.cpp
void register_numpy_tensor_methods();   // Numpy.cpp
void register_dlpack_tensor_methods();  // DLPack.cpp

}  // namespace kiln::python
