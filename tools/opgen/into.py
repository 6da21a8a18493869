"""The generated entry points of `kernel_into` families: IntoKernels.h declares
each named kernel, IntoKernels.cpp defines the CPU kernel of every entry that
names one.

Note [Generated entry points]
-----------------------------
Most kernels come as a function (a new tensor), an in-place method and an out=
form (Note [Three ways to write a result], eager/kernels/cpu/ResultInto.h), and
all three run the same code: one function that writes its result into a given
tensor. An entry says so with `kernel_into: add_into`; its `dispatch: CPU:`
kernel (add_cpu, add_cpu_, add_out_cpu) is then written here, not by hand:

    Tensor add_cpu_(const Tensor& self, const Tensor& other, const Scalar& alpha) {
      return add_into(ResultInto::InPlace, self, self, other, alpha);
    }

The entry's schema says which of the three it is: in-place (name ends in `_`,
`Tensor(a!) self` first) passes `self` as the result, out= passes its `out`,
and the function passes an undefined tensor. The kernel the author writes is

    Tensor add_into(ResultInto into, const Tensor& out, <the op's inputs>);

with the inputs of the family's functional entry (the first entry naming the
kernel that is neither in-place nor out=; else the first one, less `out`), in
that order; each entry passes its arguments by name, so an in-place overload
may order them differently (polygamma_(self, n) calls polygamma_into(..., n, self)).
Where one overload takes a Scalar and another a Tensor under the same name
(add.Scalar's `other`), the kernel takes the Tensor, and the Scalar overload
passes a wrapped-number tensor, `scalar_operand(other, like)`: `like` is the
entry's first Tensor argument among those operands (the names some overload of
the family takes as a Scalar), else its first Tensor argument
(where.ScalarOther wraps `other` like `self`, not like `condition`). The
reverse, an overload taking as a Tensor what the kernel takes as a Scalar
(masked_fill.Tensor's `value`), says `tensor_as_scalar: masked_fill_value`: it
passes `masked_fill_value(value)`, a function IntoKernels.h declares, and the
kernel's parameters come from the first functional entry without that key.
Any other difference between the overloads' types is an error.

The wrappers are out-of-line functions in their own file, each one direct call
to the kernel, as the hand-written ones were (the kernel was out of line there
too). The kernels are declared with hidden visibility (KILN_INTO_KERNEL), so
that call does not go through the PLT, as the call to a file-local kernel did
not."""

from __future__ import annotations

from dataclasses import dataclass

from cpp import HEADER, argument_type, identifier
from model import Op, OpgenError, Type

SCALAR, TENSOR = Type("Scalar"), Type("Tensor")


def _kind(op: Op) -> str:
    if op.schema.is_inplace:
        return "InPlace"
    return "Out" if op.schema.out_arguments else "NewTensor"


def _inputs(op: Op):
    return [a for a in op.schema.arguments if not a.is_out]


@dataclass
class IntoKernel:
    name: str
    params: list[tuple[str, Type]]   # the inputs after (into, out): name and schema type
    operands: set[str]               # names some overload takes as a Scalar and another as a Tensor
    ops: list[Op]


def families(ops: list[Op]) -> list[IntoKernel]:
    """One IntoKernel per `kernel_into` name, in ops.yaml order; OpgenError where
    the overloads naming it do not agree (Note [Generated entry points])."""
    groups: dict[str, list[Op]] = {}
    for op in ops:
        if op.kernel_into:
            groups.setdefault(op.kernel_into, []).append(op)
    kernels = []
    for name, members in groups.items():
        functional = [op for op in members if _kind(op) == "NewTensor" and not op.tensor_as_scalar]
        first = (functional or members)[0]
        params = [(a.name, a.type) for a in _inputs(first)]
        names = [n for n, _ in params]
        operands: set[str] = set()
        for op in members:
            inputs = _inputs(op)
            if sorted(a.name for a in inputs) != sorted(names):
                raise OpgenError(f"{op.label}: kernel_into {name}: its inputs ({', '.join(a.name for a in inputs)}) "
                                 f"are not those of {first.full_name} ({', '.join(names)})")
            for a in inputs:
                i = names.index(a.name)
                t = params[i][1]
                if a.type == t:
                    continue
                if op.tensor_as_scalar and (a.type, t) == (TENSOR, SCALAR):
                    continue
                if {a.type, t} == {SCALAR, TENSOR}:
                    params[i] = (a.name, TENSOR)
                    operands.add(a.name)
                    continue
                raise OpgenError(f"{op.label}: kernel_into {name}: '{a.name}' is {a.type} here but {t} in "
                                 f"{first.full_name} (only a Scalar may stand for a Tensor)")
        kernels.append(IntoKernel(name, params, operands, members))
    return kernels


