// kiln.memory_stats(), kiln.empty_cache(), kiln.reset_peak_memory_stats().
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
}

}  // namespace kiln::python
