// The hit path of a cached kiln.compile call in C++ (issue 23: the overhead of
// a cached compiled call; Note [The cached-call fast path] in
// python/kiln/compiler/_compiled_function.py):
//
//   class CompiledFunction(kiln._C._capture.CachedCall): ...
//   compiled._set_fast_entries([kiln._C._capture.CacheEntry(spec), ...])
//   compiled(*args, **kwargs)   # tp_call: guards checked and the graph run here; a miss calls
//                               # compiled._miss(args, kwargs)
//
// CachedCall is the base type of CompiledFunction. Its tp_call takes a call
// made while no capture runs on this thread to the first CacheEntry whose
// guards hold (CallGuards.h: the positional and keyword arguments' guards,
// tuples, lists and dicts of tensors walked as the Python key walks them, then
// a module's), and runs that entry without returning to Python:
// - "graph": the entry's graph (a runtime CompiledGraph, or the ir
//   interpreter) on the call's tensors (in the guards' walk order) and the
//   lifted ones, the default
//   generator's seed/offset passed and advanced, inputs written in place
//   copied back (python/kiln/compiler/_replay.py's GraphProgram, the same
//   steps in the same order);
// - "joint": the same for a joint capture's forward graph with grad mode off,
//   then, when grad mode is on, one CompiledFunctionBackward node attached to
//   the differentiable outputs (attach_compiled_backward; its backward calls the
//   JointProgram's run_backward: python/kiln/compiler/_joint.py);
// - "training": a whole training step (TrainingStepProgram): its state read
//   as _training.StepState.tensors() reads it (a state that no longer fits
//   goes to _run_guarded, which raises StateChanged and recaptures), the graph
//   run with grad mode off, copy-backs, then `.grad` assigned or cleared;
// - "eager": the function itself (a graph break's guard set);
// - "python": the CompiledFunction's _run_guarded(guarded entry, the call's
//   tensors, args, kwargs) (a
//   training step, a symbolic graph's specialising runner: what the C++ path
//   does not replay itself; also a graph whose runner was replaced after the
//   capture, checked per call).
// Everything else (a capture running, no entry's guards holding) calls
// `_miss(args, kwargs)`: the Python guard key, recompiles, the recompile
// limit and logging, unchanged.
#include <Python.h>
#include <structmember.h>

#include <algorithm>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>

#include "eager/autograd/AutogradMeta.h"
#include "eager/autograd/Engine.h"
#include "eager/autograd/GradMode.h"
#include "eager/kernels/random/Generator.h"
#include "ir/Graph.h"
#include "ir/Interpreter.h"
#include "kiln/generated/Functions.h"
#include "python/csrc/CallGuards.h"
#include "python/csrc/Exceptions.h"
#include "python/csrc/IValueConversion.h"
#include "python/csrc/PyRuntime.h"
#include "python/csrc/PyTensor.h"

namespace py = pybind11;

namespace kiln::python {

namespace {

// ---------------------------------------------------------------------------
// Whether a capture runs on this thread: kiln/compiler/_state.py registers
// each thread's list of active sessions here when it makes it.
thread_local PyObject* t_session_stack = nullptr;

bool capturing() { return t_session_stack != nullptr && PyList_GET_SIZE(t_session_stack) > 0; }

PyObject* set_session_stack(PyObject*, PyObject* stack) {
  if (!PyList_Check(stack)) {
    PyErr_SetString(PyExc_TypeError, "_set_session_stack: expected this thread's list of capture sessions");
    return nullptr;
  }
  Py_INCREF(stack);
  Py_XSETREF(t_session_stack, stack);
  Py_RETURN_NONE;
}

PyObject* interned(const char* s) {
  PyObject* name = PyUnicode_InternFromString(s);
  if (name == nullptr) throw std::runtime_error("CachedCall: cannot intern a name");
  return name;
}

// ---------------------------------------------------------------------------
// kiln._C._capture.ModuleGuard(modules, state): a compiled module's guards (CallGuards.h).

struct PyModuleGuard {
  PyObject_HEAD
  ModuleGuards* data;
};

PyTypeObject PyModuleGuard_Type = {PyVarObject_HEAD_INIT(nullptr, 0)};

PyObject* module_guard_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* modules = nullptr;
  PyObject* state = nullptr;
  static const char* names[] = {"modules", "state", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!:ModuleGuard", const_cast<char**>(names), &PyList_Type,
                                   &modules, &PyTuple_Type, &state))
    return nullptr;
  std::unique_ptr<ModuleGuards> data = make_module_guards(modules, state);
  if (data == nullptr) return nullptr;
  PyObject* self = type->tp_alloc(type, 0);
  if (self == nullptr) return nullptr;
  reinterpret_cast<PyModuleGuard*>(self)->data = data.release();
  return self;
}

int module_guard_traverse(PyObject* self, visitproc visit, void* arg) {
  const ModuleGuards* g = reinterpret_cast<PyModuleGuard*>(self)->data;
  if (g == nullptr) return 0;
  // Every owned reference: the instance dicts above all, which hold the compiled call that holds this guard (a module
  // compiled in place is otherwise a cycle the collector cannot see, and never freed).
  for (PyObject* o : g->modules) Py_VISIT(o);
  for (PyTypeObject* t : g->types) Py_VISIT(reinterpret_cast<PyObject*>(t));
  for (PyObject* o : g->dicts) Py_VISIT(o);
  for (PyObject* o : g->training) Py_VISIT(o);
  for (const auto* lists : {&g->children, &g->parameters, &g->buffers, &g->child_names, &g->parameter_names,
                            &g->buffer_names})
    for (const std::vector<PyObject*>& v : *lists)
      for (PyObject* o : v) Py_VISIT(o);
  Py_VISIT(g->state);
  return 0;
}

void module_guard_dealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  delete reinterpret_cast<PyModuleGuard*>(self)->data;
  Py_TYPE(self)->tp_free(self);
}

