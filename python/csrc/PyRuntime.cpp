// kiln._C._runtime: compile a captured graph into a runtime::CompiledGraph
// (fused LLVM kernels + eager steps) and run it; introspection for tests and
// KILN_LOGS=codegen.
#include <Python.h>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "codegen/PointwiseMath.h"
#include "codegen/llvm/KernelCache.h"
#include "codegen/llvm/KernelJit.h"
#include "python/csrc/Exceptions.h"
#include "python/csrc/IValueConversion.h"
#include "python/csrc/PyIr.h"
#include "python/csrc/PyRuntime.h"
#include "runtime/CompiledGraph.h"
#include "runtime/KernelAutotune.h"

namespace py = pybind11;

namespace kiln::python {

namespace {

py::list run_compiled(const PyCompiledGraph& self, const py::sequence& inputs) {
  KILN_CHECK_TYPE(static_cast<size_t>(py::len(inputs)) == self.arguments.size(), "compiled graph: takes ",
                  self.arguments.size(), " inputs but got ", py::len(inputs));
  std::vector<IValue> values;
  values.reserve(self.arguments.size());
  for (size_t i = 0; i < self.arguments.size(); ++i) {
    py::object item = inputs[i];
    values.push_back(ivalue_from_python(item.ptr(), self.arguments[i], "compiled graph"));
  }
  std::vector<IValue> outputs;
  {
    py::gil_scoped_release no_gil;
    outputs = self.compiled->run(std::move(values));
  }
  py::list out;
  for (const IValue& v : outputs) out.append(py::reinterpret_steal<py::object>(ivalue_to_python(v)));
  return out;
}

}  // namespace

void init_runtime(PyObject* module) {
  py::module_ m = py::reinterpret_borrow<py::module_>(module);
  py::module_ rt = m.def_submodule("_runtime", "compiled graphs: fused LLVM kernels + eager steps (runtime/README.md)");
  py::class_<PyCompiledGraph>(rt, "CompiledGraph")
      .def("run", &run_compiled, py::arg("inputs"), "Runs the graph; returns its outputs as a list.")
      .def("__call__", &run_compiled, py::arg("inputs"))
      .def_property_readonly("kernel_count", [](const PyCompiledGraph& g) { return g.compiled->kernel_count(); })
      .def_property_readonly("kernels", [](const PyCompiledGraph& g) { return g.compiled->kernel_ir(); })
      .def_property_readonly("kernel_ops", [](const PyCompiledGraph& g) { return g.compiled->kernel_ops(); })
      .def_property_readonly("kernel_members", [](const PyCompiledGraph& g) { return g.compiled->kernel_members(); })
      .def_property_readonly("kernel_schedules", [](const PyCompiledGraph& g) { return g.compiled->kernel_schedules(); },
                             "Each kernel step's schedule (Note [Kernel schedules], codegen/KernelSchedule.h).")
      .def_property_readonly(
          "kernel_graph_inputs", [](const PyCompiledGraph& g) { return g.compiled->kernel_graph_inputs(); },
          "Per kernel, the graph input index of each of its inputs (-1: another step's value).")
      .def_property_readonly(
          "kernel_graph_outputs", [](const PyCompiledGraph& g) { return g.compiled->kernel_graph_outputs(); },
          "Per kernel, the graph output index of each of its outputs (-1: read only by later steps).")
      .def_property_readonly("eager_ops", [](const PyCompiledGraph& g) { return g.compiled->eager_ops(); })
      .def_property_readonly("llvm_ir", [](const PyCompiledGraph& g) { return g.compiled->llvm_ir(); })
      .def_property_readonly("targets_cuda", [](const PyCompiledGraph& g) { return g.compiled->targets_cuda(); })
      .def_property_readonly(
          "cuda_sources",
          [](const PyCompiledGraph& g) {
            py::list out;
            for (const auto& s : g.compiled->cuda_sources()) out.append(py::make_tuple(s.source, s.entry_i32, s.entry_i64));
            return out;
          },
          "Each fused kernel's CUDA C program and its (32-bit, 64-bit index) entry points; empty on the CPU.")
      .def_property_readonly("memory_plan", [](const PyCompiledGraph& g) { return g.compiled->memory_plan().str(); })
      .def_property_readonly("arena_bytes",
                             [](const PyCompiledGraph& g) { return g.compiled->memory_plan().arena_bytes; })
      .def_property_readonly("outputs_written_into_inputs",
                             [](const PyCompiledGraph& g) { return g.compiled->outputs_written_into_inputs(); })
      .def_property_readonly(
          "cuda_graph_stats",
          [](const PyCompiledGraph& g) {
            return py::make_tuple(g.compiled->replays_cuda_graphs(), g.compiled->cuda_graph_captures(),
                                  g.compiled->cuda_graph_replays());
          },
          "(runs go through CUDA-graph replay, graphs captured, replays launched): mode='reduce-overhead' on CUDA "
          "(runtime Note [CUDA graphs of a compiled graph]).");
  rt.def(
      "compile",
      [](const ir::Graph& g, bool fuse, bool keep_llvm_ir, bool runs_without_autograd, bool plan_memory,
         bool reduce_overhead, std::vector<std::pair<size_t, size_t>> outputs_into_inputs, bool decompose,
         const std::string& target, bool max_autotune, std::optional<std::tuple<int, int, int64_t>> schedule,
         bool norms_whole) {
        PyCompiledGraph out;
        for (size_t i = 0; i < g.inputs().size(); ++i) out.arguments.push_back(argument_for(g.inputs()[i]->type(), i));
        runtime::CompileOptions options;
        options.fuse = fuse;
        options.keep_llvm_ir = keep_llvm_ir;
        options.runs_without_autograd = runs_without_autograd;
        options.plan_memory = plan_memory;
        options.reduce_overhead = reduce_overhead;
        options.outputs_into_inputs = std::move(outputs_into_inputs);
        options.decompose = decompose;
        options.norms_whole = norms_whole;
        options.max_autotune = max_autotune;
        if (schedule) {
          const auto [lanes, unroll, grain] = *schedule;
          options.schedule = codegen::KernelSchedule{lanes, unroll, grain};
        }
        KILN_CHECK_VALUE(target == "auto" || target == "cpu" || target == "cuda",
                         "compile: target must be 'auto', 'cpu' or 'cuda', not '", target, "'");
        options.target = target == "cuda"  ? runtime::KernelTarget::Cuda
                         : target == "cpu" ? runtime::KernelTarget::Cpu
                                           : runtime::KernelTarget::Auto;
        py::gil_scoped_release no_gil;
        out.compiled = std::make_unique<runtime::CompiledGraph>(g, options);
        return out;
      },
      py::arg("graph"), py::arg("fuse") = true, py::arg("keep_llvm_ir") = false,
      py::arg("runs_without_autograd") = false, py::arg("plan_memory") = true, py::arg("reduce_overhead") = false,
      py::arg("outputs_into_inputs") = std::vector<std::pair<size_t, size_t>>{}, py::arg("decompose") = true,
      py::arg("target") = "auto", py::arg("max_autotune") = false, py::arg("schedule") = py::none(),
      py::arg("norms_whole") = true,
      "Compiles a verified graph: fusion groups become LLVM kernels, other nodes eager steps; plan_memory: kernel "
      "outputs reuse dead inputs in place; reduce_overhead: kernel outputs inside the graph in one pre-planned "
      "arena (runtime/MemoryPlan.h); outputs_into_inputs: (output, input) index pairs the caller copies back after "
      "a run: a kernel may store such an output into the input directly and return the input "
      "(Note [Outputs written into their inputs]); decompose: composites decomposed so they fuse "
      "(Note [Composites compile decomposed]); target: 'cuda' prints CUDA C kernels (launched through NVRTC), 'cpu' "
      "LLVM kernels, 'auto' CUDA when an input was captured on a CUDA device (Note [Compiled graphs on CUDA]); "
      "max_autotune: each kernel's schedule chosen by timing (Note [Choosing a kernel's schedule]); schedule: "
      "(vector lanes or 0, unroll, grain or 0) for every kernel instead (tests); norms_whole: false decomposes the "
      "CPU norms a row kernel would compute in eager's order, as the CUDA target does (tests).");
  rt.def(
      "autotune_candidates",
      [](int64_t elements) {
        py::list out;
        for (const codegen::KernelSchedule& code : runtime::pointwise_code_candidates()) {
          for (int64_t grain : runtime::grain_candidates(elements)) {
            out.append(py::make_tuple(code.vector_lanes, code.unroll, grain));
          }
        }
        return out;
      },
      py::arg("elements"),
      "The (vector lanes, unroll, grain) schedules max-autotune may give a pointwise kernel of that many elements.");
  rt.def("autotuned_kernel_count", &runtime::autotuned_kernel_count,
         "Kernels timed by max-autotune in this process (its choice cache's misses).");
  rt.def("autotune_choices_from_disk", &runtime::autotune_choices_from_disk,
         "max-autotune choices this process took from the disk cache instead of timing.");
  rt.def("pointwise_math_ops", &codegen::pointwise_math_ops,
         "The ops the kernel math table covers (codegen/PointwiseMath.h).");
  rt.def("compiled_kernel_count", &codegen::compiled_kernel_count, "Kernels in the process's JIT cache.");
  rt.def(
      "kernel_cache_stats",
      [] {
        const codegen::KernelCacheStats s = codegen::kernel_cache_stats();
        py::dict d;
        d["memory_hits"] = s.memory_hits;
        d["disk_hits"] = s.disk_hits;
        d["misses"] = s.misses;
        d["disk_writes"] = s.disk_writes;
        d["disk_rejected"] = s.disk_rejected;
        d["disk_write_errors"] = s.disk_write_errors;
        d["last_rejection"] = s.last_rejection;
        return d;
      },
      "The kernel cache's counters since the start or the last reset (codegen/llvm/KernelCache.h).");
  rt.def("reset_kernel_cache_stats", &codegen::reset_kernel_cache_stats);
  rt.def("kernel_cache_dir", &codegen::kernel_cache_dir,
         "The disk cache's directory ($KILN_CACHE_DIR, else ~/.cache/kiln; '' when off).");
  rt.def(
      "prune_kernel_cache",
      [](std::optional<int64_t> max_bytes) {
        const codegen::KernelCachePruneResult r =
            codegen::prune_kernel_disk_cache(max_bytes ? *max_bytes : codegen::kernel_cache_max_bytes());
        py::dict d;
        d["kept"] = r.kept;
        d["kept_bytes"] = r.kept_bytes;
        d["removed_foreign"] = r.removed_foreign;
        d["removed_over_cap"] = r.removed_over_cap;
        d["removed_temporary"] = r.removed_temporary;
        return d;
      },
      py::arg("max_bytes") = py::none(),
      "Prunes the disk cache's directory now: entries of another kiln build, LLVM, CPU or format, abandoned "
      "temporaries, then the least recently used beyond max_bytes (default $KILN_CACHE_MAX_BYTES or 1 GiB; 0: no "
      "cap). A process's first store into a directory does this once (Note [Pruning the kernel cache]).");
  rt.def(
      "forget_compiled_kernels", [] { codegen::forget_compiled_kernels(); },
      "Empties the in-memory kernel cache (loaded code stays): the next compile reads the disk cache (tests).");
}

}  // namespace kiln::python
