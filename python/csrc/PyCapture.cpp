// kiln._C._capture: graph capture from Python. A Session records the ops a
// block runs into an ir Graph (kiln.compile's front end; see capture/README.md).
//
//   s = kiln._C._capture.Session()
//   s.add_input(x)                 # declared inputs first, in order
//   with s:
//       y = f(x)
//   s.mark_output(y)
//   g = s.take_graph()             # a kiln._C._ir.Graph; s.input_tensors feed it
#include "python/csrc/PyCapture.h"

#include <Python.h>
#include <frameobject.h>

#include <memory>
#include <string>
#include <tuple>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "capture/JointPartition.h"
#include "capture/SymbolicInts.h"
#include "eager/kernels/random/Generator.h"
#include "python/csrc/Exceptions.h"
#include "python/csrc/PyTensor.h"
#include "python/csrc/IValueConversion.h"
#include "python/csrc/PyIr.h"
#include "python/csrc/PySymbolicInt.h"

namespace py = pybind11;

namespace kiln::python {

namespace {

/// The directory of the kiln package ("" when unknown), to skip its frames.
const std::string& kiln_package_dir() {
  static const std::string dir = [] {
    PyObject* mod = PyImport_ImportModule("kiln");
    std::string d;
    if (mod != nullptr) {
      PyObject* file = PyObject_GetAttrString(mod, "__file__");
      if (file != nullptr && PyUnicode_Check(file)) {
        d = PyUnicode_AsUTF8(file);
        d = d.substr(0, d.rfind('/') + 1);
      }
      Py_XDECREF(file);
      Py_DECREF(mod);
    }
    PyErr_Clear();
    return d;
  }();
  return dir;
}

/// "file:line" of the innermost Python frame outside the kiln package.
std::string user_location() {
  const std::string& skip = kiln_package_dir();
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  Py_XINCREF(frame);
  std::string where;
  while (frame != nullptr) {
    PyCodeObject* code = PyFrame_GetCode(frame);
    const char* file = PyUnicode_AsUTF8(code->co_filename);
    const int line = PyFrame_GetLineNumber(frame);
    Py_DECREF(code);
    if (file != nullptr && (skip.empty() || std::string_view(file).substr(0, skip.size()) != skip)) {
      where = std::string(file) + ":" + std::to_string(line);
      Py_DECREF(frame);
      break;
    }
    PyFrameObject* back = PyFrame_GetBack(frame);
    Py_DECREF(frame);
    frame = back;
  }
  PyErr_Clear();
  return where;
}

/// A Session and, while inside `with`, the guard that makes it current.
struct PySession {
  capture::CaptureSession session;
  std::unique_ptr<capture::CaptureGuard> guard;
};

const Tensor& as_tensor(const py::handle& obj) { return tensor_from_object(obj.ptr(), "capture"); }

py::list wrap_tensors(const std::vector<Tensor>& ts) {
  py::list out;
  for (const Tensor& t : ts) out.append(py::reinterpret_steal<py::object>(wrap_tensor(t)));
  return out;
}

}  // namespace

void init_guard_set(PyObject* capture_module);  // PyGuardSet.cpp (kiln._C._capture.GuardSet)

void note_escape_slow(const char* what) { capture::note_escape(what, user_location()); }

void init_capture(PyObject* module) {
  py::module_ m = py::reinterpret_borrow<py::module_>(module);
  py::module_ cm = m.def_submodule("_capture", "graph capture into the ir (see capture/README.md)");
  py::class_<PySession>(cm, "Session")
      .def(py::init<>())
      .def("__enter__",
           [](PySession& s) -> PySession& {
             KILN_CHECK(!s.guard, "capture: this Session is already active");
             s.guard = std::make_unique<capture::CaptureGuard>(s.session);
             return s;
           },
           py::return_value_policy::reference)
      .def("__exit__", [](PySession& s, const py::args&) {
        s.guard.reset();
        return false;
      })
      .def("add_input", [](PySession& s, const py::handle& t) { s.session.add_input(as_tensor(t)); },
           py::arg("tensor"), "Declares the next graph input (before any op is recorded).")
      .def("mark_output", [](PySession& s, const py::handle& t) { s.session.mark_output(as_tensor(t)); },
           py::arg("tensor"), "Appends the tensor's value to the graph outputs.")
      .def("mark_broken", [](PySession& s, std::string reason) { s.session.mark_broken(std::move(reason)); },
           py::arg("reason"))
      .def("is_known", [](PySession& s, const py::handle& t) { return s.session.find(as_tensor(t)) != nullptr; },
           py::arg("tensor"), "Whether the tensor was seen (an input or a recorded op's result).")
      .def_property_readonly("graph", [](PySession& s) { return &s.session.graph(); },
                             py::return_value_policy::reference_internal)
      .def("take_graph", [](PySession& s) { return s.session.take_graph(); },
           "Hands the graph over as a kiln._C._ir.Graph and releases the recorded tensors.")
      .def("finish", [](PySession& s) { s.session.finish(); }, "Releases the recorded tensors (the graph stays).")
      .def_property_readonly("input_tensors", [](PySession& s) { return wrap_tensors(s.session.input_tensors()); })
      .def_property_readonly("num_declared_inputs", [](PySession& s) { return s.session.num_declared_inputs(); })
      .def_property_readonly("num_ops", [](PySession& s) { return s.session.num_ops(); })
      .def_property_readonly("broken", [](PySession& s) { return s.session.broken(); })
      .def_property_readonly("break_reason", [](PySession& s) { return s.session.break_reason(); })
      .def("add_late_input", [](PySession& s, const py::handle& t) { s.session.add_late_input(as_tensor(t)); },
           py::arg("tensor"), "Appends a graph input for a tensor made after ops ran (a joint capture's grad_outputs).")
      .def_property("functionalize_aliased_inputs",
                    [](PySession& s) { return s.session.functionalizes_aliased_inputs(); },
                    [](PySession& s, bool on) { s.session.set_functionalize_aliased_inputs(on); },
                    "Whether a declared input written in place while views of it are recorded is recorded "
                    "functionally (Note [Writing an aliased input])")
      .def("add_copy_back_outputs", [](PySession& s) { return s.session.add_copy_back_outputs(); },
           "Appends the new values of inputs written in place to the outputs; returns those inputs' indices.")
      .def_property_readonly("generator_input_index",
                             [](PySession& s) -> std::optional<size_t> {
                               if (!s.session.uses_generator()) return std::nullopt;
                               return s.session.generator_input_index();
                             })
      .def_property_readonly("generator_advance",
                             [](PySession& s) { return static_cast<int64_t>(s.session.generator_advance()); })
      .def_property_readonly("impure_reason", [](PySession& s) { return s.session.impure_reason(); })
      .def_property_readonly("num_nodes", [](PySession& s) { return s.session.graph().num_nodes(); })
      .def("set_input_symbols",
           [](PySession& s, size_t i, const std::vector<std::string>& names) { s.session.set_input_symbols(i, names); },
           py::arg("index"), py::arg("names"), "Names dimensions of declared input `index` as symbols ('' keeps one).")
      .def("symbolic_size", [](PySession& s, const py::handle& t, int64_t dim) {
             return s.session.symbolic_size(as_tensor(t), dim);
           }, py::arg("tensor"), py::arg("dim"), "Records capture::sym_size(t, dim); returns its handle.")
      .def("symbolic_arith",
           [](PySession& s, int64_t op, int64_t lhs, bool lhs_literal, int64_t rhs, bool rhs_literal) {
             return s.session.symbolic_arith(op, lhs, lhs_literal, rhs, rhs_literal);
           },
           py::arg("op"), py::arg("lhs"), py::arg("lhs_literal"), py::arg("rhs"), py::arg("rhs_literal"),
           "Records capture::sym_arith(lhs, rhs, op) (a side is a handle, or a literal); returns its handle.")
      .def("set_size_symbols",
           [](PySession& s, const std::vector<std::tuple<int64_t, size_t, int64_t>>& table) {
             std::vector<capture::CaptureSession::SizeSymbol> entries;
             for (const auto& [value, handle, factor] : table) entries.push_back({value, handle, factor});
             s.session.set_size_symbols(std::move(entries));
           },
           py::arg("table"),
           "(value, handle, factor) triples: literal size arguments of that value are recorded as the symbolic "
           "int times factor (Note [Symbolic sizes in the backward]); [] turns matching off.")
      .def_property_readonly("size_literals", [](PySession& s) { return s.session.size_literals(); },
                             "Literals (>= 2) size-taking arguments were recorded with, ascending.")
      .def_property_readonly("num_size_symbols_used",
                             [](PySession& s) { return s.session.num_size_symbols_used(); })
      .def("probe_graph", [](PySession& s, const std::vector<size_t>& handles) { return s.session.probe_graph(handles); },
           py::arg("handles"), "A copy of the graph so far, its outputs followed by the symbolic ints `handles`.");
  cm.def(
      "default_generator_state",
      [] {
        const Generator& g = default_cpu_generator();
        return py::make_tuple(static_cast<int64_t>(g->current_seed()), static_cast<int64_t>(g->offset()));
      },
      "(seed bits as an int64, offset) of the default CPU generator: a graph's %rng_seed and %rng_offset.");
  cm.def(
      "advance_default_generator",
      [](int64_t offset) { default_cpu_generator()->set_offset(static_cast<uint64_t>(offset)); },
      py::arg("offset"), "Sets the default CPU generator's offset (after a graph drew from it).");
  cm.def(
      "partition_joint",
      [](const ir::Graph& joint, size_t num_forward_nodes, size_t num_forward_inputs, size_t num_forward_outputs) {
        capture::JointPartition p =
            capture::partition_joint(joint, num_forward_nodes, num_forward_inputs, num_forward_outputs);
        py::object forward = py::cast(std::move(p.forward));
        py::object backward = py::cast(std::move(p.backward));
        return py::make_tuple(forward, backward, p.backward_inputs, p.num_saved);
      },
      py::arg("joint"), py::arg("num_forward_nodes"), py::arg("num_forward_inputs"), py::arg("num_forward_outputs"),
      "(forward graph, backward graph, joint indices of the backward's leading inputs, number of saved values): "
      "See Note [Partitioning the joint graph] (capture/JointPartition.h).");
  cm.def("is_capturing", [] { return capture::current_session() != nullptr; },
         "Whether a capture session is recording on this thread.");
  init_guard_set(cm.ptr());
  init_symbolic_int(cm.ptr());
  cm.def(
      "specialize_shapes",
      [](const ir::Graph& g, const py::sequence& inputs) {
        std::vector<IValue> values;
        for (size_t i = 0; i < g.inputs().size() && i < static_cast<size_t>(py::len(inputs)); ++i) {
          py::object item = inputs[i];
          values.push_back(ivalue_from_python(item.ptr(), argument_for(g.inputs()[i]->type(), i), "specialize_shapes"));
        }
        return capture::specialize_shapes(g, values);
      },
      py::arg("graph"), py::arg("inputs"),
      "A copy of a symbolic graph for these inputs' sizes: sizes folded to constants, every tensor retyped "
      "(capture/SymbolicInts.h).");
}

}  // namespace kiln::python