PyObject* module_guard_check(PyObject* self, PyObject*) {
  const int ok = check_module_guards(*reinterpret_cast<PyModuleGuard*>(self)->data);
  if (ok < 0) return nullptr;
  if (ok) Py_RETURN_TRUE;
  Py_RETURN_FALSE;
}

PyMethodDef module_guard_methods[] = {
    {"check", module_guard_check, METH_NOARGS, "check() -> bool: whether the module's guards hold now."},
    {nullptr, nullptr, 0, nullptr}};

// ---------------------------------------------------------------------------
// kiln._C._capture.CacheEntry(spec): one cache entry as the hit path reads it.

enum class EntryKind { Eager, Python, Graph, Joint, Training };
constexpr int kNumKinds = 5;
const char* const kKindNames[kNumKinds] = {"eager", "python", "graph", "joint", "training"};

/// A whole training step's state, read per call as _training.StepState.tensors() reads it, and what the
/// step does with .grad after the run (TrainingStepProgram). The lists are the StepState's and the
/// program's own (owned references; never changed after the capture).
struct StepSpec {
  size_t num_prefix = 0;           // the call's tensors and the module's state; then the step's state
  PyObject* scalars = nullptr;     // list of optim._capturable.ScalarInputs: refresh() -> bool
  PyObject* leaves = nullptr;      // list: the held leaves
  PyObject* all_leaves = nullptr;  // list: every tracked leaf
  PyObject* grad_defined = nullptr;  // list of bool, per tracked leaf
  PyObject* state_slots = nullptr;   // list of (optimizer.state, parameter, keys)
  PyObject* scalar_tensors = nullptr;  // list: the hyperparameter tensors
  PyObject* assign = nullptr;      // list of (leaf, output index): .grad set from the output
  PyObject* clear = nullptr;       // list of leaves whose .grad the step leaves None

  ~StepSpec() {
    for (PyObject* o : {scalars, leaves, all_leaves, grad_defined, state_slots, scalar_tensors, assign, clear})
      Py_XDECREF(o);
  }
};

struct EntryData {
  EntryKind kind = EntryKind::Python;
  PyObject* guards = nullptr;        // a GuardSet (owned)
  const ArgGuards* arg_guards = nullptr;
  PyObject* module_guard = nullptr;  // a ModuleGuard (owned) or nullptr
  const ModuleGuards* module_guards = nullptr;
  PyObject* target = nullptr;        // eager: the function; python: the GuardedEntry; joint: the JointProgram
  PyObject* guarded = nullptr;       // the GuardedEntry (owned): _run_guarded's argument
  // graph and joint: the GraphProgram whose runner the entry was built for, and that runner (both owned).
  // A runner replaced after the capture (a test recording the graphs' runs) sends hits to _run_guarded.
  PyObject* runner_owner = nullptr;
  // Where runner_owner's class keeps `runner` (a __slots__ member), read directly while that class is
  // unmodified (its version tag): -1 reads the attribute.
  Py_ssize_t runner_offset = -1;
  unsigned int runner_owner_tag = 0;
  PyObject* runner = nullptr;
  // graph and joint: the (forward) graph's run, as GraphProgram does it
  PyObject* compiled_obj = nullptr;  // a _runtime.CompiledGraph (owned), or nullptr: the interpreter
  const runtime::CompiledGraph* compiled = nullptr;
  PyObject* graph_obj = nullptr;     // the _ir.Graph (owned; run by the interpreter when compiled is null)
  const ir::Graph* graph = nullptr;
  std::vector<PyObject*> lifted;     // owned: the module's parameters and buffers, then held tensors
  size_t num_outputs = 0;
  bool single_output = false;
  PyObject* out_spec = nullptr;      // owned
  PyObject* unflatten = nullptr;     // owned: unflatten(out_spec, outputs)
  int64_t generator_index = -1;
  int64_t generator_advance = 0;
  int64_t generator_end = -1;  // the output holding the generator's offset after a run (symbolic graphs), or -1
  std::vector<size_t> copy_back;
  // joint
  size_t num_saved = 0;
  std::vector<size_t> differentiable_outputs;
  std::vector<size_t> grad_positions;
  // training
  std::unique_ptr<StepSpec> step;

  ~EntryData() {
    Py_XDECREF(guards);
    Py_XDECREF(module_guard);
    Py_XDECREF(target);
    Py_XDECREF(guarded);
    Py_XDECREF(runner_owner);
    Py_XDECREF(runner);
    Py_XDECREF(compiled_obj);
    Py_XDECREF(graph_obj);
    for (PyObject* t : lifted) Py_XDECREF(t);
    Py_XDECREF(out_spec);
    Py_XDECREF(unflatten);
  }
};

struct PyCacheEntry {
  PyObject_HEAD
  EntryData* data;
};

PyTypeObject PyCacheEntry_Type = {PyVarObject_HEAD_INIT(nullptr, 0)};

/// A new reference to spec.<name>, or nullptr with AttributeError set.
PyObject* spec_attr(PyObject* spec, const char* name) { return PyObject_GetAttrString(spec, name); }

bool read_sizes(PyObject* spec, const char* name, std::vector<size_t>& out) {
  PyObject* seq = spec_attr(spec, name);
  if (seq == nullptr) return false;
  PyObject* fast = PySequence_Fast(seq, "CacheEntry: expected a sequence of ints");
  Py_DECREF(seq);
  if (fast == nullptr) return false;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast); ++i) {
    const Py_ssize_t v = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(fast, i));
    if (v < 0) {
      Py_DECREF(fast);
      if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "CacheEntry: %s holds a negative index", name);
      return false;
    }
    out.push_back(static_cast<size_t>(v));
  }
  Py_DECREF(fast);
  return true;
}

