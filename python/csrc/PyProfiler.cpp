// kiln._C._profiler: start and stop a profiling session, user ranges
// (record_function), and the recorded events as tuples for kiln.profiler.
// See Note [What the profiler records] (eager/core/ProfilerEvents.h).
#include <Python.h>

#include <map>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "eager/dispatch/ProfilerFallback.h"
#include "python/csrc/Exceptions.h"

namespace py = pybind11;

namespace kiln::python {

namespace {

py::list shapes_to_python(const std::vector<profiler::ArgumentShape>& shapes) {
  py::list out;
  for (const profiler::ArgumentShape& s : shapes) {
    switch (s.kind) {
      case profiler::ArgumentShape::Kind::Tensor:
        out.append(s.sizes.empty() ? py::list() : py::cast(s.sizes[0]));
        break;
      case profiler::ArgumentShape::Kind::TensorList:
        out.append(py::cast(s.sizes));
        break;
      default:
        out.append(py::list());
        break;
    }
  }
  return out;
}

/// (kind, name, category, start_ns, end_ns, thread, input_shapes, args,
///  (bytes, total_allocated, total_reserved, address, device_type)); kind 0
/// a range, 1 an instant, 2 an allocator event.
py::tuple event_to_python(const profiler::Event& e) {
  py::dict args;
  for (const auto& [k, v] : e.text_args) args[py::str(k)] = v;
  for (const auto& [k, v] : e.int_args) args[py::str(k)] = v;
  return py::make_tuple(static_cast<int>(e.kind), e.name, e.category, e.start_ns, e.end_ns, e.thread,
                        shapes_to_python(e.shapes), args,
                        py::make_tuple(e.bytes, e.total_allocated, e.total_reserved, e.address,
                                       static_cast<int>(e.device_type)));
}

}  // namespace

void init_profiler(PyObject* module) {
  py::module_ m = py::reinterpret_borrow<py::module_>(module);
  py::module_ p = m.def_submodule("_profiler", "kiln.profiler's recorder (eager/core/ProfilerEvents.h)");
  p.def(
      "start",
      [](bool record_shapes, bool profile_memory) {
        profiler::Options options;
        options.record_shapes = record_shapes;
        options.profile_memory = profile_memory;
        profiler::start_profiling(options);
      },
      py::arg("record_shapes") = false, py::arg("profile_memory") = false,
      "Starts recording on every thread; the Profiler dispatch key on for this one.");
  p.def(
      "stop",
      [] {
        std::vector<profiler::Event> events = profiler::stop_profiling();
        py::list out;
        for (const profiler::Event& e : events) out.append(event_to_python(e));
        return out;
      },
      "Stops recording; returns the events, by start time.");
  p.def("is_active", &profiler::is_active, "Whether a session is recording.");
  p.def("now_ns", &profiler::now_ns, "The profiler's clock (steady), in nanoseconds.");
  p.def(
      "begin_range",
      [](std::string name, const std::string& category) {
        const profiler::RangeHandle h = profiler::begin_range(std::move(name), category.c_str());
        return py::make_tuple(h.index, h.session);
      },
      py::arg("name"), py::arg("category") = "user_annotation",
      "Opens a range on this thread; returns its handle (index -1 when not recording).");
  p.def(
      "end_range",
      [](const py::tuple& handle) {
        profiler::end_range(profiler::RangeHandle{handle[0].cast<int64_t>(), handle[1].cast<uint64_t>()});
      },
      py::arg("handle"), "Closes a range begin_range opened.");
  p.def(
      "record_instant",
      [](std::string name, std::map<std::string, int64_t> args) {
        std::vector<std::pair<std::string, int64_t>> int_args(args.begin(), args.end());
        profiler::record_instant(std::move(name), "python_event", std::move(int_args));
      },
      py::arg("name"), py::arg("args") = std::map<std::string, int64_t>{},
      "A point in time (kiln.compile's cache hits and misses).");
}

}  // namespace kiln::python
