"""The Autograd dispatch key's kernels, generated from the derivative formulas.

For every op with `derivatives:` this writes a backward Node (AddBackward0, ...)
whose apply() evaluates the formulas, and a kernel registered at the Autograd
key that records the node (when an input requires grad), saves what the
formulas read, redispatches below Autograd, and sets the result's history.
Formulas are translated from their Python syntax to C++ here: names become the
saved values, helpers come from eager/autograd/FormulaHelpers.h, op calls go
through the generated C++ API, arithmetic operators call the ops add/sub/mul/
div/neg (so a formula using `*` needs `mul` in the yaml files).

Views and in-place ops (eager/autograd/ViewAutograd.h): a view op's kernel
ends with note_view (how the view was made, for the in-place checks), an
in-place op's kernel calls check_inplace before the op and rebase_history
after it (CopySlices when self is a view; plain set_history for in-place view
ops such as transpose_, which change geometry, not values).
"""

from __future__ import annotations

import ast
import re

from cpp import HEADER, argument_type, dispatcher_params, identifier, return_type, struct_name
from derivatives import HELPERS
from model import Op, OpgenError

# The HELPERS (tools/opgen/derivatives.py) that eager/autograd/FormulaHelpers.h
# implements. An op whose formulas need another helper gets the Autograd
# fallback (a NotImplemented node) until the helper is written.
IMPLEMENTED_HELPERS = {"sum_backward", "mean_backward", "amax_backward", "value_selecting_reduction_backward",
                       "prod_backward", "var_backward", "cumsum_backward", "cumprod_backward", "aminmax_backward",
                       "linalg_vector_norm_backward", "split_backward", "split_with_sizes_backward", "unbind_backward", "cat_tensors_backward",
                       "repeat_backward", "diagonal_backward", "take_backward", "masked_scatter_backward",
                       "repeat_interleave_backward", "pow_backward_exponent", "pow_backward", "pow_backward_self", "clamp_backward", "clamp_backward_min",
                       "clamp_backward_max", "maybe_multiply", "zeros_like", "conj_if_complex", "sgn_backward", "tanh_grad", "sigmoid_grad", "silu_grad", "fft_c2c_backward", "fft_r2c_backward", "fft_c2r_backward", "to", "reshape", "sum_to", "select_backward",
                       "slice_backward", "permute_backwards", "negated", "sizes", "strides", "dtype", "device", "dim",
                       "numel", "gelu_double_backward", "mish_double_backward", "softplus_double_backward",
                       "elu_double_backward", "logit_double_backward", "as_strided_backward", "storage_offset",
                       "last_sizes", "softmax_double_backward", "log_softmax_double_backward_grad_output",
                       "log_softmax_double_backward_output", "mm_mat2_backward",
                       "solve_triangular_backward_self", "solve_triangular_backward_B", "cholesky_backward",
                       "linalg_eigh_backward", "linalg_eig_backward", "linalg_qr_backward", "svd_backward",
                       "lu_factor_ex_backward", "scatter_reduce_backward_self", "scatter_reduce_backward_src",
                       "lstm_cell_backward", "gru_cell_backward", "lstm_sequence_backward",
                       "native_group_norm_backward"}

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Pow: "pow"}
_COMPARISONS = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}
_ACCESSORS = {"sizes", "strides", "dtype", "device", "dim", "numel", "storage_offset"}
# How a node keeps an accessor's value. See Note [Saved geometry].
_ACCESSOR_TYPES = {"sizes": "DimVector", "strides": "DimVector", "dtype": "DType", "device": "Device",
                   "dim": "int64_t", "numel": "int64_t", "storage_offset": "int64_t"}

# Note [Saved geometry]
# ---------------------
# A formula that reads an input only through accessors (`self.sizes()`,
# `self.dim()`, ...) saves those values, not the tensor: the node's `used` set
# names them "self.sizes", ..., and the node has a field self_sizes_. Saving the
# tensor would keep its memory alive and, worse, make its version check fire
# when the tensor is later modified in place through any alias although the
# formula never reads its values (`h[t] = f(h[t - 1])` in a loop writes into
# the tensor SelectBackward0 read h[t - 1] from). PyTorch saves sizes the same
# way (self_sym_sizes).


