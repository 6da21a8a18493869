// kiln._C._runtime.CompiledGraph's object (PyRuntime.cpp), for the C++ hit
// path of a cached kiln.compile call (PyCachedCall.cpp), which runs it
// without going through Python.
#pragma once

#include <memory>
#include <vector>

#include "eager/dispatch/FunctionSchema.h"
#include "runtime/CompiledGraph.h"

namespace kiln::python {

struct PyCompiledGraph {
  std::unique_ptr<runtime::CompiledGraph> compiled;
  std::vector<SchemaArgument> arguments;  // how each input converts from Python
};

}  // namespace kiln::python
