// The guards of one cached kiln.compile entry, as C++ data checked without
// returning to Python (issue 23: the cached-call overhead; Note [The cached-call
// fast path] in python/kiln/compiler/_compiled_function.py):
//
// - ArgGuards: the call's positional and keyword arguments as the Python key
//   flattens them (kiln/compiler/_guards.py flatten((args, kwargs))): tuples,
//   lists, named tuples and dicts walked, each container by exact type, length
//   and (dicts, keyword arguments) keys in order; each tensor's sizes,
//   strides, dtype, device, requires_grad and which earlier tensor (in that
//   walk's order) it is the same object as; each Python scalar (None, bool,
//   int, float, str) by exact type and value; plus grad mode. A check hands
//   back the call's tensors in the walk's order: the graph's inputs.
//   kiln._C._capture.GuardSet holds one (PyGuardSet.cpp).
// - ModuleGuards: a compiled module's state: every submodule's class (and that
//   the class was not modified since: its type version tag), that its
//   instance dictionary holds no walk of its own (looked at again when its size
//   changes), its
//   `training` flag, the keys and identity of each entry of its _modules,
//   _parameters and _buffers, and the recorded parameters'/buffers' metadata
//   (an ArgGuards over them). Built only for modules whose classes and
//   instances keep Module's own walks and attribute lookup of those names
//   (CompiledFunction._guard_set); kiln._C._capture.ModuleGuard holds one
//   (PyCachedCall.cpp).
//
// Both are built once per cache entry from the call that captured it and
// checked on every call (PyCachedCall.cpp's hit path); a check allocates nothing
// for up to 8 tensors. Every function here needs the GIL.
#pragma once

#include <Python.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "eager/core/Device.h"
#include "eager/core/DType.h"
#include "eager/core/SmallVector.h"

namespace kiln::python {

enum class GuardKind : uint8_t {
  Tensor,
  Scalar,    // None, bool, int, float, str: exact type and value
  Tuple,     // exact tuple, then `length` items
  List,      // exact list, then `length` items
  Sequence,  // a tuple subclass (a named tuple) of exact type that iterates as a tuple, then `length` items
  Dict,      // exact dict with `keys` in order, then their values
};

struct ArgGuard {
  GuardKind kind = GuardKind::Scalar;
  // Tensor
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  DType dtype{};
  Device device{};
  bool requires_grad = false;
  int64_t same_as = -1;  // the first earlier tensor (in walk order) that is this same object, or -1
  // Scalar: its value (owned); Scalar and containers: the exact type
  PyObject* value = nullptr;
  PyTypeObject* type = nullptr;
  // containers
  Py_ssize_t length = 0;
  std::vector<PyObject*> keys;  // Dict: owned, in order
};

/// The call's tensors in walk order (borrowed: the call's arguments hold them).
using CallTensors = SmallVector<PyObject*, 8>;

struct ArgGuards {
  bool grad_enabled = true;
  Py_ssize_t num_args = 0;             // positional arguments
  std::vector<PyObject*> kwarg_names;  // owned: the keyword arguments' names, in call order
  std::vector<ArgGuard> nodes;         // pre-order: each positional argument's tree, then each keyword's value's
  size_t num_tensors = 0;

  ArgGuards() = default;
  ArgGuards(const ArgGuards&) = delete;
  ArgGuards& operator=(const ArgGuards&) = delete;
  ~ArgGuards();
};

/// The guards of a call with the positional-argument tuple `args` and the keyword dict `kwargs` (nullptr:
/// none; grad mode read now), or nullptr with a Python TypeError set when an argument holds something
/// other than tensors, guardable scalars and the containers above (the Python key guards such calls).
[[nodiscard]] std::unique_ptr<ArgGuards> make_arg_guards(PyObject* args, PyObject* kwargs = nullptr);

/// 1 when every guard holds for (`args`, `kwargs`), 0 when one fails, -1 with a Python error set. On 1,
/// `tensors` (when given) holds the call's tensors in walk order.
[[nodiscard]] int check_arg_guards(const ArgGuards& g, PyObject* args, PyObject* kwargs = nullptr,
                                   CallTensors* tensors = nullptr);

struct ModuleGuards {
  std::vector<PyObject*> modules;   // owned: module.modules() at capture
  std::vector<PyTypeObject*> types;  // owned: each module's class then
  std::vector<unsigned int> type_tags;  // each class's version tag then (a modified class gets a new one)
  std::vector<PyObject*> dicts;     // owned: each module's instance __dict__
  // Each instance dict's size when it was last seen holding no walk of its own: a change looks again.
  mutable std::vector<Py_ssize_t> dict_sizes;
  std::vector<PyObject*> training;  // owned: each module's training flag then
  // owned: the keys and values of each module's _modules, _parameters and _buffers then, in order
  std::vector<std::vector<PyObject*>> children, parameters, buffers;
  std::vector<std::vector<PyObject*>> child_names, parameter_names, buffer_names;
  PyObject* state = nullptr;        // owned: the tuple of the recorded parameters and buffers
  std::unique_ptr<ArgGuards> state_guards;  // their metadata

  ModuleGuards() = default;
  ModuleGuards(const ModuleGuards&) = delete;
  ModuleGuards& operator=(const ModuleGuards&) = delete;
  ~ModuleGuards();
};

/// The module guards of `modules` (a list: module.modules()) and `state` (a tuple of the recorded
/// parameters and buffers, in input order), or nullptr with a Python error set (TypeError: a module
/// whose class or instance defines one of the guarded names itself, or whose class has no version tag).
[[nodiscard]] std::unique_ptr<ModuleGuards> make_module_guards(PyObject* modules, PyObject* state);

/// 1 when every module guard holds now, 0 when one fails, -1 with a Python error set.
[[nodiscard]] int check_module_guards(const ModuleGuards& g);

/// The ArgGuards of a kiln._C._capture.GuardSet object (PyGuardSet.cpp), or nullptr when `obj` is not one.
[[nodiscard]] const ArgGuards* guard_set_data(PyObject* obj);

}  // namespace kiln::python
