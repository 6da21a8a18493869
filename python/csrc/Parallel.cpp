// kiln.set_num_threads / kiln.get_num_threads: the intra-op thread pool's size.
#include <pybind11/pybind11.h>

#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/PeakStub.h"

namespace py = pybind11;

namespace kiln::python {

void init_parallel(PyObject* module) {
  py::module_ m = py::reinterpret_borrow<py::module_>(module);
  m.def("set_num_threads", &kiln::set_num_threads, py::arg("int"),
        "Sets the number of threads used for intra-op parallelism on the CPU.");
  m.def("_fp32_peak_gflops", [](double seconds) { return native::fp32_peak_stub(seconds); }, py::arg("seconds") = 0.2,
        "One core's measured FP32 fused multiply-add rate, in GFLOP/s (for benchmarks).");
  m.def("get_num_threads", &kiln::get_num_threads,
        "The number of threads used for intra-op parallelism on the CPU (default: every core).");
}

}  // namespace kiln::python
