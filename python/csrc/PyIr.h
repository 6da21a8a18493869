// What kiln._C._ir shares with other graph runners (PyRuntime.cpp).
#pragma once

#include <cstddef>

#include "eager/dispatch/FunctionSchema.h"
#include "ir/Type.h"

namespace kiln::python {

/// The schema argument a graph input of type `t` converts through from Python.
[[nodiscard]] SchemaArgument argument_for(const ir::Type& t, size_t index);

}  // namespace kiln::python
