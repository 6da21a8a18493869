// kiln._C: the extension module. Each init_* lives in the file that owns it.
#include <pybind11/pybind11.h>

#include "python/csrc/Exceptions.h"
#include "python/csrc/PyDType.h"
#include "python/csrc/PyDevice.h"
#include "python/csrc/PyMemoryFormat.h"
#include "python/csrc/PyTensor.h"
#include "python/csrc/TensorIndexing.h"

namespace kiln::python {
void init_numpy(PyObject* module);     // Numpy.cpp
void init_dlpack(PyObject* module);    // DLPack.cpp
void init_creation(PyObject* module);  // Creation.cpp
void init_memory(PyObject* module);    // Memory.cpp
void init_config(PyObject* module);    // Config.cpp
void init_library(PyObject* module);   // PyLibrary.cpp
void init_parallel(PyObject* module);  // Parallel.cpp
void init_autograd(PyObject* module);  // Autograd.cpp (tensor methods)
void init_autograd_module(PyObject* module);  // Autograd.cpp
void init_python_function(PyObject* module);  // PyFunction.cpp
void init_raw_bytes(PyObject* module);  // RawBytes.cpp
void init_polynomial_recurrence(PyObject* module);  // PolynomialRecurrence.cpp
void init_generator(PyObject* module);  // PyGenerator.cpp
void init_memory_formats(PyObject* module);  // PyMemoryFormat.cpp
void init_testing_arg_parser(PyObject* module);  // TestingArgParser.cpp
void init_ir(PyObject* module);  // PyIr.cpp (kiln._C._ir)
void init_capture(PyObject* module);  // PyCapture.cpp (kiln._C._capture)
void init_passes(PyObject* module);  // PyPasses.cpp (kiln._C._passes)
void init_distributed(PyObject* module);  // Distributed.cpp (kiln._C._distributed)
void init_runtime(PyObject* module);  // PyRuntime.cpp (kiln._C._runtime)
void init_profiler(PyObject* module);  // PyProfiler.cpp (kiln._C._profiler)
void init_cuda(PyObject* module);     // PyCuda.cpp (kiln.cuda's functions; registers the CUDA kernels)
void init_cuda_codegen(PyObject* module);  // PyCudaCodegen.cpp (kiln._C._cuda_codegen)
void init_generated_functions(PyObject* module);  // python_functions.cpp (generated from ops.yaml)
void register_generated_tensor_methods();         // python_methods.cpp (generated from ops.yaml)
}  // namespace kiln::python

PYBIND11_MODULE(_C, m) {
  using namespace kiln::python;
  m.doc() = "kiln's C++ core";
  try {
    init_exceptions(m.ptr());
    init_dtypes(m.ptr());
    init_device(m.ptr());
    init_memory_formats(m.ptr());
    register_generated_tensor_methods();  // first: CPython keeps the first method of a name
    register_basic_tensor_methods();
    register_numpy_tensor_methods();
    register_dlpack_tensor_methods();
    init_autograd(m.ptr());
    register_tensor_indexing();  // x[index], x[index] = v (TensorIndexing.cpp)
    init_tensor_type(m.ptr());
    init_generated_functions(m.ptr());
    init_numpy(m.ptr());
    init_dlpack(m.ptr());
    init_creation(m.ptr());
    init_memory(m.ptr());
    init_config(m.ptr());
    init_library(m.ptr());
    init_parallel(m.ptr());
    init_autograd_module(m.ptr());
    init_python_function(m.ptr());
    init_raw_bytes(m.ptr());
    init_polynomial_recurrence(m.ptr());
    init_generator(m.ptr());
    init_memory_formats(m.ptr());
    init_testing_arg_parser(m.ptr());
    init_ir(m.ptr());
    init_capture(m.ptr());  // after init_ir: it returns ir Graphs
    init_passes(m.ptr());  // after init_ir: it takes ir Graphs
    init_distributed(m.ptr());
    init_runtime(m.ptr());  // takes ir Graphs
    init_profiler(m.ptr());
    init_cuda(m.ptr());
    init_cuda_codegen(m.ptr());  // after init_cuda: gives its pointwise kernels the table's math
  } catch (const python_error_already_set&) {
    throw pybind11::error_already_set();
  }
}
