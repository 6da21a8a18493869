"""The Python bindings: python_functions.cpp (kiln._C._functions) and
python_methods.cpp (Tensor methods), one METH_FASTCALL binding per Python name
over PythonArgParser (python/csrc/PythonArgParser.h).

All overloads of a name share one parser, Tensor overloads listed before Scalar
ones (a 0-dim tensor is also a valid Scalar, so the Tensor overload must be
tried first); an out= overload folds into its functional one as a keyword-only
`Tensor out=None` (`TensorList out=None`, a tuple, for several outputs); ops taking TensorOptions (factories and the *_like forms)
also take torch's layout, pin_memory and requires_grad keywords.
"""

from __future__ import annotations

from dataclasses import dataclass

from cpp import HEADER, cpp_string, identifier, return_type, struct_name
from model import Argument, Op, OpgenError, Type, functional_of, takes_tensor_options


@dataclass
class PyParam:
    name: str             # as Python sees it ("input" for a function's self)
    type: str             # PythonArgParser's spelling ("Tensor", "IntArrayRef", "int64_t?", ...)
    default: str | None
    kwarg_only: bool
    arg: Argument | None  # the schema argument it feeds; None for out= and the factory keywords

    def __str__(self) -> str:
        return f"{self.type} {self.name}" + (f"={self.default}" if self.default is not None else "")


# PyTorch binds no Scalar overload of add, sub, mul and div to Python (its
# gen_python_functions.py skips them): its parser takes a Python number for their
# Tensor argument instead. kiln's parser does not, so it binds them, hidden:
# matched after the Tensor overloads, never counted or listed in errors, so a
# mistaken call gets PyTorch's message.
HIDDEN_OVERLOADS = {"add.Scalar", "add_.Scalar", "sub.Scalar", "sub_.Scalar", "mul.Scalar", "mul_.Scalar",
                    "div.Scalar", "div_.Scalar"}


@dataclass
class PySignature:
    op: Op
    out_op: Op | None
    params: list[PyParam]

    def text(self, name: str) -> str:
        parts, star = [], False
        for p in self.params:
            if p.kwarg_only and not star:
                parts.append("*")
                star = True
            parts.append(str(p))
        hidden = "|hidden" if self.op.full_name in HIDDEN_OVERLOADS else ""
        return f"{name}({', '.join(parts)}){hidden}"


def python_type(t: Type, where: str) -> str:
    if t.is_list and t.base == "Tensor":
        return "Tensor?[]" if t.element_optional else "TensorList"
    if t.is_list and t.base in ("int", "SymInt"):
        name = "SymIntArrayRef" if t.base == "SymInt" else "IntArrayRef"
        return name + (f"[{t.size}]" if t.size else "") + ("?" if t.optional else "")
    spelled = {"Tensor": "Tensor", "Scalar": "Scalar", "int": "int64_t", "SymInt": "int64_t", "float": "double",
               "bool": "bool", "ScalarType": "ScalarType", "Device": "Device", "str": "c10::string_view",
               "Generator": "Generator", "Layout": "Layout", "MemoryFormat": "MemoryFormat"}
    if t.is_list or t.base not in spelled:
        raise OpgenError(f"{where}: type {t} has no Python binding in opgen yet")
    return spelled[t.base] + ("?" if t.optional else "")


