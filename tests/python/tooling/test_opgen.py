"""tools/opgen on small ops.yaml snippets: the schema parser, the entry checks,
the derivative checks, the C++ signatures and the Python signatures it derives,
and its command line. Every error must stop generation naming the op and the reason."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest
from opgen_text import error_of, generate, load_opgen

ROOT = Path(__file__).resolve().parents[3]
OPGEN = ROOT / "tools" / "opgen"


opgen = load_opgen()
model, derivatives, cpp, python_bindings = (sys.modules[name] for name in ("model", "derivatives", "cpp", "python_bindings"))
OpgenError = model.OpgenError

ADD = """
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  variants: function, method
  dispatch:
    CPU: add_cpu
  tags: [pointwise]
  derivatives:
    self: grad
    other: maybe_multiply(grad, alpha)

- func: add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
  variants: function, method
  dispatch:
    CPU: add_scalar_cpu
  tags: [pointwise]

- func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: add_out_cpu
"""


def entry(func: str, extra: str = "  dispatch:\n    CPU: k_cpu\n") -> str:
    return f"- func: {func}\n{extra}"


# --- the schema parser: a mirror of eager/dispatch/FunctionSchema.cpp ------------

ROUND_TRIP = [
    "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
    "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
    "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
    "index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
    "cat(Tensor[] tensors, int dim=0) -> Tensor",
    "unbind.int(Tensor(a) self, int dim=0) -> Tensor(a)[]",
    "conv(Tensor input, int[2] stride=1, str padding=\"valid\") -> Tensor",
    "empty(SymInt[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor",
    "_foreach(Tensor[] self) -> ()",
    "norm(Tensor self, Scalar? p=2, float eps=1e-05) -> Tensor",
]


@pytest.mark.parametrize("schema", ROUND_TRIP)
def test_schemas_round_trip(schema):
    assert str(model.parse_schema(schema)) == schema


def test_schema_parts():
    s = model.parse_schema("sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor")
    assert (s.name, s.overload, s.full_name) == ("sum", "dim_IntList", "sum.dim_IntList")
    assert s.arguments[1].type == model.Type("int", is_list=True, size=1, optional=True)
    assert s.arguments[3].kwarg_only and s.arguments[3].default == "None"
    out = model.parse_schema("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)")
    assert [a.name for a in out.out_arguments] == ["out"]
    assert model.parse_schema("add_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)").is_inplace
    # Spacing is not significant; the printed form is canonical.
    assert str(model.parse_schema("f( Tensor  self ,int x = 3 )->Tensor")) == "f(Tensor self, int x=3) -> Tensor"


@pytest.mark.parametrize("schema, message", [
    ("f(Tnsor self) -> Tensor", "unknown type 'Tnsor' at column 7"),  # the column after the name, as in C++
    ("f(Tensor self, *, int a, *, int b) -> Tensor", "'*' appears twice"),
    ("f(Tensor self, int self) -> Tensor", "duplicate argument name 'self'"),
    ("f(Tensor self) Tensor", "expected '->'"),
    ("f(Tensor self) -> Tensor out junk", "unexpected text after the returns"),
    ("f(int[x] a) -> Tensor", "list size must be a number"),
    ("aten::f(Tensor self) -> Tensor", "take no namespace"),
])
def test_schema_errors_name_the_problem(schema, message):
    with pytest.raises(OpgenError) as info:
        model.parse_schema(schema)
    assert message in str(info.value)
    assert schema in str(info.value)


# --- good entries ---------------------------------------------------------------------


def test_a_good_file_generates_every_output():
    files = generate(ADD)
    assert tuple(files) == opgen.OUTPUT_FILES
    h = files["Functions.h"]
    assert "[[nodiscard]] Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);" in h
    assert "[[nodiscard]] Tensor add(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);" in h
    # out= functions take out first, as at::add_out.
    assert "Tensor add_out(const Tensor& out, const Tensor& self, const Tensor& other, const Scalar& alpha = 1);" in h
    assert 'find_schema_or_throw("kiln::add", "Tensor").typed<schema>()' in files["Functions.cpp"]
    assert "Tensor add(const Tensor& other, const Scalar& alpha = 1) const;" in files["TensorMethodDecls.inc"]
    assert "add_out(" not in files["TensorMethodDecls.inc"]
    assert "Tensor add_cpu(const Tensor& self, const Tensor& other, const Scalar& alpha);" in files["NativeFunctions.h"]
    reg = files["RegisterOps.cpp"]
    assert 'm.def("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", {"pointwise"});' in reg
    # Note [Kernels that refuse complex tensors]: an op neither a view nor tagged complex refuses them.
    assert 'm.impl("add.out", &native::RealOnly<&native::add_out_cpu, kadd_out_name>::call);' in reg
    assert 'constexpr char kadd_out_name[] = "add";' in reg
    assert "BackendSelect" not in reg  # no factories here
    table = files["OpTable.cpp"]
    assert '{"other", 1, "maybe_multiply(grad, alpha)"}' in table
    assert "static_assert(std::size(kOps) == 3" in table


def test_ops_tagged_complex_register_their_kernels_directly():
    tagged = ADD.replace("tags: [pointwise]", "tags: [pointwise, complex]")
    assert "complex" in tagged
    reg = generate(tagged)["RegisterOps.cpp"]
    assert "RealOnly<&native::add_cpu," not in reg
    assert 'm.impl("add.Tensor", &native::add_cpu);' in reg


def test_types_map_to_cpp():
    files = generate(entry("f(Tensor self, Tensor? w, Tensor[] ts, Tensor?[] idx, int i, SymInt s, int[] l, int[2] l2, "
                           "int[]? ol, int? oi, float x, bool b, str mode, Scalar v, Scalar? ov, ScalarType? dt, "
                           "Device? dev) -> (Tensor, Tensor)"))
    assert ("std::tuple<Tensor, Tensor> f(const Tensor& self, const std::optional<Tensor>& w, TensorList ts, "
            "OptionalTensorList idx, int64_t i, int64_t s, IntArrayRef l, IntArrayRef l2, std::optional<IntArrayRef> ol, "
            "std::optional<int64_t> oi, double x, bool b, std::string_view mode, const Scalar& v, "
            "const std::optional<Scalar>& ov, std::optional<DType> dt, std::optional<Device> dev);") in files["Functions.h"]
    files = generate(entry("g(Tensor self, int[2] k=1, str mode=\"mean\", float eps=1e-05) -> Tensor[]"))
    assert ('std::vector<Tensor> g(const Tensor& self, IntArrayRef k = {1, 1}, std::string_view mode = "mean", '
            "double eps = 1e-05);") in files["Functions.h"]
    assert "void h(const Tensor& self);" in generate(entry("h(Tensor self) -> ()"))["Functions.h"]


def test_memory_format_maps_to_cpp_and_python():
    files = generate(entry("f(Tensor self, *, MemoryFormat memory_format=contiguous_format, "
                           "MemoryFormat? other=None) -> Tensor"))
    assert ("Tensor f(const Tensor& self, MemoryFormat memory_format = MemoryFormat::Contiguous, "
            "std::optional<MemoryFormat> other = std::nullopt);") in files["Functions.h"]
    assert "r.memory_format(1)" in files["python_functions.cpp"]
    assert "r.memory_format_optional(2)" in files["python_functions.cpp"]


def test_list_returns_name_their_gradients_grads():
    ops = model.load_ops(entry("s(Tensor self, int n) -> Tensor[]",
                               "  dispatch:\n    CPU: s_cpu\n  derivatives:\n    self: cat(grads, 0)\n") +
                         entry("cat(Tensor[] tensors, int dim=0) -> Tensor"))
    derivatives.check(ops)
    assert ops[0].parsed_derivatives[0].names == ("grads",)


def test_overloads_that_would_be_ambiguous_lose_defaults():
    files = generate(entry("r.start(Scalar start, Scalar end, *, ScalarType? dtype=None) -> Tensor") +
                     entry("r.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None) -> Tensor",
                           "  dispatch:\n    CPU: r_step_cpu\n"))
    h = files["Functions.h"]
    assert "Tensor r(const Scalar& start, const Scalar& end, std::optional<DType> dtype = std::nullopt);" in h
    assert "Tensor r(const Scalar& start, const Scalar& end, const Scalar& step, std::optional<DType> dtype = std::nullopt);" in h


def test_generator_and_memory_format_map_to_cpp_and_python():
    files = generate(entry("f(Tensor self, *, Generator? generator=None, MemoryFormat? memory_format=None) -> Tensor"))
    assert ("Tensor f(const Tensor& self, const std::optional<Generator>& generator = std::nullopt, "
            "std::optional<MemoryFormat> memory_format = std::nullopt);") in files["Functions.h"]
    assert "r.generator_optional(1)" in files["python_functions.cpp"]
    assert "r.memory_format_optional(2)" in files["python_functions.cpp"]


def test_tensor_options_ops_take_the_factory_keywords_and_fold_their_out_forms():
    text = (entry("r(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor",
                  "  dispatch:\n    CPU: r_cpu\n  tags: [factory]\n") +
            entry("r.out(int[] size, *, Tensor(a!) out) -> Tensor(a!)", "  dispatch:\n    CPU: r_out_cpu\n") +
            entry("r_like(Tensor self, *, ScalarType? dtype=None, Device? device=None) -> Tensor",
                  "  dispatch:\n    CPU: r_like_cpu\n"))
    groups = python_bindings.function_groups(model.load_ops(text))
    assert [s.text("r") for s in groups["r"]] == [
        "r(IntArrayRef size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=False, Tensor out=None, bool requires_grad=False)"]
    assert [s.text("r_like") for s in groups["r_like"]] == [
        "r_like(Tensor input, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=False, bool requires_grad=False)"]
    binding = generate(text)["python_functions.cpp"]
    assert "check_out_type_matches(out, dtype, device);" in binding


MAKE = entry("make(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor",
             "  dispatch:\n    CPU: make_cpu\n  tags: [factory]\n")


def test_factories_get_a_backend_select_kernel():
    reg = generate(MAKE)["RegisterOps.cpp"]
    assert "keys.below(DispatchKey::BackendSelect) | DispatchKeySet(backend_key(device.value_or(Device()).type()))" in reg
    assert "KILN_LIBRARY_IMPL(kiln, BackendSelect, m)" in reg
    assert 'm.impl("make", &make_backend_select);' in reg
    sig = python_bindings.function_groups(model.load_ops(MAKE))["make"][0]
    assert sig.text("make") == ("make(IntArrayRef size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
                                "bool? pin_memory=False, bool requires_grad=False)")


def test_composite_kernels_register_in_the_def_library():
    reg = generate(entry("twice(Tensor self) -> Tensor", "  dispatch:\n    CompositeImplicit: twice\n"))["RegisterOps.cpp"]
    assert 'm.def("twice(Tensor self) -> Tensor");\n  m.impl("twice", &native::twice);' in reg
    assert "KILN_LIBRARY_IMPL(kiln, CPU" not in reg


def test_python_signatures_merge_overloads_tensor_first_and_fold_out():
    scalar_first = "\n".join(reversed(ADD.split("\n\n")))  # add.out, add.Scalar, then add.Tensor
    ops = model.load_ops(scalar_first)
    assert [op.full_name for op in ops] == ["add.out", "add.Scalar", "add.Tensor"]
    functions = python_bindings.function_groups(ops)
    assert [s.text("add") for s in functions["add"]] == [
        "add(Tensor input, Tensor other, *, Scalar alpha=1, Tensor out=None)",
        "add(Tensor input, Scalar other, Scalar alpha=1)|hidden",  # as torch, which binds no add.Scalar
    ]
    methods = python_bindings.method_groups(ops)
    assert [s.text("add") for s in methods["add"]] == ["add(Tensor other, *, Scalar alpha=1)",
                                                     "add(Scalar other, Scalar alpha=1)|hidden"]


def test_the_op_table_lists_every_tag_bit():
    h = generate(ADD)["OpTable.h"]
    for i, tag in enumerate(model.TAGS):
        assert f"inline constexpr uint32_t {cpp.tag_constant(tag)} = 1u << {i};" in h


def test_the_helper_list_is_one_documented_table():
    for name in ("maybe_multiply", "zeros_like", "sum_to", "to", "reshape"):
        assert "autograd issue" in derivatives.HELPERS[name]
    for name in ("sizes", "dtype"):
        assert "Tensor::" in derivatives.HELPERS[name]


def test_formulas_may_use_args_results_ops_helpers_and_arithmetic():
    ops = model.load_ops(textwrap.dedent(ADD) + entry(
        "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
        "  dispatch:\n    CPU: max_cpu\n  derivatives:\n"
        "    self: zeros_like(self).add(grads[0] * 2.0 - result1 / -1, alpha=1) if keepdim else sum_to(grads[0], self.sizes())\n"))
    derivatives.check(ops)
    d = ops[-1].parsed_derivatives[0]
    assert (d.input, d.input_index) == ("self", 0)
    assert set(d.names) == {"self", "grads", "result1", "keepdim"}


# --- each error stops generation with the op, the input and the reason ---------------------

ERRORS = [
    ("unknown type", entry("f(Tensor self, Tnsor other) -> Tensor"), ["f(Tensor self, Tnsor other)", "unknown type 'Tnsor'"]),
    ("type without a C++ mapping", entry("f(Tensor self, Layout? layout) -> Tensor"),
     ["f: argument 'layout'", "Layout? has no C++ mapping"]),
    ("derivative key not an input", entry("f(Tensor self) -> Tensor", "  dispatch:\n    CPU: f_cpu\n  derivatives:\n    bogus: grad\n"),
     ["f", "derivative for 'bogus'", "not an input of f(Tensor self) -> Tensor"]),
    ("derivative key not a tensor", entry("f(Tensor self, Scalar alpha) -> Tensor", "  dispatch:\n    CPU: f_cpu\n  derivatives:\n    alpha: grad\n"),
     ["f", "derivative for 'alpha'", "Scalar, not a differentiable Tensor input"]),
    ("unknown name in a formula", entry("f(Tensor self) -> Tensor", "  dispatch:\n    CPU: f_cpu\n  derivatives:\n    self: grad * other\n"),
     ["f", "derivative for 'self'", "unknown name 'other'"]),
    ("unknown function in a formula", entry("f(Tensor self) -> Tensor", "  dispatch:\n    CPU: f_cpu\n  derivatives:\n    self: frobnicate(grad)\n"),
     ["f", "derivative for 'self'", "unknown function 'frobnicate'"]),
    ("unknown method in a formula", entry("f(Tensor self) -> Tensor", "  dispatch:\n    CPU: f_cpu\n  derivatives:\n    self: grad.frobnicate()\n"),
     ["f", "derivative for 'self'", "unknown method or attribute '.frobnicate'"]),
    ("formula syntax error", entry("f(Tensor self) -> Tensor", "  dispatch:\n    CPU: f_cpu\n  derivatives:\n    self: grad * (2\n"),
     ["f", "derivative for 'self'", "syntax error in 'grad * (2'"]),
    ("unsupported formula syntax", entry("f(Tensor self) -> Tensor", "  dispatch:\n    CPU: f_cpu\n  derivatives:\n    self: '[g for g in grad]'\n"),
     ["f", "derivative for 'self'", "unsupported syntax (ListComp)"]),
    ("grad with several returns", entry("f(Tensor self) -> (Tensor, Tensor)", "  dispatch:\n    CPU: f_cpu\n  derivatives:\n    self: grad\n"),
     ["f", "unknown name 'grad'", "grads[i] is for ops with several returns"]),
    ("grads index out of range", entry("f(Tensor self) -> (Tensor, Tensor)", "  dispatch:\n    CPU: f_cpu\n  derivatives:\n    self: grads[2]\n"),
     ["f", "grads[i] needs a constant index below 2"]),
    ("duplicate overload", ADD + entry("add.Tensor(Tensor self, Tensor other) -> Tensor"),
     ["add.Tensor", "duplicate overload (first defined at line 2)"]),
    ("missing dispatch", "- func: f(Tensor self) -> Tensor\n", ["f", "missing dispatch"]),
    ("unknown dispatch key", entry("f(Tensor self) -> Tensor", "  dispatch:\n    GPU: f_gpu\n"), ["f", "unknown dispatch key 'GPU'"]),
    ("kernel name not an identifier", entry("f(Tensor self) -> Tensor", "  dispatch:\n    CPU: f-cpu\n"), ["f", "C++ identifier"]),
    ("unknown tag", entry("f(Tensor self) -> Tensor", "  dispatch:\n    CPU: f_cpu\n  tags: [pointwize]\n"), ["f", "unknown tag 'pointwize'"]),
    ("unknown key", entry("f(Tensor self) -> Tensor", "  dispatch:\n    CPU: f_cpu\n  variant: method\n"), ["f", "unknown key(s) variant"]),
    ("method without self", entry("f(int n) -> Tensor", "  variants: method\n  dispatch:\n    CPU: f_cpu\n"),
     ["f", "needs 'Tensor self'"]),
    ("factory with a tensor", entry("f(Tensor self, *, Device? device=None) -> Tensor", "  dispatch:\n    CPU: f_cpu\n  tags: [factory]\n"),
     ["f", "a factory takes no tensor arguments"]),
    ("factory without device", entry("f(int n) -> Tensor", "  dispatch:\n    CPU: f_cpu\n  tags: [factory]\n"),
     ["f", "no 'Device? device' argument"]),
    ("inplace tag on a functional op", entry("f(Tensor self) -> Tensor", "  dispatch:\n    CPU: f_cpu\n  tags: [inplace]\n"),
     ["f", "tagged inplace"]),
    ("out= without a functional overload", entry("g.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)"),
     ["g.out", "needs a function-variant overload"]),
    ("one kernel for two C++ signatures", entry("f(Tensor self) -> Tensor", "  dispatch:\n    CPU: same\n") +
     entry("g(Tensor self, int n) -> Tensor", "  dispatch:\n    CPU: same\n"), ["g", "kernel 'same'"]),
    ("not a list", "func: f(Tensor self) -> Tensor\n", ["expected a list of entries"]),
]


@pytest.mark.parametrize("case, text, parts", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_name_the_op_and_the_reason(case, text, parts):
    message = error_of(text)
    for part in parts:
        assert part in message, message


def test_errors_carry_the_line_of_the_entry():
    message = error_of(ADD + entry("f(Tensor self) -> Tensor", "  dispatch:\n    CPU: f_cpu\n  derivatives:\n    x: grad\n"))
    line = ADD.count("\n") + 1
    assert message.startswith(f"ops.yaml:{line}: f: derivative for 'x'"), message


# --- the command line --------------------------------------------------------------------


def test_cli_writes_only_changed_files(tmp_path, capsys):
    yaml_path = tmp_path / "ops.yaml"
    yaml_path.write_text(textwrap.dedent(ADD))
    out = tmp_path / "gen"
    assert opgen.main(["--yaml", str(yaml_path), "--out", str(out)]) == 0
    files = sorted(p.name for p in (out / "kiln" / "generated").iterdir())
    assert files == sorted(opgen.OUTPUT_FILES)
    stamp = {p.name: p.stat().st_mtime_ns for p in (out / "kiln" / "generated").iterdir()}
    os.utime(out / "kiln" / "generated" / "Functions.h", ns=(1, 1))
    assert opgen.main(["--yaml", str(yaml_path), "--out", str(out)]) == 0
    assert (out / "kiln" / "generated" / "Functions.h").stat().st_mtime_ns == 1  # unchanged content: not rewritten
    assert (out / "kiln" / "generated" / "OpTable.cpp").stat().st_mtime_ns == stamp["OpTable.cpp"]

    yaml_path.write_text("- func: f(Tensor self) -> Tensor\n")
    assert opgen.main(["--yaml", str(yaml_path), "--out", str(out)]) == 1
    assert f"opgen: error: {yaml_path}:1: f: missing dispatch" in capsys.readouterr().err


def test_the_real_ops_yaml_generates():
    files = opgen.generate((ROOT / "eager" / "ops" / "ops.yaml").read_text())
    assert "KILN_LIBRARY_IMPL(kiln, BackendSelect, m)" in files["RegisterOps.cpp"]
    assert "init_generated_functions" in files["python_functions.cpp"]
    assert "register_generated_tensor_methods" in files["python_methods.cpp"]


def test_formulas_sharing_one_tuple_call_evaluate_it_once():
    # Note [One backward op for several inputs] (tools/opgen/autograd.py).
    text = (entry("f(Tensor a, Tensor b, Tensor c) -> Tensor",
                  "  dispatch:\n    CPU: f_cpu\n  derivatives:\n"
                  "    a: f_backward(grad, a, b)[0]\n    b: f_backward(grad, a, b)[1]\n    c: grad\n") +
            entry("f_backward(Tensor g, Tensor a, Tensor b) -> (Tensor, Tensor)",
                  "  dispatch:\n    CPU: f_backward_cpu\n"))
    code = generate(text)["AutogradKernels.cpp"]
    assert code.count("kiln::f_backward(") == 1, code
    assert "if (should_compute_output(0) || should_compute_output(1)) {" in code
    assert "const auto shared0 = kiln::f_backward(grad, a, b);" in code
    assert "if (should_compute_output(0)) out[0] = std::get<0>(shared0);" in code
    assert "if (should_compute_output(1)) out[1] = std::get<1>(shared0);" in code
    assert "if (should_compute_output(2)) out[2] = grad;" in code
    # One input alone picking an element: a plain std::get of the call.
    single = generate(entry("f(Tensor a, Tensor b) -> Tensor",
                            "  dispatch:\n    CPU: f_cpu\n  derivatives:\n    a: f_backward(grad, a, b)[1]\n") +
                      entry("f_backward(Tensor g, Tensor a, Tensor b) -> (Tensor, Tensor)",
                            "  dispatch:\n    CPU: f_backward_cpu\n"))["AutogradKernels.cpp"]
    assert "if (should_compute_output(0)) out[0] = std::get<1>(kiln::f_backward(grad, a, b));" in single