def _is_number(node: ast.AST) -> bool:
    """A literal number, or a negated one."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)


def _storage_type(param_type: str) -> str:
    """How a node keeps a non-tensor argument."""
    t = param_type.replace("const ", "").replace("&", "").strip()
    return (t.replace("IntArrayRef", "DimVector").replace("std::string_view", "std::string"))


def display_name(op: Op, ops: list[Op]) -> str:
    """PyTorch's grad_fn name: AddBackward0 for add.Tensor, AddBackward1 for
    add.Scalar; an in-place op shares its functional overload's name (add_.Tensor
    is AddBackward0)."""
    base = op.name.rstrip("_")
    camel = "".join(part.capitalize() for part in base.split("_"))
    functionals = [o.schema.overload for o in ops
                   if o.name == base and not o.schema.out_arguments and o.derivatives]
    overload = op.schema.overload
    index = functionals.index(overload) if overload in functionals else len(functionals)
    return f"{camel}Backward{index}"


def node_struct(op: Op) -> str:
    """A unique C++ name per overload."""
    return f"Node_{struct_name(op)}"


class _Translator:
    """Python formula -> C++ expression over the node's saved values."""

    def __init__(self, op: Op, tensor_args: set[str], op_names: set[str]):
        self.op = op
        self.tensor_args = tensor_args
        # Inputs whose accessors are saved as values (Note [Saved geometry]).
        self.plain_tensors = {a.name for a in op.schema.arguments
                              if a.type.base == "Tensor" and not a.type.is_list and not a.type.optional}
        self.op_names = op_names
        self.used: set[str] = set()

    def fail(self, what: str):
        raise OpgenError(f"{self.op.label}: derivative formula: {what}")

    def _need(self, fn: str, node: ast.AST) -> None:
        if fn not in self.op_names:
            self.fail(f"'{ast.unparse(node)}' needs the op '{fn}', which no yaml file defines yet")

    def _number_on_left(self, node: ast.BinOp, fn: str) -> str:
        """`2 * t`, `1 - t`, `1 + t`, `1 / t`: ops take the number second, so rewrite."""
        number, tensor = self.expr(node.left), self.expr(node.right)
        if isinstance(node.right, ast.Name) and node.right.id not in self.tensor_args | {"grad", "result"}:
            # A number argument (lerp's Scalar weight): plain arithmetic on numbers.
            cxx = {"add": "+", "sub": "-", "mul": "*", "div": "/"}.get(fn)
            if cxx is None:
                self.fail(f"'{ast.unparse(node)}': '{fn}' of two numbers is not translated")
            return f"(double({number}) {cxx} formula::as_double({tensor}))"
        if fn in ("add", "mul"):
            self._need(fn, node)
            return f"kiln::{fn}({tensor}, {number})"
        if fn == "sub":
            self._need("rsub", node)
            return f"kiln::rsub({tensor}, {number})"
        if fn == "div":
            self._need("reciprocal", node)
            self._need("mul", node)
            return f"kiln::mul(kiln::reciprocal({tensor}), {number})"
        self.fail(f"'{ast.unparse(node)}': a number on the left of '{fn}' is not translated")

    def _saved_accessor(self, receiver: ast.AST, attr: str) -> str | None:
        """`self.sizes()` of a plain Tensor input: the node's saved value."""
        if not (isinstance(receiver, ast.Name) and receiver.id in self.plain_tensors):
            return None
        self.used.add(f"{receiver.id}.{attr}")
        return f"{identifier(receiver.id)}_{attr}_"

    def expr(self, node: ast.AST) -> str:
        if isinstance(node, ast.Name):
            self.used.add(node.id)
            return identifier(node.id)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool):
                return "true" if node.value else "false"
            if node.value is None:
                return "std::nullopt"
            return repr(node.value)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "grads":
            self.used.add("grads")
            return f"grads[{self.expr(node.slice)}]"
        if (index := _tuple_element(node)) is not None:
            # One element of an op's tuple of results; see Note [One backward op for several inputs].
            return f"std::get<{index}>({self.expr(node.value)})"
        if isinstance(node, ast.Attribute):
            if node.attr in _ACCESSORS and (saved := self._saved_accessor(node.value, node.attr)):
                return saved
            receiver = self.expr(node.value)
            if node.attr in _ACCESSORS:
                return f"{receiver}.{node.attr}()"
            self.fail(f"attribute '{node.attr}' is not a Tensor accessor")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            return f"-{self.expr(node.operand)}"
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            if "neg" not in self.op_names:
                self.fail(f"'{ast.unparse(node)}' needs the op 'neg', which no yaml file defines yet")
            return f"kiln::neg({self.expr(node.operand)})"
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            fn = _BINOPS[type(node.op)]
            if _is_number(node.left):
                return self._number_on_left(node, fn)
            if (isinstance(node.left, ast.Name) and node.left.id not in self.tensor_args | {"grad", "result"}
                    and _is_number(node.right) and fn in ("add", "sub")):
                # An int argument plus a number (polygamma's `n + 1`): C++ arithmetic.
                return f"({self.expr(node.left)} {'+' if fn == 'add' else '-'} {self.expr(node.right)})"
            self._need(fn, node)
            return f"kiln::{fn}({self.expr(node.left)}, {self.expr(node.right)})"
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARISONS:
            fn = _COMPARISONS[type(node.ops[0])]
            self._need(fn, node)
            return f"kiln::{fn}({self.expr(node.left)}, {self.expr(node.comparators[0])})"
        if isinstance(node, ast.IfExp):
            # The condition is a bool or an optional argument (set or not), as in Python.
            return f"(({self.expr(node.test)}) ? Tensor({self.expr(node.body)}) : Tensor({self.expr(node.orelse)}))"
        if isinstance(node, ast.Call):
            args = [self.expr(a) for a in node.args]
            if isinstance(node.func, ast.Attribute):
                name = node.func.attr
                if name in _ACCESSORS and not args and (saved := self._saved_accessor(node.func.value, name)):
                    return saved
                receiver = self.expr(node.func.value)
                if name in _ACCESSORS:
                    return f"{receiver}.{name}()"
                if name in HELPERS:
                    return f"formula::{name}({', '.join([receiver] + args)})"
                return f"{receiver}.{name}({', '.join(args)})"
            if isinstance(node.func, ast.Name):
                name = node.func.id
                if name in HELPERS:
                    return f"formula::{name}({', '.join(args)})"
                return f"kiln::{name}({', '.join(args)})"
        self.fail(f"cannot translate '{ast.unparse(node)}' to C++ yet")