def python_signature(op: Op, out_op: Op | None, is_method: bool) -> PySignature:
    params = []
    for i, a in enumerate(op.schema.arguments):
        if is_method and a.name == "self":
            continue  # the bound tensor (not always the first argument: where(condition, self, other))
        name = "input" if a.name == "self" else a.name
        params.append(PyParam(name, python_type(a.type, f"{op.label}: argument '{a.name}'"), a.default,
                              a.kwarg_only, a))
    if out_op is not None:
        outs = out_op.schema.out_arguments
        # Several outputs: torch's `out=(values, indices)`, one tuple (Note [Tuple out= in the bindings]).
        params.append(PyParam("out", "TensorList", "None", True, None) if len(outs) > 1 else
                      PyParam(outs[0].name, "Tensor", "None", True, None))
    if takes_tensor_options(op):  # torch's TensorOptions keywords: dtype, layout, device, pin_memory; then requires_grad
        names = [p.name for p in params]
        at = names.index("dtype") + 1 if "dtype" in names else names.index("device")
        params.insert(at, PyParam("layout", "Layout?", "None", True, None))
        params.insert([p.name for p in params].index("device") + 1, PyParam("pin_memory", "bool?", "False", True, None))
        params.append(PyParam("requires_grad", "bool", "False", True, None))
    return PySignature(op, out_op, params)


def _sorted(sigs: list[PySignature]) -> list[PySignature]:
    """Tensor overloads before Scalar ones: a signature goes later for each
    position where it takes a Scalar and another takes a Tensor."""
    def scalar_where_others_tensor(s: PySignature) -> int:
        n = 0
        for i, p in enumerate(s.params):
            if p.type.startswith("Scalar") and any(
                    len(o.params) > i and o.params[i].type.startswith("Tensor") for o in sigs if o is not s):
                n += 1
        return n
    return sorted(sigs, key=scalar_where_others_tensor)


def function_groups(ops: list[Op]) -> dict[str, list[PySignature]]:
    folded: dict[str, Op] = {}
    for op in ops:
        if not op.schema.out_arguments:
            continue
        functional = functional_of(op, ops)
        if functional is None or "function" not in functional.variants:
            raise OpgenError(f"{op.label}: an out= overload needs a function-variant overload with the same "
                             "arguments (without out) to fold into")
        if len(op.schema.out_arguments) != len(op.schema.returns):
            raise OpgenError(f"{op.label}: an out= overload returns its out tensors, one per out argument "
                             f"({len(op.schema.out_arguments)} out arguments, {len(op.schema.returns)} returns)")
        folded[functional.full_name] = op
    groups: dict[str, list[PySignature]] = {}
    for op in ops:
        if "function" in op.variants and not op.schema.out_arguments:
            groups.setdefault(op.name, []).append(python_signature(op, folded.get(op.full_name), False))
    return {name: _sorted(sigs) for name, sigs in groups.items()}


def method_groups(ops: list[Op]) -> dict[str, list[PySignature]]:
    groups: dict[str, list[PySignature]] = {}
    for op in ops:
        if "method" in op.variants:
            groups.setdefault(op.name, []).append(python_signature(op, None, True))
    return {name: _sorted(sigs) for name, sigs in groups.items()}


# --- code --------------------------------------------------------------------------


def _local(a: Argument, i: int) -> list[str]:
    """Declarations reading parameter `i` into a local named after `a` (the C++ type the op takes)."""
    v, t = identifier(a.name), a.type
    if t.is_list and t.base == "Tensor":
        if t.element_optional:
            return [f"const std::vector<std::optional<Tensor>> {v} = r.optional_tensorlist({i});"]
        return [f"const std::vector<Tensor> {v} = r.tensorlist({i});"]
    if t.is_list:
        if t.optional:
            return [f"const std::optional<DimVector> {v}_values = r.intlist_optional({i});",
                    f"const std::optional<IntArrayRef> {v} = {v}_values ? std::optional<IntArrayRef>(*{v}_values) "
                    f": std::nullopt;"]
        return [f"const DimVector {v} = r.intlist({i});"]
    accessors = {"Scalar": ("Scalar", "scalar"), "int": ("int64_t", "to_int64"), "SymInt": ("int64_t", "to_int64"),
                 "float": ("double", "to_double"), "bool": ("bool", "to_bool"), "ScalarType": ("DType", "dtype"),
                 "Device": ("Device", "device"), "str": ("std::string_view", "string"),
                 "MemoryFormat": ("MemoryFormat", "memory_format"), "Generator": ("Generator", "generator")}
    if t.base == "Tensor":
        if t.optional:
            return [f"const std::optional<Tensor> {v} = r.optional_tensor({i});"]
        return [f"const Tensor& {v} = r.tensor({i});"]
    ctype, accessor = accessors[t.base]
    if t.optional:
        return [f"const std::optional<{ctype}> {v} = r.{accessor}_optional({i});"]
    return [f"const {ctype} {v} = r.{accessor}({i});"]