/// Fills the graph and joint fields of `d` from `spec` (see _compiled_function.py's fast_entry_spec).
bool read_graph_spec(PyObject* spec, EntryData& d) {
  d.runner_owner = spec_attr(spec, "runner_owner");
  if (d.runner_owner == nullptr) return false;
  {
    PyTypeObject* owner_type = Py_TYPE(d.runner_owner);
    PyObject* name = PyUnicode_InternFromString("runner");
    if (name == nullptr) return false;
    PyObject* descr = _PyType_Lookup(owner_type, name);  // borrowed; gives the class a version tag
    Py_DECREF(name);
    if (descr != nullptr && Py_IS_TYPE(descr, &PyMemberDescr_Type) &&
        (owner_type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) != 0 && owner_type->tp_version_tag != 0) {
      const PyMemberDef* member = reinterpret_cast<PyMemberDescrObject*>(descr)->d_member;
      if (member->type == T_OBJECT_EX && (member->flags & READONLY) == 0) {
        d.runner_offset = member->offset;
        d.runner_owner_tag = owner_type->tp_version_tag;
      }
    }
  }
  d.runner = spec_attr(spec, "runner");
  if (d.runner == nullptr) return false;
  d.compiled_obj = spec_attr(spec, "compiled");
  if (d.compiled_obj == nullptr) return false;
  if (d.compiled_obj == Py_None) {
    Py_CLEAR(d.compiled_obj);
  } else {
    try {
      d.compiled = py::handle(d.compiled_obj).cast<PyCompiledGraph&>().compiled.get();
    } catch (const py::cast_error&) {
      PyErr_SetString(PyExc_TypeError, "CacheEntry: spec.compiled is not a _runtime.CompiledGraph");
      return false;
    }
  }
  d.graph_obj = spec_attr(spec, "graph");
  if (d.graph_obj == nullptr) return false;
  try {
    d.graph = &py::handle(d.graph_obj).cast<const ir::Graph&>();
  } catch (const py::cast_error&) {
    PyErr_SetString(PyExc_TypeError, "CacheEntry: spec.graph is not an _ir.Graph");
    return false;
  }
  PyObject* lifted = spec_attr(spec, "lifted");
  if (lifted == nullptr) return false;
  PyObject* fast = PySequence_Fast(lifted, "CacheEntry: spec.lifted must be a sequence of tensors");
  Py_DECREF(lifted);
  if (fast == nullptr) return false;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast); ++i) {
    PyObject* t = PySequence_Fast_GET_ITEM(fast, i);
    if (!is_tensor(t)) {
      Py_DECREF(fast);
      PyErr_SetString(PyExc_TypeError, "CacheEntry: spec.lifted must hold tensors only");
      return false;
    }
    Py_INCREF(t);
    d.lifted.push_back(t);
  }
  Py_DECREF(fast);
  auto read_int = [&](const char* name, int64_t& out, int64_t if_none) {
    PyObject* v = spec_attr(spec, name);
    if (v == nullptr) return false;
    out = v == Py_None ? if_none : PyLong_AsLongLong(v);
    Py_DECREF(v);
    return !PyErr_Occurred();
  };
  int64_t n = 0;
  if (!read_int("num_outputs", n, 0)) return false;
  d.num_outputs = static_cast<size_t>(n);
  if (!read_int("generator_index", d.generator_index, -1)) return false;
  if (!read_int("generator_advance", d.generator_advance, 0)) return false;
  if (!read_int("generator_end", d.generator_end, -1)) return false;
  if (!read_sizes(spec, "copy_back", d.copy_back)) return false;
  PyObject* single = spec_attr(spec, "single_output");
  if (single == nullptr) return false;
  d.single_output = PyObject_IsTrue(single) == 1;
  Py_DECREF(single);
  d.out_spec = spec_attr(spec, "out_spec");
  if (d.out_spec == nullptr) return false;
  d.unflatten = spec_attr(spec, "unflatten");
  if (d.unflatten == nullptr) return false;
  if (d.kind == EntryKind::Training) {
    d.step = std::make_unique<StepSpec>();
    int64_t prefix = 0;
    if (!read_int("step_prefix", prefix, 0)) return false;
    d.step->num_prefix = static_cast<size_t>(prefix);
    for (auto [name, field] : {std::pair{"step_scalars", &d.step->scalars}, std::pair{"step_leaves", &d.step->leaves},
                               std::pair{"step_all_leaves", &d.step->all_leaves},
                               std::pair{"step_grad_defined", &d.step->grad_defined},
                               std::pair{"step_state_slots", &d.step->state_slots},
                               std::pair{"step_scalar_tensors", &d.step->scalar_tensors},
                               std::pair{"step_assign", &d.step->assign}, std::pair{"step_clear", &d.step->clear}}) {
      *field = spec_attr(spec, name);
      if (*field == nullptr) return false;
      if (!PyList_Check(*field)) {
        PyErr_Format(PyExc_TypeError, "CacheEntry: spec.%s must be a list", name);
        return false;
      }
    }
  }
  if (d.kind == EntryKind::Joint) {
    int64_t saved = 0;
    if (!read_int("num_saved", saved, 0)) return false;
    d.num_saved = static_cast<size_t>(saved);
    if (!read_sizes(spec, "differentiable_outputs", d.differentiable_outputs)) return false;
    if (!read_sizes(spec, "grad_positions", d.grad_positions)) return false;
  }
  return true;
}