# Note [One backward op for several inputs]
# -----------------------------------------
# A backward kernel that computes several inputs' gradients in one pass (the
# fused attention backward: grad_query, grad_key, grad_value) returns them as a
# tuple; each input's formula picks its element, `op(...)[i]`, with the same
# call text. The node evaluates such a call once, when any of its inputs needs
# a gradient, and hands out the elements (PyTorch writes `query, key, value:
# op(...)` in derivatives.yaml for the same thing).

def _tuple_element(node: ast.AST) -> int | None:
    """i for a formula `op(...)[i]` (a constant index into a call's tuple), else None."""
    if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Call) and isinstance(node.slice, ast.Constant)
            and type(node.slice.value) is int and node.slice.value >= 0):
        return node.slice.value
    return None


def _shared_calls(op: Op) -> dict[str, list[int]]:
    """Call text -> the node outputs (differentiable inputs, in order) whose
    formulas are elements of that call's tuple, for calls two or more share."""
    groups: dict[str, list[int]] = {}
    for i, inp in enumerate(_differentiable(op)):
        tree = ast.parse(op.derivatives[inp].strip(), mode="eval").body
        if _tuple_element(tree) is not None:
            groups.setdefault(ast.unparse(tree.value), []).append(i)
    return {call: outs for call, outs in groups.items() if len(outs) > 1}


def _num_tensor_returns(op: Op) -> int:
    """How many plain Tensor returns the op has, or 0 when some return is not a
    plain Tensor (a list, a number, an optional)."""
    rets = op.schema.returns
    plain = all(r.type.base == "Tensor" and not r.type.is_list and not r.type.optional for r in rets)
    return len(rets) if plain else 0


def _returns_list(op: Op) -> bool:
    """One Tensor[] return (split, unbind): `grads` is the list of its gradients."""
    rets = op.schema.returns
    return len(rets) == 1 and rets[0].type.base == "Tensor" and rets[0].type.is_list and not rets[0].type.optional


