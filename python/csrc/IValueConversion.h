// Python objects <-> IValues, guided by a schema argument's type. Used by the
// generic boxed paths: calling any op by name from Python (kiln.ops.ns.name)
// and running Python kernels of custom ops.
#pragma once

#include <Python.h>

#include "eager/dispatch/FunctionSchema.h"
#include "eager/dispatch/IValue.h"

namespace kiln::python {

/// Converts `obj` to the schema type of `arg`; TypeError naming `op` and the argument otherwise.
[[nodiscard]] IValue ivalue_from_python(PyObject* obj, const SchemaArgument& arg, const std::string& op);
/// The value of a schema default as written ("1", "None", "[0, 1]", "\"mean\"", "False", "1e-05").
[[nodiscard]] IValue ivalue_from_default(const SchemaArgument& arg, const std::string& op);
/// A new reference to the Python form of `v` (tensors wrapped, lists as lists).
[[nodiscard]] PyObject* ivalue_to_python(const IValue& v);

}  // namespace kiln::python