def _call(op: Op, locals_: dict[str, str]) -> str:
    return f"ops::{struct_name(op)}::call({', '.join(locals_[a.name] for a in op.schema.arguments)})"


def _release_gil_expr(op: Op, locals_: dict[str, str]) -> str:
    """When to release the GIL: only when the op's tensors are big enough that
    the work outweighs the release (see Note [When bindings release the GIL])."""
    tensors = [locals_[a.name] for a in op.schema.arguments if a.type.base == "Tensor" and a.name in locals_]
    if tensors:
        return f"any_big({', '.join(tensors)})"
    sizes = [locals_[a.name] for a in op.schema.arguments
             if a.type.base in ("int", "SymInt") and a.type.is_list and a.name == "size" and a.name in locals_]
    if sizes:
        return f"big_size({sizes[0]})"
    return "true"


def _returning(op: Op, call: str, locals_: dict[str, str]) -> list[str]:
    release = _release_gil_expr(op, locals_)
    if return_type(op) == "void":
        return [f"without_gil({release}, [&] {{ {call}; }});", "Py_RETURN_NONE;"]
    return [f"return wrap(without_gil({release}, [&] {{ return {call}; }}));"]


def _case(sig: PySignature, is_method: bool) -> list[str]:
    lines = [f"// {sig.op.schema}"] + ([f"// {sig.out_op.schema}"] if sig.out_op else [])
    locals_: dict[str, str] = {}
    if is_method:
        locals_["self"] = "self_tensor"
    index = {p.name: i for i, p in enumerate(sig.params)}
    for i, p in enumerate(sig.params):
        if p.arg is not None:
            lines += _local(p.arg, i)
            locals_[p.arg.name] = identifier(p.arg.name)
    options = takes_tensor_options(sig.op)
    if sig.out_op is not None and len(sig.out_op.schema.out_arguments) > 1:
        lines += _tuple_out_case(sig, index, locals_)
    elif sig.out_op is not None:
        out = sig.out_op.schema.out_arguments[0].name
        lines.append(f"if (!r.is_none({index[out]})) {{")
        lines.append(f"  const Tensor& {identifier(out)} = r.tensor({index[out]});")
        locals_[out] = identifier(out)
        if options:  # torch's check_out_type_matches, then requires_grad on the out tensor
            lines.append(f"  check_out_type_matches({identifier(out)}, {locals_['dtype']}, {locals_['device']});")
            lines.append(f"  Tensor result = without_gil({_release_gil_expr(sig.out_op, locals_)}, "
                         f"[&] {{ return {_call(sig.out_op, locals_)}; }});")
            lines += ["  " + s for s in _requires_grad(index)]
            lines.append("  return wrap(std::move(result));")
        else:
            lines += ["  " + s for s in _returning(sig.out_op, _call(sig.out_op, locals_), locals_)]
        lines.append("}")
    call = _call(sig.op, locals_)
    if not options:
        return lines + _returning(sig.op, call, locals_)
    lines.append(f"KILN_CHECK(!r.to_bool_optional({index['pin_memory']}).value_or(false), "
                 f"\"{sig.op.name}(): pin_memory=True needs CUDA pinned memory, which kiln does not have yet\");")
    lines.append(f"Tensor result = without_gil({_release_gil_expr(sig.op, locals_)}, [&] {{ return {call}; }});")
    lines += _requires_grad(index)
    lines.append("return wrap(std::move(result));")
    return lines