def _supported(op: Op) -> bool:
    """Ops returning one Tensor, a tuple of Tensors (max.dim, native_layer_norm)
    or a Tensor[] (split, unbind)."""
    if not op.derivatives or op.schema.out_arguments:
        return False
    if _returns_list(op):
        return not op.schema.is_inplace
    if _num_tensor_returns(op) == 0:
        return False
    return len(op.schema.returns) == 1 or not op.schema.is_inplace


def autograd_kernels_cpp(ops: list[Op]) -> str:
    op_names = {op.name for op in ops}
    ops_by_name: dict[str, list[Op]] = {}
    for o in ops:
        ops_by_name.setdefault(o.name, []).append(o)
    nodes, kernels, registrations = [], [], []
    for op in ops:
        # Ops whose formulas kiln cannot generate yet keep the Autograd fallback
        # (Note [Ops without formulas]): multi-output ops, in-place ops reading
        # self, formulas needing a helper not written yet.
        if not op.derivatives or not _supported(op) or not _translatable(op, op_names):
            continue
        if (_reads_overwritten_self(op, op_names) and "clone" not in op_names) or not _helpers_available(op, op_names):
            continue
        nodes.append(_node(op, node_struct(op), display_name(op, ops), op_names))
        kernels.append(_kernel(op, node_struct(op), op_names, ops_by_name))
        registrations.append(f'  m.impl("{op.full_name}", &{struct_name(op)}_autograd);')
    return (HEADER.format(what=" (Autograd kernels)") +
            '#include "eager/autograd/AutogradMeta.h"\n#include "eager/autograd/Engine.h"\n'
            '#include "eager/autograd/FormulaHelpers.h"\n#include "eager/autograd/GradMode.h"\n'
            '#include "eager/autograd/SavedVariable.h"\n#include "eager/autograd/ViewAutograd.h"\n'
            '#include "eager/dispatch/Library.h"\n'
            '#include "kiln/generated/Functions.h"\n\n'
            "namespace kiln::autograd::generated {\n\nnamespace {\n\n" + "\n".join(nodes) + "\n" +
            "\n".join(kernels) + "\n}  // namespace\n\n"
            "KILN_LIBRARY_IMPL(kiln, Autograd, m) {\n" + "\n".join(registrations) + "\n}\n\n"
            "}  // namespace kiln::autograd::generated\n")


def _differentiable(op: Op) -> list[str]:
    """The Tensor inputs with formulas, in schema order: the node's outputs."""
    return [a.name for a in op.schema.arguments if a.name in op.derivatives]


def _translate(op: Op, op_names: set[str]) -> tuple[list[str], set[str]]:
    """The C++ of each formula (in node-output order) and the names they read."""
    tensor_args = {a.name for a in op.schema.arguments if a.type.base == "Tensor"}
    codes, used = [], set()
    for inp in _differentiable(op):
        tr = _Translator(op, tensor_args, op_names)
        codes.append(tr.expr(ast.parse(op.derivatives[inp].strip(), mode="eval").body))
        used |= tr.used
    return codes, used


def _translatable(op: Op, op_names: set[str]) -> bool:
    """Formulas using syntax the translator does not handle yet (conditional
    expressions, ...) leave the op on the fallback."""
    try:
        _, used = _translate(op, op_names)
    except OpgenError:
        return False
    # A list return's own values are not saved (no formula needs them yet).
    return not (_returns_list(op) and "result" in used)


def _helpers_available(op: Op, op_names: set[str]) -> bool:
    for formula in op.derivatives.values():
        for node in ast.walk(ast.parse(formula.strip(), mode="eval")):
            name = None
            if isinstance(node, ast.Call):
                name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if name in HELPERS and name not in IMPLEMENTED_HELPERS:
                return False
    return True


def _reads_overwritten_self(op: Op, op_names: set[str]) -> bool:
    """In-place ops whose formulas read `self` would need its value (or
    geometry) from before the op; until that is saved separately, such ops
    get the Autograd fallback (a NotImplemented node) instead of a kernel."""
    if not op.schema.is_inplace:
        return False
    try:
        _, used = _translate(op, op_names)
    except OpgenError:
        return True  # untranslatable: the fallback serves it either way
    return op.schema.arguments[0].name in used