PyObject* cache_entry_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* spec = nullptr;
  static const char* names[] = {"spec", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:CacheEntry", const_cast<char**>(names), &spec)) return nullptr;
  auto d = std::make_unique<EntryData>();
  PyObject* kind = spec_attr(spec, "kind");
  if (kind == nullptr) return nullptr;
  const char* kind_name = PyUnicode_Check(kind) ? PyUnicode_AsUTF8(kind) : nullptr;
  int k = 0;
  while (k < kNumKinds && (kind_name == nullptr || std::string(kind_name) != kKindNames[k])) ++k;
  Py_DECREF(kind);
  if (k == kNumKinds) {
    PyErr_SetString(PyExc_ValueError, "CacheEntry: spec.kind must be 'eager', 'python', 'graph', 'joint' or 'training'");
    return nullptr;
  }
  d->kind = static_cast<EntryKind>(k);
  d->guards = spec_attr(spec, "guards");
  if (d->guards == nullptr) return nullptr;
  d->arg_guards = guard_set_data(d->guards);
  if (d->arg_guards == nullptr) {
    PyErr_SetString(PyExc_TypeError, "CacheEntry: spec.guards must be a GuardSet");
    return nullptr;
  }
  d->module_guard = spec_attr(spec, "module_guard");
  if (d->module_guard == nullptr) return nullptr;
  if (d->module_guard == Py_None) {
    Py_CLEAR(d->module_guard);
  } else if (PyObject_TypeCheck(d->module_guard, &PyModuleGuard_Type)) {
    d->module_guards = reinterpret_cast<PyModuleGuard*>(d->module_guard)->data;
  } else {
    PyErr_SetString(PyExc_TypeError, "CacheEntry: spec.module_guard must be a ModuleGuard or None");
    return nullptr;
  }
  d->target = spec_attr(spec, "target");
  if (d->target == nullptr) return nullptr;
  d->guarded = spec_attr(spec, "guarded");
  if (d->guarded == nullptr) return nullptr;
  if ((d->kind == EntryKind::Graph || d->kind == EntryKind::Joint || d->kind == EntryKind::Training) &&
      !read_graph_spec(spec, *d))
    return nullptr;
  PyObject* self = type->tp_alloc(type, 0);
  if (self == nullptr) return nullptr;
  reinterpret_cast<PyCacheEntry*>(self)->data = d.release();
  return self;
}

int cache_entry_traverse(PyObject* self, visitproc visit, void* arg) {
  EntryData* d = reinterpret_cast<PyCacheEntry*>(self)->data;
  if (d == nullptr) return 0;
  Py_VISIT(d->guards);
  Py_VISIT(d->module_guard);
  Py_VISIT(d->target);
  Py_VISIT(d->guarded);
  Py_VISIT(d->runner_owner);
  Py_VISIT(d->runner);
  Py_VISIT(d->compiled_obj);
  Py_VISIT(d->graph_obj);
  Py_VISIT(d->out_spec);
  Py_VISIT(d->unflatten);
  for (PyObject* t : d->lifted) Py_VISIT(t);
  if (d->step) {
    const StepSpec& st = *d->step;
    for (PyObject* o : {st.scalars, st.leaves, st.all_leaves, st.grad_defined, st.state_slots, st.scalar_tensors,
                        st.assign, st.clear})
      Py_VISIT(o);
  }
  return 0;
}

int cache_entry_clear(PyObject* self) {
  auto* e = reinterpret_cast<PyCacheEntry*>(self);
  EntryData* d = e->data;
  e->data = nullptr;
  delete d;  // a cleared entry is never checked again: CachedCall drops its entries first
  return 0;
}

void cache_entry_dealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  cache_entry_clear(self);
  Py_TYPE(self)->tp_free(self);
}

PyObject* cache_entry_kind(PyObject* self, void*) {
  EntryData* d = reinterpret_cast<PyCacheEntry*>(self)->data;
  if (d == nullptr) Py_RETURN_NONE;
  return PyUnicode_FromString(kKindNames[static_cast<int>(d->kind)]);
}

