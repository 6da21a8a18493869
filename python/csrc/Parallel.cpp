// kiln.set_num_threads / kiln.get_num_threads: the intra-op thread pool's size.
#include <pybind11/pybind11.h>

#include <atomic>
#include <thread>
#include <vector>

#include "bench/probe/PeakStub.h"
#include "eager/core/Error.h"
#include "eager/kernels/Parallel.h"

namespace py = pybind11;

namespace kiln::python {
namespace {

/// The peak probe on `threads` threads at once, summed: the rate the whole
/// machine sustains while every core runs vector FMAs (a core's clock may drop
/// when its neighbours are busy too, as they are inside a multi-threaded GEMM).
/// Plain threads, not the pool, so the probes are sure to overlap; a start
/// barrier lines them up.
double fp32_peak_gflops_concurrent(double seconds, int threads) {
  std::vector<double> rates(static_cast<size_t>(threads), 0.0);
  std::atomic<int> ready{0};
  auto probe = [&](int i) {
    ready.fetch_add(1);
    while (ready.load() < threads) {
    }
    rates[static_cast<size_t>(i)] = native::fp32_peak_stub(seconds);
  };
  std::vector<std::thread> workers;
  for (int i = 1; i < threads; ++i) workers.emplace_back(probe, i);
  probe(0);
  for (auto& worker : workers) worker.join();
  double total = 0;
  for (double rate : rates) total += rate;
  return total;
}

}  // namespace

void init_parallel(PyObject* module) {
  py::module_ m = py::reinterpret_borrow<py::module_>(module);
  m.def("set_num_threads", &kiln::set_num_threads, py::arg("int"),
        "Sets the number of threads used for intra-op parallelism on the CPU.");
  m.def(
      "_fp32_peak_gflops",
      [](double seconds, int threads) {
        KILN_CHECK(threads >= 1, "_fp32_peak_gflops: threads must be at least 1, got ", threads);
        py::gil_scoped_release release;
        return threads == 1 ? native::fp32_peak_stub(seconds) : fp32_peak_gflops_concurrent(seconds, threads);
      },
      py::arg("seconds") = 0.2, py::arg("threads") = 1,
      "The measured FP32 fused multiply-add rate, in GFLOP/s, of `threads` cores probed at once (for benchmarks).");
  m.def("get_num_threads", &kiln::get_num_threads,
        "The number of threads used for intra-op parallelism on the CPU (default: every core).");
}

}  // namespace kiln::python
