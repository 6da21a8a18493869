// kiln.memory_stats(), kiln.empty_cache(), kiln.reset_peak_memory_stats(), and the
// allocator's fault injection for tests (_fail_nth_allocation).
#include <pybind11/pybind11.h>

#include "eager/memory/CpuAllocator.h"

namespace py = pybind11;

namespace kiln::python {

void init_memory(PyObject* module) {
  py::module_ m = py::reinterpret_borrow<py::module_>(module);
  m.def("_memory_stats", [] {
    py::dict out;
    for (const auto& [key, value] : memory::cpu_caching_allocator().stats().as_flat_dict()) out[py::str(key)] = value;
    return out;
  });
  m.def("_empty_cache", [] { memory::cpu_caching_allocator().empty_cache(); });
  m.def("_reset_peak_memory_stats", [] { memory::cpu_caching_allocator().reset_peak_stats(); });
  m.def("_caching_enabled", [] { return memory::cpu_caching_allocator().caching_enabled(); });
  // Fault injection for tests: Note [Failing the N-th allocation] (eager/memory/CachingAllocator.cpp).
  m.def("_fail_nth_allocation", [](int64_t n) { memory::cpu_caching_allocator().fail_nth_allocation(n); });
  m.def("_allocations_until_failure", [] { return memory::cpu_caching_allocator().allocations_until_failure(); });
}

}  // namespace kiln::python