# Note [Tuple out= in the bindings]
# ---------------------------------
# An out= overload with several out arguments (sort.values: values, indices)
# folds into its functional overload as one keyword `out`, a tuple (or list) of
# exactly that many tensors, as torch's parser takes it ("expected tuple of 2
# elements but got 3", a TypeError). The kernel gets the tensors in schema order
# and returns them; the Python wrapper (kiln/return_types.py) names the tuple
# (torch.return_types.sort_out), its members the very out objects.
def _tuple_out_case(sig: PySignature, index: dict[str, int], locals_: dict[str, str]) -> list[str]:
    outs = sig.out_op.schema.out_arguments
    at = index["out"]
    lines = [f"if (!r.is_none({at})) {{",
             f"  const std::vector<Tensor> outs = r.tensorlist({at});",
             f"  KILN_CHECK_TYPE(outs.size() == {len(outs)}, \"expected tuple of {len(outs)} elements but got \", "
             "outs.size());"]
    for k, a in enumerate(outs):
        lines.append(f"  const Tensor& {identifier(a.name)} = outs[{k}];")
        locals_[a.name] = identifier(a.name)
    lines += ["  " + s for s in _returning(sig.out_op, _call(sig.out_op, locals_), locals_)]
    lines.append("}")
    return lines


def _requires_grad(index: dict[str, int]) -> list[str]:
    return [f"if (r.to_bool({index['requires_grad']})) {{",
            "  KILN_CHECK(is_differentiable_dtype(result.dtype()), "
            "\"Only Tensors of floating point and complex dtype can require gradients\");",
            "  result.set_requires_grad(true);", "}"]


def _binding(name: str, sigs: list[PySignature], is_method: bool) -> str:
    kind = "method" if is_method else "function"
    texts = ",\n      ".join(cpp_string(s.text(name)) for s in sigs)
    storage = max(len(s.params) for s in sigs)
    out = [f"\nconst PythonArgParser& parser_{kind}_{name}() {{\n"
           f"  static const PythonArgParser parser({{\n      {texts},\n  }});\n  return parser;\n}}\n",
           f"\nPyObject* {kind}_{name}(PyObject* {'self' if is_method else '/*module*/'}, PyObject* const* args, "
           f"Py_ssize_t nargs, PyObject* kwnames) {{\n"
           f"  KILN_PY_BEGIN\n  PyObject* storage[{storage}];\n"
           f"  const PythonArgs r = parser_{kind}_{name}().parse({'self' if is_method else 'nullptr'}, args, nargs, "
           f"kwnames, storage);\n"]
    if is_method:
        out.append("  const Tensor& self_tensor = unwrap_tensor(self);\n")
    out.append("  switch (r.index) {\n")
    for i, sig in enumerate(sigs):
        body = "\n".join("      " + line for line in "\n".join(_case(sig, is_method)).split("\n"))
        out.append(f"    case {i}: {{\n{body}\n    }}\n")
    out.append("  }\n  KILN_FAIL(Runtime, \"" + name + "(): no overload for signature \", r.index);\n"
               "  KILN_PY_END(nullptr)\n}\n")
    return "".join(out)


