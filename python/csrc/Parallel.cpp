// kiln.set_num_threads / kiln.get_num_threads: the intra-op thread pool's size.
#include <pybind11/pybind11.h>

#include "eager/kernels/Parallel.h"

namespace py = pybind11;

namespace kiln::python {

void init_parallel(PyObject* module) {
  py::module_ m = py::reinterpret_borrow<py::module_>(module);
  m.def("set_num_threads", &kiln::set_num_threads, py::arg("int"),
        "Sets the number of threads used for intra-op parallelism on the CPU.");
  m.def("get_num_threads", &kiln::get_num_threads,
        "The number of threads used for intra-op parallelism on the CPU (default: every core).");
}

}  // namespace kiln::python
