// Deleters that release Python-owned memory safely from any thread.
#include "python/csrc/ForeignMemory.h"

namespace kiln::python {

namespace {

void decref_with_gil(void* ctx) {
  if (!Py_IsInitialized()) return;  // interpreter gone: the owner went with it
  PyGILState_STATE state = PyGILState_Ensure();
  Py_DECREF(static_cast<PyObject*>(ctx));
  PyGILState_Release(state);
}

}  // namespace

DataPtr keep_python_owner_alive(void* data, PyObject* owner) {
  Py_INCREF(owner);
  return DataPtr(data, owner, &decref_with_gil, Device());
}

}  // namespace kiln::python