def _node(op: Op, name: str, shown_name: str, op_names: set[str]) -> str:
    params = {a.name: p for a, p in zip(op.schema.arguments, dispatcher_params(op))}
    codes, used = _translate(op, op_names)
    fields, unpack, release = [], [], []
    for a in op.schema.arguments:
        if a.name not in used:
            continue
        v = identifier(a.name)
        if a.type.base == "Tensor" and a.type.is_list:
            # Tensor[] and Tensor?[]: one SavedVariable each (undefined for a missing one).
            element = "std::optional<Tensor>" if a.type.element_optional else "Tensor"
            fields.append(f"  std::vector<SavedVariable> {v}_;")
            if a.type.element_optional:
                get = f"s.defined() ? std::optional<Tensor>(s.unpack(shared_from_this())) : std::nullopt"
            else:
                get = "s.unpack(shared_from_this())"
            unpack.append(f"    std::vector<{element}> {v};\n    for (const SavedVariable& s : {v}_) {v}.push_back({get});")
            release.append(f"    {v}_.clear();")
        elif a.type.base == "Tensor" and a.type.optional:
            fields.append(f"  SavedVariable {v}_;")
            unpack.append(f"    const std::optional<Tensor> {v} = {v}_.defined() ? "
                          f"std::optional<Tensor>({v}_.unpack(shared_from_this())) : std::nullopt;")
            release.append(f"    {v}_.reset();")
        elif a.type.base == "Tensor":
            fields.append(f"  SavedVariable {v}_;")
            unpack.append(f"    const Tensor {v} = {v}_.unpack(shared_from_this());")
            release.append(f"    {v}_.reset();")
        else:
            fields.append(f"  {_storage_type(params[a.name].type)} {v}{{}};")
    for u in sorted(u for u in used if "." in u):
        arg, attr = u.split(".")
        fields.append(f"  {_ACCESSOR_TYPES[attr]} {identifier(arg)}_{attr}_{{}};")
    for r in _result_names(op):
        if r in used:
            fields.append(f"  SavedVariable {r}_;")
            unpack.append(f"    const Tensor {r} = {r}_.unpack(shared_from_this());")
            release.append(f"    {r}_.reset();")
    list_inputs = {a.name for a in op.schema.arguments if a.type.is_list}
    diff = _differentiable(op)
    if not list_inputs & set(diff):
        bodies = []
        done: set[int] = set()
        for g, outs in enumerate(_shared_calls(op).values()):
            # Note [One backward op for several inputs]: the call once, its elements to each output.
            first = codes[outs[0]]
            call = first[first.index("(") + 1:-1]
            wanted = " || ".join(f"should_compute_output({i})" for i in outs)
            bodies.append(f"    if ({wanted}) {{\n      const auto shared{g} = {call};")
            for i in outs:
                element = codes[i][len("std::get<"):codes[i].index(">")]
                bodies.append(f"      if (should_compute_output({i})) out[{i}] = std::get<{element}>(shared{g});")
            bodies.append("    }")
            done.update(outs)
        bodies += [f"    if (should_compute_output({i})) out[{i}] = {code};" for i, code in enumerate(codes)
                   if i not in done]
        out_size = str(len(codes))
    else:
        # Note [Tensor[] inputs]: a Tensor[] input takes one edge per element, in
        # order; its formula returns the list of their gradients.
        bodies = ["    size_t slot = 0;"]
        for inp, code in zip(diff, codes):
            if inp in list_inputs:
                n = f"{identifier(inp)}_count_"
                fields.append(f"  size_t {n} = 0;")
                bodies.append(f"    {{\n      bool wanted = false;\n"
                              f"      for (size_t k = 0; k < {n}; ++k) wanted = wanted || should_compute_output(slot + k);\n"
                              f"      if (wanted) {{\n        std::vector<Tensor> g = {code};\n"
                              f"        for (size_t k = 0; k < {n} && k < g.size(); ++k) out[slot + k] = g[k];\n"
                              f"      }}\n      slot += {n};\n    }}")
            else:
                bodies.append(f"    if (should_compute_output(slot)) out[slot] = {code};\n    slot += 1;")
        out_size = "num_outputs()"
    grad = "    const Tensor& grad = grads[0];\n" if "grad" in used else ""
    if "grads" in used and len(op.schema.returns) > 1:
        # See Note [Several outputs]: a formula may read the gradient of an
        # output nothing downstream used; it arrives undefined and is read as zeros.
        # Only the gradients the formulas read are filled in (an op's workspace outputs are never read).
        read = sorted({i for f in op.derivatives.values() for i in _zero_filled_grads(f)})
        grad = ("    for (size_t i : {" + ", ".join(f"size_t{{{i}}}" for i in read) + "}) {\n"
                "      if (!grads[i].defined()) {\n"
                "        const InputMetadata& m = input_metadata(i);\n"
                "        grads[i] = kiln::zeros(m.shape, m.dtype, m.device);\n"
                "      }\n    }\n") if read else ""
    return (f"struct {name} final : Node {{\n" + "".join(f + "\n" for f in fields) +
            f"  variable_list apply(variable_list&& grads) override {{\n{grad}" +
            "".join(u + "\n" for u in unpack) +
            f"    variable_list out({out_size});\n" + "".join(b + "\n" for b in bodies) +
            "    return out;\n  }\n"
            f"  std::string name() const override {{ return \"{shown_name}\"; }}\n"
            "  void release_variables() override {\n" + "".join(r + "\n" for r in release) + "  }\n};\n")