_PRELUDE = """
// Note [When bindings release the GIL]
// -------------------------------------
// Releasing and retaking the GIL costs about 150 ns on CPython 3.11, more than
// a whole op on a small tensor. So a binding releases it only when some input
// (or a factory's size) has at least kReleaseGilElements elements, where the
// kernel's time dwarfs the release and other Python threads gain from it.
// Kernels that call back into Python (custom ops) take the GIL themselves
// either way.
constexpr int64_t kReleaseGilElements = int64_t{1} << 15;

[[maybe_unused]] bool big(const Tensor& t) { return t.defined() && t.numel() >= kReleaseGilElements; }
[[maybe_unused]] bool big(const std::optional<Tensor>& t) { return t.has_value() && big(*t); }
[[maybe_unused]] bool big(const std::vector<Tensor>& ts) {
  int64_t n = 0;
  for (const Tensor& t : ts) n += t.defined() ? t.numel() : 0;
  return n >= kReleaseGilElements || ts.size() >= 64;
}
[[maybe_unused]] bool big(const std::vector<std::optional<Tensor>>& ts) {
  for (const auto& t : ts) {
    if (big(t)) return true;
  }
  return ts.size() >= 64;
}
template <typename... Ts>
bool any_big(const Ts&... ts) {
  return (big(ts) || ...);
}
[[maybe_unused]] bool big_size(IntArrayRef size) { return product(size) >= kReleaseGilElements; }

/// Runs `fn`, with the GIL released when `release`; the GIL comes back on the
/// way out, exceptions too.
template <typename Fn>
auto without_gil(bool release, Fn&& fn) {
  if (!release) return fn();
  struct Restore {
    PyThreadState* state;
    ~Restore() { PyEval_RestoreThread(state); }
  } restore{PyEval_SaveThread()};
  return fn();
}

/// torch's check_out_type_matches: a factory's dtype= and device= must agree with its out=.
[[maybe_unused]] void check_out_type_matches(const Tensor& out, std::optional<DType> dtype,
                                             std::optional<Device> device) {
  KILN_CHECK(!dtype || *dtype == out.dtype(), "dtype ", scalar_type_name(*dtype),
             " does not match dtype of out parameter (", scalar_type_name(out.dtype()), ")");
  KILN_CHECK(!device || device->type() == out.device().type(), "device type ", *device,
             " does not match device type of out parameter (", out.device(), ")");
}

[[maybe_unused]] PyObject* wrap(Tensor t) { return wrap_tensor(std::move(t)); }
[[maybe_unused]] PyObject* wrap(int64_t v) { return PyLong_FromLongLong(v); }
[[maybe_unused]] PyObject* wrap(double v) { return PyFloat_FromDouble(v); }
[[maybe_unused]] PyObject* wrap(bool v) { return PyBool_FromLong(v); }
[[maybe_unused]] PyObject* wrap(const Scalar& s) {
  if (s.is_bool()) return PyBool_FromLong(s.to_bool());
  return s.is_integral() ? PyLong_FromLongLong(s.to_int64()) : PyFloat_FromDouble(s.to_double());
}
/// Several results (a tuple return or Tensor[]) come back as a tuple.
template <typename List>
PyObject* wrap_all(const List& items) {
  PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(std::size(items)));
  if (tuple == nullptr) return nullptr;
  Py_ssize_t i = 0;
  for (const Tensor& t : items) {
    PyObject* item = wrap_tensor(t);
    if (item == nullptr) {
      Py_DECREF(tuple);
      return nullptr;
    }
    PyTuple_SET_ITEM(tuple, i++, item);
  }
  return tuple;
}
[[maybe_unused]] PyObject* wrap(const std::vector<Tensor>& ts) { return wrap_all(ts); }
template <typename... Ts>
PyObject* wrap(const std::tuple<Ts...>& ts) {
  return std::apply([](const auto&... t) { return wrap_all(std::array<Tensor, sizeof...(Ts)>{t...}); }, ts);
}

/// One generated binding: its name, entry point, parser and overload list.
struct Binding {
  const char* name;
  PyObject* (*fn)(PyObject*, PyObject* const*, Py_ssize_t, PyObject*);
  const PythonArgParser& (*parser)();
  const char* schemas;
};

/// A METH_FASTCALL entry whose docstring starts with the __text_signature__
/// (so inspect.signature works) and lists the op's schemas.
PyMethodDef method_def(const Binding& b, bool is_method) {
  static std::deque<std::string> docs;  // PyMethodDef keeps the pointer
  docs.push_back(b.name + b.parser().text_signature(0, is_method) + "\\n--\\n\\n" + b.schemas);
  return {b.name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(b.fn)), METH_FASTCALL | METH_KEYWORDS,
          docs.back().c_str()};
}
"""

