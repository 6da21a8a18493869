"""opgen's `out_from_functional` out= forms (tools/opgen/out_from_functional.py,
Note [Out= forms from the functional op]): the entry point runs the functional
overload and applies the named dtype rule. Runs the generator on small YAML
texts; needs no build."""

from __future__ import annotations

from opgen_text import error_of, generate

MM = """
- func: mm(Tensor self, Tensor mat2) -> Tensor
  dispatch:
    CPU: mm_cpu

- func: mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: mm_out_cpu
  out_from_functional: out_exact_dtype
"""

SORT = """
- func: sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)
  dispatch:
    CPU: sort_cpu

- func: sort.values(Tensor self, int dim=-1, bool descending=False, *, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)
  dispatch:
    CPU: sort_out_cpu
  out_from_functional: outs_pair
"""


def test_out_form_calls_the_functional_op_and_the_rule():
    text = generate(MM)["OutFromFunctional.cpp"]
    assert ("Tensor mm_out_cpu(const Tensor& self, const Tensor& mat2, const Tensor& out) {\n"
            '  return out_exact_dtype("mm", kiln::ops::mm::call(self, mat2), out);\n}') in text
    assert "mm_out_cpu" not in generate(MM)["IntoKernels.cpp"]


def test_two_outs_pass_their_names():
    text = generate(SORT)["OutFromFunctional.cpp"]
    assert ("std::tuple<Tensor, Tensor> sort_out_cpu(const Tensor& self, int64_t dim, bool descending, "
            "const Tensor& values, const Tensor& indices) {\n"
            '  return outs_pair("sort", kiln::ops::sort::call(self, dim, descending), values, "values", '
            'indices, "indices");\n}') in text


def test_unknown_rule_is_an_error():
    assert "out_from_functional must be one of" in error_of(MM.replace("out_exact_dtype", "out_whatever"))


def test_rule_needs_an_out_overload():
    text = """
    - func: mm(Tensor self, Tensor mat2) -> Tensor
      dispatch:
        CPU: mm_cpu
      out_from_functional: out_castable
    """
    assert "needs an out= overload" in error_of(text)


def test_rule_must_match_the_number_of_outs():
    assert "outs_pair writes 2 out(s), the op has 1" in error_of(MM.replace("out_exact_dtype", "outs_pair"))


def test_missing_functional_overload_is_an_error():
    text = MM.replace("- func: mm(Tensor self, Tensor mat2) -> Tensor", "- func: mm(Tensor self, Tensor other) -> Tensor")
    # the bindings' check (an out= overload folds into a functional one) or ours, whichever runs first
    assert "mm.out" in error_of(text)


SUM = """
- func: sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
  dispatch:
    CPU: sum_cpu

- func: sum.IntList_out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: sum_out_cpu
  out_from_functional: in_out_dtype
"""


def test_in_out_dtype_passes_the_compute_dtype_to_the_functional_op():
    text = generate(SUM)["OutFromFunctional.cpp"]
    assert ('  return out_castable("sum", kiln::ops::sum_dim_IntList::call(self, dim, keepdim, '
            'in_out_dtype("sum", dtype, out)), out);') in text


def test_in_out_dtype_needs_a_dtype_argument():
    assert "needs a 'ScalarType? dtype' argument" in error_of(MM.replace("out_exact_dtype", "in_out_dtype"))