PyGetSetDef cache_entry_getset[] = {
    {"kind", cache_entry_kind, nullptr, "how a hit runs: 'eager', 'python', 'graph' or 'joint'", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

// ---------------------------------------------------------------------------
// CompiledFunctionBackward: the node a joint entry's outputs get (python/kiln/compiler/_joint.py,
// Note [Joint capture]). Its backward calls program.run_backward(forward values, saved, grads).

class CompiledFunctionBackward final : public autograd::Node {
 public:
  CompiledFunctionBackward(PyObject* program, std::vector<IValue> forward_values, std::vector<IValue> saved,
                           std::vector<size_t> grad_positions, std::vector<std::pair<DimVector, DType>> output_meta)
      : program_(program),
        forward_values_(std::move(forward_values)),
        saved_(std::move(saved)),
        grad_positions_(std::move(grad_positions)),
        output_meta_(std::move(output_meta)) {
    Py_INCREF(program_);
  }

  ~CompiledFunctionBackward() override {
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      forward_values_.clear();
      saved_.clear();
      Py_CLEAR(program_);
    }
  }

  autograd::variable_list apply(autograd::variable_list&& grads) override {
    KILN_CHECK(!released_,
               "Trying to backward through the graph a second time (or directly access saved tensors after they have "
               "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
               "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time "
               "or if you need to access saved tensors after calling backward.");
    KILN_CHECK(!autograd::GradMode::is_enabled(),
               "kiln.compile: double backward (create_graph=True) through a compiled function is not supported yet: "
               "its backward graph does not record history");
    py::gil_scoped_acquire gil;
    py::list values(forward_values_.size());
    for (size_t i = 0; i < forward_values_.size(); ++i)
      values[i] = py::reinterpret_steal<py::object>(ivalue_to_python(forward_values_[i]));
    py::list saved(saved_.size());
    for (size_t i = 0; i < saved_.size(); ++i)
      saved[i] = py::reinterpret_steal<py::object>(ivalue_to_python(saved_[i]));
    py::list grad_list(grads.size());
    for (size_t i = 0; i < grads.size(); ++i) {
      Tensor g = grads[i];
      if (!g.defined() && i < output_meta_.size())
        g = kiln::zeros(output_meta_[i].first, output_meta_[i].second);
      grad_list[i] = py::reinterpret_steal<py::object>(wrap_tensor(std::move(g)));
    }
    py::object computed =
        py::reinterpret_borrow<py::object>(program_).attr("run_backward")(values, saved, grad_list);
    autograd::variable_list out(num_outputs());
    size_t k = 0;
    for (py::handle g : computed) {
      KILN_CHECK(k < grad_positions_.size(), "CompiledFunctionBackward: the backward graph returned too many gradients");
      const size_t position = grad_positions_[k++];
      if (position < out.size() && !g.is_none() && next_edge(position).is_valid())
        out[position] = tensor_from_object(g.ptr(), "gradient of a compiled function");
    }
    return out;
  }

  [[nodiscard]] std::string name() const override { return "CompiledFunctionBackward"; }

  void release_variables() override {
    py::gil_scoped_acquire gil;
    forward_values_.clear();
    saved_.clear();
    released_ = true;
  }

 private:
  PyObject* program_;
  std::vector<IValue> forward_values_;
  std::vector<IValue> saved_;
  std::vector<size_t> grad_positions_;
  std::vector<std::pair<DimVector, DType>> output_meta_;  // per differentiable output: a missing gradient's zeros
  bool released_ = false;
};

/// Attaches one CompiledFunctionBackward to `results`' differentiable outputs, with an edge to each of
/// `inputs` (the forward's tensor inputs, in order).
void attach_backward(PyObject* program, std::vector<IValue> forward_values, std::vector<IValue> saved,
                     const std::vector<Tensor>& inputs, const std::vector<Tensor>& results,
                     const std::vector<size_t>& differentiable_outputs, const std::vector<size_t>& grad_positions) {
  std::vector<std::pair<DimVector, DType>> meta;
  meta.reserve(differentiable_outputs.size());
  for (size_t k : differentiable_outputs) meta.emplace_back(DimVector(results.at(k).sizes()), results.at(k).dtype());
  auto node = std::make_shared<CompiledFunctionBackward>(program, std::move(forward_values), std::move(saved),
                                                         grad_positions, std::move(meta));
  std::vector<autograd::Edge> edges;
  edges.reserve(inputs.size());
  for (const Tensor& t : inputs) edges.push_back(autograd::gradient_edge(t));
  node->set_next_edges(std::move(edges));
  autograd::record_forward_trace(*node);
  std::shared_ptr<autograd::Node> as_node = node;
  for (size_t i = 0; i < differentiable_outputs.size(); ++i) {
    const Tensor& o = results.at(differentiable_outputs[i]);
    bool seen = false;
    for (size_t j = 0; j < i && !seen; ++j) seen = results.at(differentiable_outputs[j]).impl() == o.impl();
    if (!seen) autograd::set_history(o, as_node);
  }
}

std::vector<size_t> size_list(PyObject* obj) {
  std::vector<size_t> out;
  py::sequence seq = py::reinterpret_borrow<py::sequence>(obj);
  for (py::handle h : seq) out.push_back(h.cast<size_t>());
  return out;
}

/// _C._capture.attach_compiled_backward(program, values, saved, inputs, results): the Python path's
/// JointProgram._attach (program.differentiable_outputs, program.grad_positions read from it).
PyObject* attach_compiled_backward(PyObject*, PyObject* args) {
  PyObject *program, *values, *saved, *inputs, *results;
  if (!PyArg_ParseTuple(args, "OOOOO:attach_compiled_backward", &program, &values, &saved, &inputs, &results))
    return nullptr;
  KILN_PY_BEGIN
  auto ivalues = [](PyObject* seq) {
    std::vector<IValue> out;
    for (py::handle h : py::reinterpret_borrow<py::sequence>(seq)) {
      if (is_tensor(h.ptr()))
        out.emplace_back(unwrap_tensor(h.ptr()));
      else
        out.emplace_back(h.cast<int64_t>());  // a generator's seed or offset
    }
    return out;
  };
  auto tensors = [](PyObject* seq) {
    std::vector<Tensor> out;
    for (py::handle h : py::reinterpret_borrow<py::sequence>(seq)) out.push_back(tensor_from_object(h.ptr(), "tensor"));
    return out;
  };
  py::object p = py::reinterpret_borrow<py::object>(program);
  attach_backward(program, ivalues(values), ivalues(saved), tensors(inputs), tensors(results),
                  size_list(p.attr("differentiable_outputs").ptr()), size_list(p.attr("grad_positions").ptr()));
  Py_RETURN_NONE;
  KILN_PY_END(nullptr)
}

// ---------------------------------------------------------------------------
// The hit path.

PyObject* refresh_name() {
  static PyObject* name = interned("refresh");
  return name;
}
PyObject* grad_name() {
  static PyObject* name = interned("grad");
  return name;
}

/// Appends this call's training-step state tensors to `out` (StepState.tensors()): 1, or 0 when the state
/// no longer fits the capture (the Python path then raises StateChanged and recaptures), -1 on an error.
int read_step_state(const StepSpec& st, std::vector<IValue>& out) {
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(st.scalars); ++i) {
    PyObject* ok = PyObject_CallMethodNoArgs(PyList_GET_ITEM(st.scalars, i), refresh_name());
    if (ok == nullptr) return -1;
    const int fits = PyObject_IsTrue(ok);
    Py_DECREF(ok);
    if (fits != 1) return fits;
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(st.leaves); ++i) out.emplace_back(unwrap_tensor(PyList_GET_ITEM(st.leaves, i)));
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(st.all_leaves); ++i) {
    PyObject* g = PyObject_GetAttr(PyList_GET_ITEM(st.all_leaves, i), grad_name());
    if (g == nullptr) return -1;
    const bool defined = PyList_GET_ITEM(st.grad_defined, i) == Py_True;
    const bool has = g != Py_None;
    if (defined && has && is_tensor(g)) out.emplace_back(unwrap_tensor(g));
    Py_DECREF(g);
    if (defined != has) return 0;
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(st.state_slots); ++i) {
    PyObject* slot = PyList_GET_ITEM(st.state_slots, i);  // (optimizer.state, parameter, keys)
    if (!PyTuple_Check(slot) || PyTuple_GET_SIZE(slot) != 3 || !PyDict_Check(PyTuple_GET_ITEM(slot, 0))) return 0;
    PyObject* entry = PyDict_GetItemWithError(PyTuple_GET_ITEM(slot, 0), PyTuple_GET_ITEM(slot, 1));  // borrowed
    if (entry == nullptr) return PyErr_Occurred() ? -1 : 0;
    PyObject* keys = PyTuple_GET_ITEM(slot, 2);
    if (!PyTuple_Check(keys) || !PyDict_Check(entry)) return 0;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(keys); ++k) {
      PyObject* t = PyDict_GetItemWithError(entry, PyTuple_GET_ITEM(keys, k));  // borrowed
      if (t == nullptr) return PyErr_Occurred() ? -1 : 0;
      if (!is_tensor(t)) return 0;
      out.emplace_back(unwrap_tensor(t));
    }
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(st.scalar_tensors); ++i)
    out.emplace_back(unwrap_tensor(PyList_GET_ITEM(st.scalar_tensors, i)));
  return 1;
}