_INCLUDES = """#include <Python.h>

#include <array>
#include <deque>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "kiln/generated/Functions.h"
#include "python/csrc/Exceptions.h"
#include "python/csrc/PyTensor.h"
#include "python/csrc/PythonArgParser.h"
"""


# Note [Operators in C]
# ---------------------
# Python's operators on a tensor (t * u, t += 1, t == u) run Tensor.__mul__ and
# the like. As Python functions wrapping the method (kiln/_tensor.py had them)
# each one cost a Python frame and a try block: about an eighth of a 1-element
# `a * b + a`. So the binary operators that are the method applied to (self,
# other) are generated here beside their method, one METH_FASTCALL function
# each: the method's binding, and, when it raises TypeError and `other` is
# neither a tensor nor a number (kiln/_tensor.py's _is_operand), NotImplemented,
# so that Python tries the other operand and then raises its own TypeError (and
# t == None is False). kiln/_tensor.py installs them; the reflected operators
# with no method of their own (2 / t, 2 - t) stay in Python.
OPERATORS = {
    "__add__": "add", "__radd__": "add", "__iadd__": "add_",
    "__sub__": "sub", "__isub__": "sub_",
    "__mul__": "mul", "__rmul__": "mul", "__imul__": "mul_",
    "__truediv__": "div", "__itruediv__": "div_",
    "__floordiv__": "floor_divide", "__ifloordiv__": "floor_divide_",
    "__mod__": "remainder", "__imod__": "remainder_",
    "__pow__": "pow", "__ipow__": "pow_",
    "__and__": "bitwise_and", "__rand__": "bitwise_and", "__iand__": "bitwise_and_",
    "__or__": "bitwise_or", "__ror__": "bitwise_or", "__ior__": "bitwise_or_",
    "__xor__": "bitwise_xor", "__rxor__": "bitwise_xor", "__ixor__": "bitwise_xor_",
    "__lshift__": "bitwise_left_shift", "__ilshift__": "bitwise_left_shift_",
    "__rshift__": "bitwise_right_shift", "__irshift__": "bitwise_right_shift_",
    "__eq__": "eq", "__ne__": "ne", "__lt__": "lt", "__le__": "le", "__gt__": "gt", "__ge__": "ge",
}

_OPERATOR_PRELUDE = """
/// kiln/_tensor.py's _is_operand: a tensor or a (real or complex) number,
/// numpy's scalars included; -1 with an error set when the check failed.
int is_operator_operand(PyObject* value) {
  if (is_tensor(value) || PyFloat_Check(value) || PyLong_Check(value) || PyComplex_Check(value)) return 1;
  PyObject* module = PyImport_ImportModule("kiln._tensor");
  if (module == nullptr) return -1;
  PyObject* check = PyObject_GetAttrString(module, "_is_operand");
  Py_DECREF(module);
  if (check == nullptr) return -1;
  PyObject* answer = PyObject_CallOneArg(check, value);
  Py_DECREF(check);
  if (answer == nullptr) return -1;
  const int truth = PyObject_IsTrue(answer);
  Py_DECREF(answer);
  return truth;
}

/// A method's result as its operator's (Note [Operators in C]): a TypeError
/// whose other operand is no tensor or number becomes NotImplemented.
PyObject* as_operator(PyObject* result, PyObject* const* args, Py_ssize_t nargs) {
  if (result != nullptr || PyVectorcall_NARGS(nargs) != 1 || !PyErr_ExceptionMatches(PyExc_TypeError)) return result;
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  const int operand = is_operator_operand(args[0]);
  if (operand != 0) {
    PyErr_Clear();
    PyErr_Restore(type, value, traceback);
    return nullptr;
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  Py_RETURN_NOTIMPLEMENTED;
}
"""


