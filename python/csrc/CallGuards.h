// The guards of one cached kiln.compile entry, as C++ data checked without
// returning to Python (issue 23: the cached-call overhead; Note [The cached-call
// fast path] in python/kiln/compiler/_compiled_function.py):
//
// - ArgGuards: for each positional argument, a tensor's sizes, strides, dtype,
//   device, requires_grad and which earlier argument it is the same object as,
//   or a Python scalar (None, bool, int, float, str) compared by exact type and
//   value; plus grad mode. kiln._C._capture.GuardSet holds one (PyGuardSet.cpp).
// - ModuleGuards: a compiled module's state: every submodule's `training` flag,
//   the identity of each entry of its _modules, _parameters and _buffers, and
//   the recorded parameters'/buffers' metadata (an ArgGuards over them).
//   kiln._C._capture.ModuleGuard holds one (PyCachedCall.cpp).
//
// Both are built once per cache entry from the call that captured it and
// checked on every call (PyCachedCall.cpp's hit path); a check allocates nothing.
// Every function here needs the GIL.
#pragma once

#include <Python.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "eager/core/Device.h"
#include "eager/core/DType.h"

namespace kiln::python {

struct ArgGuard {
  bool is_tensor = false;
  // tensor
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  DType dtype{};
  Device device{};
  bool requires_grad = false;
  int64_t same_as = -1;  // the first earlier argument that is this same tensor object, or -1
  // scalar
  PyObject* value = nullptr;  // owned
  PyTypeObject* type = nullptr;
};

struct ArgGuards {
  bool grad_enabled = true;
  std::vector<ArgGuard> args;
  std::vector<int64_t> tensor_positions;  // positions of the tensor arguments, in order

  ArgGuards() = default;
  ArgGuards(const ArgGuards&) = delete;
  ArgGuards& operator=(const ArgGuards&) = delete;
  ~ArgGuards();
};

/// The guards of the positional-argument tuple `args` (grad mode read now), or nullptr with a
/// Python TypeError set when an argument is neither a tensor nor a guardable scalar.
[[nodiscard]] std::unique_ptr<ArgGuards> make_arg_guards(PyObject* args);

/// 1 when every guard holds for `args`, 0 when one fails, -1 with a Python error set.
[[nodiscard]] int check_arg_guards(const ArgGuards& g, PyObject* args);

struct ModuleGuards {
  std::vector<PyObject*> modules;   // owned: module.modules() at capture
  std::vector<PyObject*> training;  // owned: each module's training flag then
  // owned: the values of each module's _modules, _parameters and _buffers then, in order
  std::vector<std::vector<PyObject*>> children, parameters, buffers;
  PyObject* state = nullptr;        // owned: the tuple of the recorded parameters and buffers
  std::unique_ptr<ArgGuards> state_guards;  // their metadata

  ModuleGuards() = default;
  ModuleGuards(const ModuleGuards&) = delete;
  ModuleGuards& operator=(const ModuleGuards&) = delete;
  ~ModuleGuards();
};

/// The module guards of `modules` (a list: module.modules()) and `state` (a tuple of the recorded
/// parameters and buffers, in input order), or nullptr with a Python error set.
[[nodiscard]] std::unique_ptr<ModuleGuards> make_module_guards(PyObject* modules, PyObject* state);

/// 1 when every module guard holds now, 0 when one fails, -1 with a Python error set.
[[nodiscard]] int check_module_guards(const ModuleGuards& g);

/// The ArgGuards of a kiln._C._capture.GuardSet object (PyGuardSet.cpp), or nullptr when `obj` is not one.
[[nodiscard]] const ArgGuards* guard_set_data(PyObject* obj);

}  // namespace kiln::python
