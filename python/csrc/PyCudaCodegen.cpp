// kiln._C._cuda_codegen: the CUDA backend of the kernel IR (codegen/cuda). At load it installs the
// generator that gives the eager CUDA pointwise kernels the compiler table's math
// (Note [Eager CUDA pointwise math from the compiler's table]); for tests it lists those kernels.
#include <Python.h>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "codegen/cuda/CudaEagerPointwise.h"
#include "codegen/cuda/CudaExpr.h"
#include "eager/kernels/cuda/KernelSources.h"

namespace py = pybind11;

namespace kiln::python {

void init_cuda_codegen(PyObject* module) {
  codegen::cuda::install_eager_pointwise_kernels();
  py::module_ m = py::reinterpret_borrow<py::module_>(module);
  py::module_ cg = m.def_submodule("_cuda_codegen", "the kernel IR as CUDA C (codegen/cuda/README.md)");
  cg.def(
      "eager_pointwise_kernels",
      [] {
        codegen::cuda::EagerPointwiseCoverage c = codegen::cuda::all_eager_pointwise_kernels();
        py::list kernels;
        for (size_t i = 0; i < c.kernels.size(); ++i) {
          kernels.append(py::make_tuple(c.what[i], c.kernels[i].name, c.kernels[i].body));
        }
        return py::make_tuple(kernels, c.uncovered);
      },
      "([(what, name, body)], uncovered): the eager CUDA pointwise kernels generated from the table, one per "
      "(op, dtype) of eager/kernels/cuda/PointwiseMath.h it covers; each body follows the eager prelude.");
  cg.def("eager_prelude", [] { return native::cuda_kernels::kernel_prelude(); },
         "eager/kernels/cuda's prelude (Indexer, half types) the eager kernels' bodies follow.");
  cg.def("prelude", [] { return codegen::cuda::cuda_prelude(); }, "codegen/cuda's device helpers.");
}

}  // namespace kiln::python