def _params_text(op: Op) -> str:
    return ", ".join(f"{argument_type(a.type, op.label)} {identifier(a.name)}" for a in op.schema.arguments)


def _call(kernel: IntoKernel, op: Op) -> str:
    kind = _kind(op)
    by_name = {a.name: a for a in _inputs(op)}
    tensors = [a.name for a in _inputs(op) if a.type == TENSOR]
    like = next((n for n in tensors if n in kernel.operands), tensors[0] if tensors else None)
    args = []
    for n, t in kernel.params:
        if t == SCALAR and by_name[n].type == TENSOR:
            args.append(f"{op.tensor_as_scalar}({identifier(n)})")
        elif t == TENSOR and by_name[n].type == SCALAR:
            if like is None:
                raise OpgenError(f"{op.label}: kernel_into {kernel.name}: no Tensor argument to wrap '{n}' like")
            args.append(f"scalar_operand({identifier(n)}, {identifier(like)})")
        else:
            args.append(identifier(n))
    result = {"InPlace": "self", "Out": identifier(op.schema.out_arguments[0].name) if kind == "Out" else "",
              "NewTensor": "Tensor()"}[kind]
    return f"{kernel.name}(ResultInto::{kind}, {result}, {', '.join(args)})"


def into_kernels_h(ops: list[Op]) -> str:
    out = [HEADER.format(what=": the kernels that kernel_into names"),
           "// One kernel per op family, writing into a new, the in-place or the out= tensor\n"
           "// (Note [Generated entry points], tools/opgen/into.py). Include it where the kernel\n"
           "// is defined, so its signature is checked there.\n#pragma once\n\n#include <optional>\n"
           "#include <string_view>\n\n#include \"eager/core/Scalar.h\"\n#include \"eager/ops/Tensor.h\"\n"
           "#include \"eager/core/GeneratorImpl.h\"\n#include \"eager/kernels/cpu/ResultInto.h\"\n\n"
           "// Not exported from kiln_core: the entry points below call them directly, not\n"
           "// through the PLT, as the hand-written entry points called a file-local kernel.\n"
           "#define KILN_INTO_KERNEL __attribute__((visibility(\"hidden\")))\n\n"
           "namespace kiln::native {\n"]
    for k in families(ops):
        first = k.ops[0]
        params = "".join(f", {argument_type(t, first.label)} {identifier(n)}" for n, t in k.params)
        users = ", ".join(op.full_name for op in k.ops)
        out.append(f"\n// {users}\nKILN_INTO_KERNEL Tensor {k.name}(ResultInto into, const Tensor& out{params});\n")
        for converter in dict.fromkeys(op.tensor_as_scalar for op in k.ops if op.tensor_as_scalar):
            out.append(f"// reads the Tensor value of {k.name}'s tensor_as_scalar overloads\n"
                       f"KILN_INTO_KERNEL Scalar {converter}(const Tensor& value);\n")
    out.append("\n}  // namespace kiln::native\n")
    return "".join(out)


def into_kernels_cpp(ops: list[Op]) -> str:
    out = [HEADER.format(what=": the entry points of kernel_into families"),
           '#include "kiln/generated/IntoKernels.h"\n#include "kiln/generated/NativeFunctions.h"\n\n'
           "namespace kiln::native {\n"]
    for k in families(ops):
        for op in k.ops:
            out.append(f"\n// {op.full_name}\nTensor {op.dispatch['CPU']}({_params_text(op)}) {{\n"
                       f"  return {_call(k, op)};\n}}\n")
    out.append("\n}  // namespace kiln::native\n")
    return "".join(out)


def outputs(ops: list[Op]) -> dict[str, str]:
    return {"IntoKernels.h": into_kernels_h(ops), "IntoKernels.cpp": into_kernels_cpp(ops)}