def _operators(groups: dict[str, list[PySignature]]) -> tuple[str, str]:
    """The operator functions over the generated methods, and their table rows."""
    code, rows = [_OPERATOR_PRELUDE], []
    for dunder, method in OPERATORS.items():
        if method not in groups:
            continue
        code.append(f"\nPyObject* operator_{dunder}(PyObject* self, PyObject* const* args, Py_ssize_t nargs, "
                    f"PyObject* kwnames) {{\n  return as_operator(method_{method}(self, args, nargs, kwnames), "
                    f"args, nargs);\n}}\n")
        rows.append(f"    {{\"{dunder}\", &operator_{dunder}}},")
    return "".join(code), "\n".join(rows)


def _schemas(sigs: list[PySignature]) -> list[str]:
    return [str(o.schema) for s in sigs for o in (s.op, s.out_op) if o is not None]


def _file(groups: dict[str, list[PySignature]], is_method: bool, what: str, tail: str) -> str:
    kind = "method" if is_method else "function"
    out = [HEADER.format(what=what), _INCLUDES, "\nnamespace kiln::python {\n\nnamespace {\n", _PRELUDE]
    for name, sigs in groups.items():
        out.append(_binding(name, sigs, is_method))
    rows = "\n".join(f"    {{\"{name}\", &{kind}_{name}, &parser_{kind}_{name}, "
                     f"{cpp_string(chr(10).join(_schemas(sigs)))}}},"
                     for name, sigs in groups.items())
    out.append(f"\nconst Binding kBindings[] = {{\n{rows}\n}};\n")
    if is_method:
        code, operator_rows = _operators(groups)
        out.append(code)
        out.append("\n/// An operator: its name and entry point (Note [Operators in C]).\n"
                   "struct Operator {\n  const char* name;\n"
                   "  PyObject* (*fn)(PyObject*, PyObject* const*, Py_ssize_t, PyObject*);\n};\n"
                   f"\nconst Operator kOperators[] = {{\n{operator_rows}\n}};\n")
    out.append(f"\n}}  // namespace\n{tail}\n}}  // namespace kiln::python\n")
    return "".join(out)


def python_functions_cpp(ops: list[Op]) -> str:
    tail = """
/// Creates kiln._C._functions holding one builtin per generated function;
/// kiln/__init__.py re-exports them.
void init_generated_functions(PyObject* module) {
  static std::vector<PyMethodDef> defs;
  for (const Binding& b : kBindings) defs.push_back(method_def(b, /*is_method=*/false));
  defs.push_back({nullptr, nullptr, 0, nullptr});
  static PyModuleDef def = {PyModuleDef_HEAD_INIT, "kiln._C._functions",
                            "kiln's ops, generated from ops.yaml by tools/opgen.", -1, defs.data(),
                            nullptr, nullptr, nullptr, nullptr};
  PyObject* functions = PyModule_Create(&def);
  if (functions == nullptr) throw python_error_already_set();
  if (PyDict_SetItemString(PyImport_GetModuleDict(), "kiln._C._functions", functions) < 0 ||
      PyModule_AddObject(module, "_functions", functions) < 0) {
    Py_DECREF(functions);
    throw python_error_already_set();
  }
}
"""
    return _file(function_groups(ops), False, ": Python functions", tail)


def python_methods_cpp(ops: list[Op]) -> str:
    tail = """
/// Appends the generated Tensor methods to tensor_method_table(). Module.cpp calls
/// this before the hand-written registrations: CPython keeps the first method
/// of a name, so a generated method wins over a leftover hand-written one.
void register_generated_tensor_methods() {
  for (const Binding& b : kBindings) tensor_method_table().push_back(method_def(b, /*is_method=*/true));
  for (const Operator& o : kOperators) {
    tensor_method_table().push_back({o.name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(o.fn)),
                                     METH_FASTCALL | METH_KEYWORDS, nullptr});
  }
}
"""
    return _file(method_groups(ops), True, ": Tensor methods", tail)


def outputs(ops: list[Op]) -> dict[str, str]:
    return {"python_functions.cpp": python_functions_cpp(ops), "python_methods.cpp": python_methods_cpp(ops)}