# Helpers that take an output's gradient as it arrives, undefined when nothing used that output (so a
# gradient nothing asked for costs nothing): the formula's grads[i] passed straight to them is not
# filled with zeros (Note [Several outputs]).
READS_UNDEFINED_GRADS = {"native_group_norm_backward", "svd_backward"}


def _zero_filled_grads(formula: str) -> set[int]:
    """The i of each grads[i] the formula reads, but those only passed straight to a READS_UNDEFINED_GRADS helper."""
    tree = ast.parse(formula.strip(), mode="eval")
    passed_as_is = {id(arg) for node in ast.walk(tree)
                    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in READS_UNDEFINED_GRADS for arg in node.args}
    return {node.slice.value for node in ast.walk(tree)
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "grads"
            and isinstance(node.slice, ast.Constant) and id(node) not in passed_as_is}


def _result_names(op: Op) -> list[str]:
    """The names formulas use for the op's outputs: result, or result0, result1, ..."""
    n = len(op.schema.returns)
    return ["result"] if n == 1 else [f"result{i}" for i in range(n)]


def _saved_value(param_type: str, v: str) -> str:
    if "IntArrayRef" in param_type:
        if "optional" in param_type:
            return f"{v} ? std::optional<DimVector>(DimVector(*{v})) : std::nullopt"
        return f"DimVector({v})"
    if "string_view" in param_type:
        if "optional" in param_type:
            return f"{v} ? std::optional<std::string>(std::string(*{v})) : std::nullopt"
        return f"std::string({v})"
    return v


def _is_inplace_view(op: Op, ops_by_name: dict[str, list[Op]]) -> bool:
    """transpose_, squeeze_, as_strided_, ...: in-place ops whose functional
    form is a view op; they change the tensor's geometry, not its values."""
    return any("view" in o.tags for o in ops_by_name.get(op.name.rstrip("_"), []))