/// TrainingStepProgram's .grad effects after the run: assigned from outputs, or cleared. 0, or -1 on an error.
int apply_grad_effects(const StepSpec& st, const std::vector<IValue>& outputs) {
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(st.assign); ++i) {
    PyObject* pair = PyList_GET_ITEM(st.assign, i);  // (leaf, output index)
    const Py_ssize_t k = PyLong_AsSsize_t(PyTuple_GET_ITEM(pair, 1));
    if (k < 0 || static_cast<size_t>(k) >= outputs.size()) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_IndexError, "training step: a .grad output index is out of range");
      return -1;
    }
    PyObject* g = ivalue_to_python(outputs[static_cast<size_t>(k)]);
    if (g == nullptr) return -1;
    const int rc = PyObject_SetAttr(PyTuple_GET_ITEM(pair, 0), grad_name(), g);
    Py_DECREF(g);
    if (rc < 0) return -1;
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(st.clear); ++i)
    if (PyObject_SetAttr(PyList_GET_ITEM(st.clear, i), grad_name(), Py_None) < 0) return -1;
  return 0;
}

/// The graph's outputs for the call's `tensors` (GraphProgram.run_with_values' steps); for a joint entry
/// with grad mode on, the backward node attached; for a training step, its state read first and its
/// .grad effects after. A new reference to the function's result; nullptr with no Python error set when
/// a training step's state no longer fits (nothing has run: the caller takes the Python path).
PyObject* run_graph_entry(const EntryData& e, const CallTensors& tensors) {
  std::vector<IValue> values;  // a compiled graph's run takes this vector over as its value slots
  values.reserve(std::max(tensors.size() + e.lifted.size() + 2, e.compiled != nullptr ? e.compiled->num_slots() : 0));
  for (PyObject* t : tensors) values.emplace_back(unwrap_tensor(t));
  for (PyObject* t : e.lifted) values.emplace_back(unwrap_tensor(t));
  if (e.step) {  // the step's state goes after the call's tensors and the module's state
    std::vector<IValue> state;
    const int fits = read_step_state(*e.step, state);
    if (fits <= 0) return nullptr;
    values.insert(values.begin() + static_cast<std::ptrdiff_t>(std::min(e.step->num_prefix, values.size())),
                  std::make_move_iterator(state.begin()), std::make_move_iterator(state.end()));
  }
  const bool joint = e.kind == EntryKind::Joint;
  const bool grad_was_enabled = autograd::GradMode::is_enabled();
  // The tensor inputs: a joint node's edges, the targets of the copy-backs.
  std::vector<Tensor> inputs;
  if ((joint && grad_was_enabled) || !e.copy_back.empty()) {
    inputs.reserve(values.size());
    for (const IValue& v : values) inputs.push_back(v.to_tensor());
  }
  int64_t offset = 0;
  if (e.generator_index >= 0) {
    const Generator& gen = default_cpu_generator();
    offset = static_cast<int64_t>(gen->offset());
    values.insert(values.begin() + e.generator_index,
                  {IValue(static_cast<int64_t>(gen->current_seed())), IValue(offset)});
  }
  std::vector<IValue> forward_values;
  if (joint && grad_was_enabled) forward_values = values;
  std::vector<IValue> outputs;
  {
    std::optional<autograd::AutoGradMode> no_grad;
    if (joint || e.step) no_grad.emplace(false);
    if (e.compiled != nullptr && e.compiled->runs_briefly()) {
      // A few CPU kernels on a few elements: releasing the GIL and taking it back (~650 instructions)
      // would cost more than the run; the eager ops the function would run keep it too.
      outputs = e.compiled->run(std::move(values));
    } else {
      PyThreadState* released = PyEval_SaveThread();
      try {
        outputs = e.compiled != nullptr ? e.compiled->run(std::move(values)) : ir::interpret(*e.graph, std::move(values));
      } catch (...) {
        PyEval_RestoreThread(released);
        throw;
      }
      PyEval_RestoreThread(released);
    }
    if (e.generator_index >= 0) {
      // A symbolic graph's draws depend on its sizes: it returns where the generator ends (Note [Random ops
      // under capture]); a graph of fixed sizes advances it by what its capture drew.
      const int64_t end = e.generator_end >= 0 ? outputs.at(static_cast<size_t>(e.generator_end)).to_int()
                                               : offset + e.generator_advance;
      default_cpu_generator()->set_offset(static_cast<uint64_t>(end));
    }
    for (size_t k = 0; k < e.copy_back.size(); ++k) {
      const Tensor& target = inputs.at(e.copy_back[k]);
      const Tensor& value = outputs.at(e.num_outputs + k).to_tensor();
      if (value.impl() != target.impl()) (void)target.copy_(value);  // a compiled graph may have stored it already
    }
  }
  if (joint && grad_was_enabled) {
    std::vector<Tensor> results;
    results.reserve(e.num_outputs);
    for (size_t k = 0; k < e.num_outputs; ++k) results.push_back(outputs[k].to_tensor());
    std::vector<IValue> saved(outputs.end() - static_cast<std::ptrdiff_t>(e.num_saved), outputs.end());
    attach_backward(e.target, std::move(forward_values), std::move(saved), inputs, results, e.differentiable_outputs,
                    e.grad_positions);
  }
  if (e.step && apply_grad_effects(*e.step, outputs) < 0) return nullptr;
  if (e.single_output) return ivalue_to_python(outputs[0]);
  PyObject* flat = PyList_New(static_cast<Py_ssize_t>(e.num_outputs));
  if (flat == nullptr) return nullptr;
  for (size_t k = 0; k < e.num_outputs; ++k) {
    PyObject* o = ivalue_to_python(outputs[k]);
    if (o == nullptr) {
      Py_DECREF(flat);
      return nullptr;
    }
    PyList_SET_ITEM(flat, static_cast<Py_ssize_t>(k), o);
  }
  PyObject* result = PyObject_CallFunctionObjArgs(e.unflatten, e.out_spec, flat, nullptr);
  Py_DECREF(flat);
  return result;
}

