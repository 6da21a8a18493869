// Build and host facts for kiln.show_config(): versions, LLVM's view of the CPU,
// and the instruction set the eager CPU kernels run with.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "codegen/llvm/HostInfo.h"
#include "eager/kernels/cpu/CpuCapability.h"

namespace py = pybind11;

namespace kiln::python {

void init_config(PyObject* module) {
  py::module_ m = py::reinterpret_borrow<py::module_>(module);
  m.def("_host_info", [] {
    const auto& h = codegen::host_info();
    py::dict out;
    out["llvm_version"] = h.llvm_version;
    out["target_triple"] = h.target_triple;
    out["cpu_name"] = h.cpu_name;
    out["cpu_features"] = h.features;
    return out;
  });
  // The build of the CPU kernels that runs (Note [One kernel source, several instruction sets]):
  // "default", "avx2" or "avx512", the best this CPU has, capped by KILN_CPU_CAPABILITY.
  m.def("_cpu_capability", [] { return std::string(cpu_capability_name(cpu_capability())); });
  py::dict build;
  build["compiler"] = __VERSION__;
  build["cxx_standard"] = __cplusplus;
#ifdef NDEBUG
  build["build_type"] = "Release";
#else
  build["build_type"] = "Debug";
#endif
  build["pybind11"] = std::to_string(PYBIND11_VERSION_MAJOR) + "." + std::to_string(PYBIND11_VERSION_MINOR) + "." +
                      std::to_string(PYBIND11_VERSION_PATCH);
  m.attr("_build_info") = build;
}

}  // namespace kiln::python
