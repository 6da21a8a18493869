// kiln._C._passes: the graph passes from Python, on kiln._C._ir Graphs (each
// rewrites its graph in place): run_pipeline and one entry per pass.
#include <Python.h>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "ir/Printer.h"
#include "passes/decompose_composites.h"
#include "passes/eliminate_common_subexpressions.h"
#include "passes/eliminate_dead_code.h"
#include "passes/fold_constants.h"
#include "passes/pipeline.h"
#include "passes/simplify_algebra.h"
#include "python/csrc/Exceptions.h"
#include "python/csrc/FusionPlanText.h"

namespace py = pybind11;

namespace kiln::python {

namespace {

/// The log hook of KILN_LOGS=passes: kiln._logging says whether the artifact
/// is on and owns the output (logger kiln.compile.passes), as for the other artifacts.
std::function<void(std::string_view, size_t, const ir::Graph&)> passes_logger() {
  py::module_ logging = py::module_::import("kiln._logging");
  if (!logging.attr("is_enabled")("passes").cast<bool>()) return nullptr;
  py::object log = logging.attr("log");
  return [log](std::string_view pass, size_t changes, const ir::Graph& g) {
    std::string text = ir::print(g);
    while (!text.empty() && text.back() == '\n') text.pop_back();
    log("passes", "after " + std::string(pass) + " (" + std::to_string(changes) + " changes):\n" + text);
  };
}

}  // namespace

void init_passes(PyObject* module) {
  py::module_ m = py::reinterpret_borrow<py::module_>(module);
  py::module_ passes = m.def_submodule("_passes", "kiln's graph passes (see passes/README.md)");
  passes.def(
      "run_pipeline",
      [](ir::Graph& g, std::optional<bool> verify) {
        passes::PipelineOptions options;
        if (verify) options.verify_after_each = *verify;
        options.log_after_each = passes_logger();
        return passes::run_pipeline(g, options);
      },
      py::arg("graph"), py::arg("verify") = py::none(),
      "Runs the passes in order on graph (in place); verify=True verifies after each (the default in debug "
      "builds). Returns the number of changes; KILN_LOGS=passes logs the graph after each pass.");
  passes.def("pipeline_passes", [] {
    std::vector<std::string> names;
    for (std::string_view n : passes::pipeline_passes()) names.emplace_back(n);
    return names;
  });
  passes.def("decompose_composites", &passes::decompose_composites, py::arg("graph"));
  passes.def("fold_constants", &passes::fold_constants, py::arg("graph"));
  passes.def(
      "simplify_algebra",
      [](ir::Graph& g) {
        std::map<std::string, size_t> fired;
        passes::simplify_algebra(g, &fired);
        return fired;
      },
      py::arg("graph"), "Applies the rewrite rules until none fires; returns {rule name: times fired}.");
  passes.def("eliminate_common_subexpressions", &passes::eliminate_common_subexpressions, py::arg("graph"));
  passes.def("eliminate_dead_code", &passes::eliminate_dead_code, py::arg("graph"));
  passes.def("rewrite_rules", [] {
    std::vector<std::tuple<std::string, std::string, std::string>> rules;
    for (const auto& r : passes::rewrite_rules()) rules.emplace_back(r.name, r.op, r.rewrite);
    return rules;
  }, "The rewrite rules of simplify_algebra as (name, operator, rewrite), in table order.");
  // The fusion passes return plans, not rewritten graphs: their text (python/csrc/FusionPlanText.h).
  passes.def("fuse_pointwise", &fuse_pointwise_plan, py::arg("graph"),
             "The pointwise fusion groups of graph (unchanged), one line per group.");
  passes.def("fuse_reductions", &fuse_reductions_plan, py::arg("graph"),
             "The row reduction groups, then the column groups of what they leave, one line per group.");
  passes.def("fuse_column_reductions", &fuse_column_reductions_plan, py::arg("graph"),
             "The column reduction groups of graph with no node taken by a row group, one line per group.");
  passes.def("group_multi_tensor", &group_multi_tensor_plan, py::arg("graph"),
             "The pointwise groups, then the sets run as one multi-tensor kernel step.");
  passes.def("reduction_dims", &reduction_dims_plan, py::arg("graph"),
             "literal_reduced_dims of each op node with a dim argument, one line per node.");
  passes.def("plan_passes", [] {
    return std::vector<std::string>{"fuse_pointwise", "fuse_reductions", "fuse_column_reductions",
                                    "group_multi_tensor", "reduction_dims"};
  }, "The passes above whose result is a plan (text) rather than a rewritten graph.");
  passes.def("decomposed_ops", [] {
    std::vector<std::string> ops;
    for (std::string_view op : passes::decomposed_ops()) ops.emplace_back(op);
    return ops;
  });
}

}  // namespace kiln::python