struct PyCachedCall {
  PyObject_HEAD
  PyObject* entries;  // a list of CacheEntry, in the order the hit path tries them
  int64_t hits[kNumKinds];
};

PyTypeObject PyCachedCall_Type = {PyVarObject_HEAD_INIT(nullptr, 0)};

PyObject* cached_call_new(PyTypeObject* type, PyObject*, PyObject*) {
  PyObject* self = type->tp_alloc(type, 0);
  if (self == nullptr) return nullptr;
  auto* c = reinterpret_cast<PyCachedCall*>(self);
  c->entries = PyList_New(0);
  if (c->entries == nullptr) {
    Py_DECREF(self);
    return nullptr;
  }
  for (int64_t& h : c->hits) h = 0;
  return self;
}

int cached_call_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(reinterpret_cast<PyCachedCall*>(self)->entries);
  return 0;
}

int cached_call_clear(PyObject* self) {
  Py_CLEAR(reinterpret_cast<PyCachedCall*>(self)->entries);
  return 0;
}

void cached_call_dealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  cached_call_clear(self);
  Py_TYPE(self)->tp_free(self);
}

PyObject* miss_name() {
  static PyObject* name = interned("_miss");
  return name;
}
PyObject* run_guarded_name() {
  static PyObject* name = interned("_run_guarded");
  return name;
}
PyObject* runner_name() {
  static PyObject* name = interned("runner");
  return name;
}

/// 1 when the entry's graph program still has the runner the entry was built for, 0 if not, -1 on error.
int same_runner(const EntryData& e) {
  PyTypeObject* owner_type = Py_TYPE(e.runner_owner);
  if (e.runner_offset >= 0 && (owner_type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) != 0 &&
      owner_type->tp_version_tag == e.runner_owner_tag) {  // the slot itself: no attribute lookup
    return *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(e.runner_owner) + e.runner_offset) == e.runner ? 1 : 0;
  }
  PyObject* runner = PyObject_GetAttr(e.runner_owner, runner_name());
  if (runner == nullptr) return -1;
  const int same = runner == e.runner ? 1 : 0;
  Py_DECREF(runner);
  return same;
}

/// A new list of the call's tensors (for _run_guarded), or nullptr with a Python error set.
PyObject* tensor_list(const CallTensors& tensors) {
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(tensors.size()));
  if (list == nullptr) return nullptr;
  for (size_t i = 0; i < tensors.size(); ++i) {
    Py_INCREF(tensors[i]);
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), tensors[i]);
  }
  return list;
}

/// self._run_guarded(guarded, tensors, args, kwargs).
PyObject* run_guarded(PyObject* self, const EntryData& e, const CallTensors& tensors, PyObject* args,
                      PyObject* kwargs) {
  PyObject* list = tensor_list(tensors);
  if (list == nullptr) return nullptr;
  PyObject* result = PyObject_CallMethodObjArgs(self, run_guarded_name(), e.guarded, list, args,
                                                kwargs != nullptr ? kwargs : Py_None, nullptr);
  Py_DECREF(list);
  return result;
}

PyObject* cached_call_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  auto* c = reinterpret_cast<PyCachedCall*>(self);
  if (!capturing() && c->entries != nullptr) {
    const Py_ssize_t n = PyList_GET_SIZE(c->entries);
    CallTensors tensors;
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* entry_obj = PyList_GET_ITEM(c->entries, i);
      const EntryData* e = reinterpret_cast<PyCacheEntry*>(entry_obj)->data;
      if (e == nullptr) continue;
      int ok = check_arg_guards(*e->arg_guards, args, kwargs, &tensors);
      if (ok == 1 && e->module_guards != nullptr) ok = check_module_guards(*e->module_guards);
      if (ok < 0) return nullptr;
      if (ok == 0) continue;
      ++c->hits[static_cast<int>(e->kind)];
      Py_INCREF(entry_obj);  // the function may drop its entries (a reset, a state change) while this one runs
      PyObject* result = nullptr;
      switch (e->kind) {
        case EntryKind::Eager:
          result = PyObject_Call(e->target, args, kwargs);
          break;
        case EntryKind::Python:
          result = run_guarded(self, *e, tensors, args, kwargs);
          break;
        case EntryKind::Graph:
        case EntryKind::Joint:
        case EntryKind::Training: {
          const int same = same_runner(*e);
          if (same < 0) break;
          if (same == 0) {
            result = run_guarded(self, *e, tensors, args, kwargs);
            break;
          }
          try {
            result = run_graph_entry(*e, tensors);
          } catch (...) {
            set_python_error_from_current_exception();
            result = nullptr;
          }
          if (result == nullptr && !PyErr_Occurred())  // a training step's state changed: Python raises it
            result = run_guarded(self, *e, tensors, args, kwargs);
          break;
        }
      }
      Py_DECREF(entry_obj);
      return result;
    }
  }
  PyObject* kw = kwargs != nullptr ? kwargs : PyDict_New();
  if (kw == nullptr) return nullptr;
  PyObject* result = PyObject_CallMethodObjArgs(self, miss_name(), args, kw, nullptr);
  if (kwargs == nullptr) Py_DECREF(kw);
  return result;
}

