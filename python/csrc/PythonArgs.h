// Small argument-conversion helpers shared by the hand-written bindings.
// (The generated bindings of the dispatcher issue will bring a full
// PythonArgParser; these cover ints, int lists and optionals.)
#pragma once

#include <Python.h>

#include <optional>

#include "eager/core/ArrayRef.h"
#include "eager/core/Scalar.h"

namespace kiln::python {

/// An index-like int (Python int, or anything with __index__, not bool unless allowed).
/// TypeError naming `fn` and `arg` otherwise.
[[nodiscard]] int64_t int_from_object(PyObject* obj, const char* fn, const char* arg);

/// A list of ints given either as varargs (`view(2, 3)`) or as one sequence
/// (`view((2, 3))`, `view([2, 3])`, a kiln.Size).
[[nodiscard]] DimVector int_list_from_args(PyObject* args, const char* fn, const char* arg);
/// One sequence of ints.
[[nodiscard]] DimVector int_list_from_object(PyObject* obj, const char* fn, const char* arg);

/// A Python bool, int or float as a Scalar. TypeError otherwise.
[[nodiscard]] Scalar scalar_from_object(PyObject* obj, const char* fn, const char* arg);
[[nodiscard]] bool is_scalar_object(PyObject* obj);

}  // namespace kiln::python