def _kernel(op: Op, name: str, op_names: set[str], ops_by_name: dict[str, list[Op]]) -> str:
    params = dispatcher_params(op)
    by_arg = {a.name: p for a, p in zip(op.schema.arguments, params)}
    _, used = _translate(op, op_names)
    outputs = _differentiable(op)
    decl = ", ".join(f"{p.type} {p.name}" for p in params)
    lines = [f"{return_type(op)} {struct_name(op)}_autograd(DispatchKeySet keys, {decl}) {{"]
    lines.append(f"  const bool needs_grad = {' || '.join(f'requires_grad({identifier(n)})' for n in outputs)};")
    if op.schema.is_inplace:
        lines.append(f"  check_inplace({identifier(op.schema.arguments[0].name)}, needs_grad);")
    lines.append(f"  std::shared_ptr<{name}> grad_fn;")
    lines.append("  if (needs_grad) {")
    lines.append(f"    grad_fn = std::make_shared<{name}>();")
    optional_args = {a.name for a in op.schema.arguments if a.type.optional}

    def address(n: str) -> str:
        v = identifier(n)
        return f"({v} ? &*{v} : nullptr)" if n in optional_args else f"&{v}"

    list_args = {a.name for a in op.schema.arguments if a.type.is_list}
    if list_args & set(outputs):
        lines.append("    std::vector<Edge> edges;")
        for n in outputs:
            lines.append(f"    append_next_edges(edges, {identifier(n)});")
            if n in list_args:
                lines.append(f"    grad_fn->{identifier(n)}_count_ = {identifier(n)}.size();")
        lines.append("    grad_fn->set_next_edges(std::move(edges));")
    else:
        lines.append(f"    grad_fn->set_next_edges(collect_next_edges({{{', '.join(address(n) for n in outputs)}}}));")
    lines.append("    record_forward_trace(*grad_fn);")
    self_name = op.schema.arguments[0].name if op.schema.is_inplace else None
    for a in op.schema.arguments:
        if a.name not in used:
            continue
        v = identifier(a.name)
        if a.name == self_name:
            # The op overwrites self, and the formulas read its old value: keep a
            # copy, made through the dispatcher so higher-order gradients see it.
            lines.append(f"    grad_fn->{v}_ = SavedVariable(kiln::clone({v}), false);")
        elif a.type.base == "Tensor" and a.type.is_list:
            get = "t ? *t : Tensor()" if a.type.element_optional else "t"
            lines.append(f"    for (const auto& t : {v}) grad_fn->{v}_.emplace_back({get}, false);")
        elif a.type.base == "Tensor" and a.type.optional:
            lines.append(f"    grad_fn->{v}_ = SavedVariable({v} ? *{v} : Tensor(), false);")
        elif a.type.base == "Tensor":
            lines.append(f"    grad_fn->{v}_ = SavedVariable({v}, false);")
        else:
            lines.append(f"    grad_fn->{v} = {_saved_value(by_arg[a.name].type, v)};")
    for u in sorted(u for u in used if "." in u):
        arg, attr = u.split(".")
        value = f"{identifier(arg)}.{attr}()"
        lines.append(f"    grad_fn->{identifier(arg)}_{attr}_ = {'DimVector(' + value + ')' if attr in ('sizes', 'strides') else value};")
    lines.append("  }")
    call = f"ops::{struct_name(op)}::redispatch(keys.below(DispatchKey::Autograd), {', '.join(p.name for p in params)})"
    n = len(op.schema.returns)
    lines.append(f"  {return_type(op)} result;")
    lines.append("  {")
    lines.append("    ExcludeDispatchKeyGuard below_autograd(DispatchKey::Autograd);")
    lines.append(f"    result = {call};")
    lines.append("  }")
    lines.append("  if (grad_fn) {")
    if _returns_list(op):
        lines.append("    for (const Tensor& r : result) set_history(r, grad_fn);")
    elif n == 1:
        # See Note [In-place through a view: CopySlices] (eager/autograd/ViewAutograd.h);
        # in-place view ops (transpose_, ...) change geometry, not values: plain history.
        rebase = op.schema.is_inplace and not _is_inplace_view(op, ops_by_name)
        lines.append(f"    {'rebase_history' if rebase else 'set_history'}(result, grad_fn);")
        if "result" in used:
            lines.append("    grad_fn->result_ = SavedVariable(result, true);")
    else:
        # Note [Several outputs]: every output takes its input slot on the node, in
        # return order, so grads[i] is output i's gradient; only floating-point
        # outputs get the history (indices and masks are not differentiable).
        for i in range(n):
            lines.append(f"    set_history_if_differentiable(std::get<{i}>(result), grad_fn);")
        for i, r in enumerate(_result_names(op)):
            if r in used:
                lines.append(f"    grad_fn->{r}_ = SavedVariable(std::get<{i}>(result), is_differentiable_dtype(std::get<{i}>(result).dtype()));")
    lines.append("  }")
    if "view" in op.tags:
        # See Note [Views know their base] (eager/autograd/ViewAutograd.h).
        self_arg = identifier(op.schema.arguments[0].name)
        multi = "true" if _returns_list(op) else "false"
        if _returns_list(op):
            lines.append(f"  for (const Tensor& r : result) note_view({self_arg}, r, grad_fn != nullptr, {multi});")
        else:
            lines.append(f"  note_view({self_arg}, result, grad_fn != nullptr, {multi});")
    lines.append("  return result;\n}\n")
    return "\n".join(lines)