PyObject* cached_call_set_entries(PyObject* self, PyObject* entries) {
  if (!PyList_Check(entries)) {
    PyErr_SetString(PyExc_TypeError, "_set_fast_entries: expected a list of CacheEntry");
    return nullptr;
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(entries); ++i) {
    if (!PyObject_TypeCheck(PyList_GET_ITEM(entries, i), &PyCacheEntry_Type)) {
      PyErr_SetString(PyExc_TypeError, "_set_fast_entries: expected a list of CacheEntry");
      return nullptr;
    }
  }
  PyObject* copy = PyList_GetSlice(entries, 0, PyList_GET_SIZE(entries));
  if (copy == nullptr) return nullptr;
  Py_XSETREF(reinterpret_cast<PyCachedCall*>(self)->entries, copy);
  Py_RETURN_NONE;
}

PyObject* cached_call_counts(PyObject* self, void*) {
  auto* c = reinterpret_cast<PyCachedCall*>(self);
  PyObject* d = PyDict_New();
  if (d == nullptr) return nullptr;
  for (int k = 0; k < kNumKinds; ++k) {
    PyObject* v = PyLong_FromLongLong(c->hits[k]);
    if (v == nullptr || PyDict_SetItemString(d, kKindNames[k], v) < 0) {
      Py_XDECREF(v);
      Py_DECREF(d);
      return nullptr;
    }
    Py_DECREF(v);
  }
  return d;
}

PyObject* cached_call_fast_entries(PyObject* self, void*) {
  auto* c = reinterpret_cast<PyCachedCall*>(self);
  if (c->entries == nullptr) return PyList_New(0);
  return PyList_GetSlice(c->entries, 0, PyList_GET_SIZE(c->entries));
}

PyMethodDef cached_call_methods[] = {
    {"_set_fast_entries", cached_call_set_entries, METH_O,
     "_set_fast_entries(entries): the CacheEntry list the C++ hit path tries, in order."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef cached_call_getset[] = {
    {"_fast_path_hits", cached_call_counts, nullptr,
     "calls the C++ hit path served, by entry kind ('eager', 'python', 'graph', 'joint', 'training'), for tests",
     nullptr},
    {"_fast_entries", cached_call_fast_entries, nullptr, "the CacheEntry list the C++ hit path tries", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyMethodDef module_functions[] = {
    {"_set_session_stack", set_session_stack, METH_O,
     "_set_session_stack(list): this thread's capture sessions (kiln/compiler/_state.py); a call while it is "
     "non-empty skips the C++ hit path."},
    {"attach_compiled_backward", attach_compiled_backward, METH_VARARGS,
     "attach_compiled_backward(program, values, saved, inputs, results): one CompiledFunctionBackward node on "
     "results' differentiable outputs (Note [Joint capture])."},
    {nullptr, nullptr, 0, nullptr}};

void add_type(PyObject* module, PyTypeObject* type, const char* name) {
  if (PyType_Ready(type) < 0) throw std::runtime_error(std::string("cannot ready ") + name);
  Py_INCREF(type);
  if (PyModule_AddObject(module, name, reinterpret_cast<PyObject*>(type)) < 0) {
    Py_DECREF(type);
    throw std::runtime_error(std::string("cannot add ") + name + " to kiln._C._capture");
  }
}

}  // namespace

void init_cached_call(PyObject* capture_module) {
  PyModuleGuard_Type.tp_name = "kiln._C._capture.ModuleGuard";
  PyModuleGuard_Type.tp_basicsize = sizeof(PyModuleGuard);
  PyModuleGuard_Type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC;
  PyModuleGuard_Type.tp_traverse = module_guard_traverse;  // no tp_clear: the entries and functions holding it break cycles
  PyModuleGuard_Type.tp_doc =
      "A compiled module's guards: ModuleGuard(modules, state); check() -> bool (training flags, the identity of "
      "every submodule, parameter and buffer, their metadata).";
  PyModuleGuard_Type.tp_new = module_guard_new;
  PyModuleGuard_Type.tp_dealloc = module_guard_dealloc;
  PyModuleGuard_Type.tp_methods = module_guard_methods;
  add_type(capture_module, &PyModuleGuard_Type, "ModuleGuard");

  PyCacheEntry_Type.tp_name = "kiln._C._capture.CacheEntry";
  PyCacheEntry_Type.tp_basicsize = sizeof(PyCacheEntry);
  PyCacheEntry_Type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC;
  PyCacheEntry_Type.tp_doc = "One cached kiln.compile entry as the C++ hit path runs it: CacheEntry(spec).";
  PyCacheEntry_Type.tp_new = cache_entry_new;
  PyCacheEntry_Type.tp_dealloc = cache_entry_dealloc;
  PyCacheEntry_Type.tp_traverse = cache_entry_traverse;
  PyCacheEntry_Type.tp_clear = cache_entry_clear;
  PyCacheEntry_Type.tp_getset = cache_entry_getset;
  add_type(capture_module, &PyCacheEntry_Type, "CacheEntry");

  PyCachedCall_Type.tp_name = "kiln._C._capture.CachedCall";
  PyCachedCall_Type.tp_basicsize = sizeof(PyCachedCall);
  PyCachedCall_Type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC;
  PyCachedCall_Type.tp_doc =
      "Base of kiln.compile's CompiledFunction: calling it runs the C++ hit path, else self._miss(args, kwargs).";
  PyCachedCall_Type.tp_new = cached_call_new;
  PyCachedCall_Type.tp_dealloc = cached_call_dealloc;
  PyCachedCall_Type.tp_traverse = cached_call_traverse;
  PyCachedCall_Type.tp_clear = cached_call_clear;
  PyCachedCall_Type.tp_call = cached_call_call;
  PyCachedCall_Type.tp_methods = cached_call_methods;
  PyCachedCall_Type.tp_getset = cached_call_getset;
  add_type(capture_module, &PyCachedCall_Type, "CachedCall");

  if (PyModule_AddFunctions(capture_module, module_functions) < 0)
    throw std::runtime_error("cannot add the cached-call functions to kiln._C._capture");
}

}  // namespace kiln::python
