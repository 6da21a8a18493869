// The Python SymInt of a symbolic capture as the argument parser sees it
// (capture Note [Symbolic sizes under capture]): kiln.compiler registers its
// SymInt class; an int, int[] or Scalar argument given one reads its
// capture-time value and notes it on the current capture session.
#pragma once

#include <Python.h>

#include <cstdint>

namespace kiln::python {

/// Whether obj is a kiln.compiler SymInt (false until the class is registered).
[[nodiscard]] bool is_symbolic_int(PyObject* obj);
/// obj's capture-time value (its `_value`), noting (value, its `_handle`, `position`:
/// its index in an int list, -1 for a single int) on the current capture session
/// for the op being called.
[[nodiscard]] int64_t symbolic_int_value(PyObject* obj, int64_t position = -1);
/// Registers `_capture.set_symbolic_int_type(cls)`, `symbolic_size` and `symbolic_arith` on the
/// `_capture` submodule.
void init_symbolic_int(PyObject* capture_module);

}  // namespace kiln::python
