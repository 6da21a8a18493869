"""The generated out= entry points that run the functional overload and write
its result into `out`: OutFromFunctional.cpp.

Note [Out= forms from the functional op]
----------------------------------------
Many out= forms (the reductions, the matrix products, the ops returning two
tensors) compute nothing of their own: they call the functional overload (so
its input checks come first, in its words) and copy the result into `out`,
resized by resize_output's rules, after a check of out's dtype that differs
per op. An out= entry says so with `out_from_functional: <rule>`, and its
kernel (its one `dispatch:` entry) is written here as

    Tensor mm_out_cpu(const Tensor& self, const Tensor& mat2, const Tensor& out) {
      return out_exact_dtype("mm", kiln::ops::mm::call(self, mat2), out);
    }

The rule names a helper in eager/kernels/cpu/OutFromFunctional.h (RULES below
is the list, with what each checks); it takes the op's name (for messages),
the functional result and out. An entry with two outs uses `outs_pair`, which
also takes each out's name. The functional overload is the one of the same
name whose arguments are the entry's, less the outs, in the same order and of
the same types; none is an error. The `in_out_dtype` rules (sum, nansum, prod,
cumsum, cumprod) compute in out's dtype when dtype= is not given: the
functional call's `dtype` argument becomes `in_out_dtype("sum", dtype, out)`,
and the result is copied by out_castable."""

from __future__ import annotations

from cpp import HEADER, argument_type, identifier, return_type, struct_name
from model import OUT_FROM_FUNCTIONAL_RULES as RULES
from model import Op, OpgenError



def functional_of(op: Op, ops: list[Op]) -> Op:
    inputs = [(a.name, a.type) for a in op.schema.arguments if not a.is_out]
    for other in ops:
        if (other.name == op.name and not other.schema.out_arguments and not other.schema.is_inplace
                and [(a.name, a.type) for a in other.schema.arguments] == inputs):
            return other
    raise OpgenError(f"{op.label}: out_from_functional: no functional overload of {op.name} takes "
                     f"({', '.join(n for n, _ in inputs)})")


def _entry(op: Op, ops: list[Op]) -> str:
    rule = op.out_from_functional
    functional = functional_of(op, ops)
    outs = [identifier(a.name) for a in op.schema.out_arguments]
    if len(outs) != RULES[rule]:
        raise OpgenError(f"{op.label}: out_from_functional: {rule} writes {RULES[rule]} out(s), the op has {len(outs)}")
    (kernel,) = op.dispatch.values()
    params = ", ".join(f"{argument_type(a.type, op.label)} {identifier(a.name)}" for a in op.schema.arguments)
    names = [identifier(a.name) for a in functional.schema.arguments]
    if rule.startswith("in_out_dtype"):
        if "dtype" not in names:
            raise OpgenError(f"{op.label}: out_from_functional: {rule} needs a 'ScalarType? dtype' argument")
        names[names.index("dtype")] = f'{rule}("{op.name}", dtype, {outs[0]})'
        rule = "out_castable"
    call = f"kiln::ops::{struct_name(functional)}::call({', '.join(names)})"
    if rule == "outs_pair":
        named = ", ".join(f'{o}, "{a.name}"' for o, a in zip(outs, op.schema.out_arguments))
        args = f'"{op.name}", {call}, {named}'
    else:
        args = f'"{op.name}", {call}, {outs[0]}'
    return f"\n// {op.full_name}\n{return_type(op)} {kernel}({params}) {{\n  return {rule}({args});\n}}\n"


def out_from_functional_cpp(ops: list[Op]) -> str:
    out = [HEADER.format(what=": the out= forms that run their functional op"),
           '#include "eager/kernels/cpu/OutFromFunctional.h"\n#include "kiln/generated/Functions.h"\n'
           '#include "kiln/generated/NativeFunctions.h"\n\nnamespace kiln::native {\n']
    for op in ops:
        if op.out_from_functional:
            out.append(_entry(op, ops))
    out.append("\n}  // namespace kiln::native\n")
    return "".join(out)


def outputs(ops: list[Op]) -> dict[str, str]:
    return {"OutFromFunctional.cpp": out_from_functional_cpp(ops)}
