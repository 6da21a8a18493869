// DataPtrs over memory owned by Python objects or DLPack producers.
#pragma once

#include <Python.h>

#include "eager/core/Storage.h"

namespace kiln::python {

// Note [Foreign memory keeps its owner alive]
// -------------------------------------------
// A tensor made from a numpy array or a DLPack capsule does not copy: its
// Storage's DataPtr points into the foreign buffer and its context holds the
// owner (a reference to the Python object, or the DLManagedTensor). When the
// last view of the storage dies, the deleter releases the owner: Py_DECREF
// under the GIL, or the producer's DLPack deleter. The reverse direction
// (Tensor.numpy(), __dlpack__) makes the tensor the owner of the export.

/// A CPU DataPtr over `data` that holds a new reference to `owner` and drops
/// it (taking the GIL) when the storage dies.
[[nodiscard]] DataPtr keep_python_owner_alive(void* data, PyObject* owner);

}  // namespace kiln::python
