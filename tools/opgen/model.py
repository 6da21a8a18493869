"""The parsed op model: ops.yaml entries as Python objects.

The schema grammar mirrors eager/dispatch/FunctionSchema.cpp (same types, same
alias and list suffixes, same canonical printing), so a schema printed here is
byte-for-byte what FunctionSchema::parse(...).str() gives in C++.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

# The base types of the schema language, as FunctionSchema.cpp spells them.
TYPE_NAMES = ("Tensor", "int", "SymInt", "float", "bool", "str", "Scalar", "ScalarType", "Device", "Layout",
              "MemoryFormat", "Generator")
# Tags an entry may carry (eager/ops/README.md). Their order fixes the bits of
# OpInfo::tags, so append new ones at the end.
TAGS = ("pointwise", "reduction", "view", "inplace", "random", "nondeterministic", "factory", "complex",
        "dynamic_output_shape")
BACKEND_KEYS = ("CPU", "CUDA", "Meta")
COMPOSITE_KEY = "CompositeImplicit"
VARIANTS = ("function", "method")
# out_from_functional: rule -> number of outs it writes (helpers in eager/kernels/cpu/OutFromFunctional.h)
OUT_FROM_FUNCTIONAL_RULES = {
    "out_castable": 1,         # any out the result can be cast to
    "out_exact_dtype": 1,      # out's dtype must be the result's (check_out_dtype's words)
    "out_input_dtype": 1,      # amax/amin: "Expected the dtype for input and out to match"
    "out_bool": 1,             # all/any: a bool (or uint8) out
    "out_floating": 1,         # logsumexp: a floating out
    "out_dot_dtype": 1,        # dot/vdot: "result dtype ... does not match input dtype"
    "out_tensordot_dtype": 1,  # tensordot/inner: "tensordot: Expected the output tensor to have dtype"
    "out_multi_dot_dtype": 1,  # linalg_multi_dot: "multi_dot(): expected out tensor to have dtype"
    "out_addmm_dtype": 1,      # addbmm: run as an addmm into out, "self and mat2 must have the same dtype"
    "outs_pair": 2,            # two outs: each out's dtype the result's, no shared memory
    # compute in out's dtype when dtype= is not given (its `dtype` argument becomes the rule's DType), then out_castable:
    "in_out_dtype": 1,            # sum, prod
    "in_out_dtype_floating": 1,   # nansum: no integer loop
    "in_out_dtype_not_bool": 1,   # cumsum, cumprod: no bool loop
}

ENTRY_KEYS = ("func", "variants", "dispatch", "tags", "derivatives", "kernel_into", "tensor_as_scalar", "out_from_functional",
              "meta")
# `meta:` values (Note [Meta kernels], tools/opgen/README.md): the CPU kernel also serves the Meta key.
META_FROM_CPU = "cpu_kernel"

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class OpgenError(Exception):
    """A problem in ops.yaml; the message names the entry and the reason."""


# --- the schema language -------------------------------------------------------


@dataclass(frozen=True)
class Type:
    base: str                      # one of TYPE_NAMES
    is_list: bool = False
    size: int | None = None        # N of int[N]
    optional: bool = False         # T?
    element_optional: bool = False  # Tensor?[]

    @property
    def is_tensor_like(self) -> bool:
        """Tensor, Tensor?, Tensor[], Tensor?[]: what the dispatcher reads keys from."""
        return self.base == "Tensor"

    def __str__(self) -> str:
        return _type_text(self, None)


@dataclass(frozen=True)
class Alias:
    set: str
    is_write: bool


@dataclass(frozen=True)
class Argument:
    name: str
    type: Type
    alias: Alias | None = None
    default: str | None = None  # as written: "1", "None", "[0, 1]"
    kwarg_only: bool = False

    @property
    def is_out(self) -> bool:
        return self.kwarg_only and self.alias is not None and self.alias.is_write


@dataclass(frozen=True)
class Schema:
    name: str
    overload: str
    arguments: tuple[Argument, ...]
    returns: tuple[Argument, ...]

    @property
    def full_name(self) -> str:
        """"add.Tensor", or "empty" without an overload."""
        return f"{self.name}.{self.overload}" if self.overload else self.name

    @property
    def is_inplace(self) -> bool:
        a = self.arguments
        return self.name.endswith("_") and bool(a) and a[0].alias is not None and a[0].alias.is_write

    @property
    def out_arguments(self) -> tuple[Argument, ...]:
        return tuple(a for a in self.arguments if a.is_out)

    def argument(self, name: str) -> Argument | None:
        return next((a for a in self.arguments if a.name == name), None)

    def __str__(self) -> str:
        """The canonical form, as FunctionSchema::str() prints it."""
        parts, star = [], False
        for a in self.arguments:
            text = f"{_type_text(a.type, a.alias)} {a.name}"
            if a.default is not None:
                text += f"={a.default}"
            if a.kwarg_only and not star:
                text, star = "*, " + text, True
            parts.append(text)
        rets = [_type_text(r.type, r.alias) + (f" {r.name}" if r.name else "") for r in self.returns]
        parens = len(self.returns) != 1 or bool(self.returns[0].name)
        returns = f"({', '.join(rets)})" if parens else rets[0]
        return f"{self.full_name}({', '.join(parts)}) -> {returns}"


def _type_text(t: Type, alias: Alias | None) -> str:
    # Alias annotations sit between the base type and the list/optional suffixes.
    if t.element_optional:
        return t.base + "?[]" + ("?" if t.optional else "")
    out = t.base
    if alias is not None:
        out += f"({alias.set}{'!' if alias.is_write else ''})"
    if t.is_list:
        out += f"[{t.size if t.size is not None else ''}]"
    return out + ("?" if t.optional else "")


class _Cursor:
    """Reads a schema left to right; errors name the column, as the C++ parser's do."""

    def __init__(self, text: str):
        self.s, self.pos = text, 0

    def fail(self, what: str):
        raise OpgenError(f'invalid schema "{self.s}": {what} at column {self.pos}')

    def peek(self) -> str:
        self._skip_space()
        return self.s[self.pos] if self.pos < len(self.s) else ""

    def accept(self, token: str) -> bool:
        self._skip_space()
        if not self.s.startswith(token, self.pos):
            return False
        self.pos += len(token)
        return True

    def expect(self, token: str):
        if not self.accept(token):
            self.fail(f"expected '{token}'")

    def at_end(self) -> bool:
        self._skip_space()
        return self.pos >= len(self.s)

    def identifier(self) -> str:
        self._skip_space()
        m = re.compile(r"[A-Za-z0-9_]+").match(self.s, self.pos)
        if not m:
            self.fail("expected a name")
        self.pos = m.end()
        return m.group()

    def default_value(self) -> str:
        """A default as written, up to the next top-level ',' or ')'."""
        self._skip_space()
        start, depth, quote = self.pos, 0, None
        while self.pos < len(self.s):
            c = self.s[self.pos]
            if quote:
                if c in "\"'":
                    quote = None
            elif c in "\"'":
                quote = c
            elif c in "[(":
                depth += 1
            elif c == "]" or (c == ")" and depth > 0):
                depth -= 1
            elif depth == 0 and c in ",)":
                break
            self.pos += 1
        value = self.s[start:self.pos].rstrip()
        if not value:
            self.fail("expected a default value")
        return value

    def _skip_space(self):
        while self.pos < len(self.s) and self.s[self.pos].isspace():
            self.pos += 1


def _parse_type(c: _Cursor) -> Type:
    base = c.identifier()
    if base not in TYPE_NAMES:
        c.fail(f"unknown type '{base}'")
    if c.peek() == "?":
        c.expect("?")
        if c.accept("["):  # Tensor?[]: nullable elements
            c.expect("]")
            return Type(base, is_list=True, element_optional=True, optional=c.accept("?"))
        return Type(base, optional=True)
    return Type(base)


def _parse_argument(c: _Cursor, is_return: bool, kwarg_only: bool = False) -> Argument:
    t = _parse_type(c)
    alias = None
    if c.peek() == "(":
        c.expect("(")
        alias = Alias(c.identifier(), c.accept("!"))
        c.expect(")")
    if not t.optional and not t.is_list:
        if c.accept("["):
            size = None
            if c.peek() != "]":
                n = c.identifier()
                if not n.isdigit():
                    c.fail("list size must be a number")
                size = int(n)
            c.expect("]")
            t = Type(t.base, is_list=True, size=size)
        if c.accept("?"):
            t = Type(t.base, t.is_list, t.size, optional=True)
    name, default = "", None
    if not is_return or c.peek() not in (",", ")", ""):
        name = c.identifier()
    if not is_return and c.accept("="):
        default = c.default_value()
    return Argument(name, t, alias, default, kwarg_only)


def parse_schema(text: str) -> Schema:
    """Parses "name.overload(args) -> returns"; OpgenError naming the column."""
    c = _Cursor(text)
    name = c.identifier()
    if c.accept("::"):
        c.fail("ops.yaml schemas take no namespace (they are all kiln::)")
    overload = c.identifier() if c.accept(".") else ""
    args: list[Argument] = []
    c.expect("(")
    if not c.accept(")"):
        kwarg_only = False
        while True:
            if c.accept("*"):
                if kwarg_only:
                    c.fail("'*' appears twice")
                kwarg_only = True
            else:
                a = _parse_argument(c, is_return=False, kwarg_only=kwarg_only)
                if any(p.name == a.name for p in args):
                    c.fail(f"duplicate argument name '{a.name}'")
                args.append(a)
            if not c.accept(","):
                break
        c.expect(")")
    c.expect("->")
    returns: list[Argument] = []
    if c.accept("("):
        if not c.accept(")"):
            returns.append(_parse_argument(c, is_return=True))
            while c.accept(","):
                returns.append(_parse_argument(c, is_return=True))
            c.expect(")")
    else:
        returns.append(_parse_argument(c, is_return=True))
    if not c.at_end():
        c.fail("unexpected text after the returns")
    return Schema(name, overload, tuple(args), tuple(returns))


# --- ops.yaml entries ----------------------------------------------------------


@dataclass
class Op:
    schema: Schema
    variants: tuple[str, ...]
    dispatch: dict[str, str]         # dispatch key -> kernel name in kiln::native
    tags: tuple[str, ...]
    derivatives: dict[str, str]      # input name -> formula (checked by derivatives.py)
    where: str = "ops.yaml"          # "ops.yaml:12", the entry's line, for messages
    kernel_into: str | None = None   # the one kernel its CPU entry point calls (Note [Generated entry points], into.py)
    out_from_functional: str | None = None  # the out= rule its kernel applies (out_from_functional.py)
    tensor_as_scalar: str | None = None     # reads a Tensor its kernel_into takes as a Scalar through this (into.py)
    meta_from_cpu: bool = False             # `meta: cpu_kernel`: its CPU kernel is registered at Meta too
    parsed_derivatives: list = field(default_factory=list)  # filled by derivatives.check

    @property
    def name(self) -> str:
        return self.schema.name

    @property
    def full_name(self) -> str:
        return self.schema.full_name

    @property
    def label(self) -> str:
        """How errors name the entry: "ops.yaml:12: add.Tensor"."""
        return f"{self.where}: {self.full_name}"

    @property
    def is_factory(self) -> bool:
        return "factory" in self.tags

    @property
    def backend_kernels(self) -> dict[str, str]:
        return {k: v for k, v in self.dispatch.items() if k in BACKEND_KEYS}

    @property
    def composite_kernel(self) -> str | None:
        return self.dispatch.get(COMPOSITE_KEY)

    @property
    def meta_kernel(self) -> str | None:
        """The kernel registered at the Meta key: its own (`dispatch: Meta:`) or,
        with `meta: cpu_kernel`, its CPU kernel (Note [Meta kernels])."""
        if "Meta" in self.dispatch:
            return self.dispatch["Meta"]
        return self.dispatch["CPU"] if self.meta_from_cpu else None


def load_ops(text: str, source: str = "ops.yaml") -> list[Op]:
    """Parses and checks ops.yaml's text; OpgenError on the first problem."""
    try:
        root = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise OpgenError(f"{source}: not valid YAML: {e}") from None
    if data is None:
        return []
    if not isinstance(data, list):
        raise OpgenError(f"{source}: expected a list of entries")
    ops: list[Op] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(data):
        line = root.value[i].start_mark.line + 1
        op = _load_entry(entry, f"{source}:{line}")
        if op.full_name in seen:
            raise OpgenError(f"{source}:{line}: {op.full_name}: duplicate overload (first defined at line "
                             f"{seen[op.full_name]})")
        seen[op.full_name] = line
        ops.append(op)
    return ops


def _load_entry(entry, where: str) -> Op:
    if not isinstance(entry, dict) or not isinstance(entry.get("func"), str):
        raise OpgenError(f"{where}: an entry needs 'func: <schema>'")
    try:
        schema = parse_schema(entry["func"])
    except OpgenError as e:
        raise OpgenError(f"{where}: {e}") from None
    label = f"{where}: {schema.full_name}"

    def fail(reason: str):
        raise OpgenError(f"{label}: {reason}")

    unknown = sorted(set(entry) - set(ENTRY_KEYS))
    if unknown:
        fail(f"unknown key(s) {', '.join(unknown)} (allowed: {', '.join(ENTRY_KEYS)})")

    variants = entry.get("variants", "function")
    variants = tuple(v.strip() for v in variants.split(",")) if isinstance(variants, str) else tuple(variants)
    for v in variants:
        if v not in VARIANTS:
            fail(f"unknown variant '{v}' (allowed: {', '.join(VARIANTS)})")
    if "method" in variants:
        # `self` is usually first; where(condition, self, other) is the exception, as in PyTorch.
        if not any(a.name == "self" and a.type == Type("Tensor") for a in schema.arguments):
            fail("a method variant needs 'Tensor self' among its arguments")
        if schema.out_arguments:
            fail("an out= overload has no method variant (it folds into the functional one's out=)")

    dispatch = entry.get("dispatch")
    if not dispatch:
        fail("missing dispatch: name at least one kernel (CPU: my_kernel_cpu, or CompositeImplicit: my_op)")
    if not isinstance(dispatch, dict):
        fail("dispatch must map dispatch keys to kernel names")
    for key, kernel in dispatch.items():
        if key not in BACKEND_KEYS + (COMPOSITE_KEY,):
            fail(f"unknown dispatch key '{key}' (allowed: {', '.join(BACKEND_KEYS + (COMPOSITE_KEY,))})")
        if not isinstance(kernel, str) or not _IDENTIFIER.match(kernel):
            fail(f"kernel for {key} must be a C++ identifier, not {kernel!r}")

    tags = entry.get("tags", [])
    if not isinstance(tags, list):
        fail("tags must be a list")
    for t in tags:
        if t not in TAGS:
            fail(f"unknown tag '{t}' (allowed: {', '.join(TAGS)})")
    if "inplace" in tags and not schema.is_inplace:
        fail("tagged inplace, but an in-place op's name ends in '_' and its first argument is Tensor(a!)")
    if "factory" in tags:
        if any(a.type.is_tensor_like for a in schema.arguments):
            fail("tagged factory, but a factory takes no tensor arguments")
        device = schema.argument("device")
        if device is None or device.type != Type("Device", optional=True):
            fail("tagged factory, but has no 'Device? device' argument to pick the backend from")

    derivatives = entry.get("derivatives", {}) or {}
    if not isinstance(derivatives, dict) or not all(isinstance(k, str) for k in derivatives):
        fail("derivatives must map input names to formulas")
    derivatives = {k: str(v) for k, v in derivatives.items()}

    kernel_into = entry.get("kernel_into")
    if kernel_into is not None:
        if not isinstance(kernel_into, str) or not _IDENTIFIER.match(kernel_into):
            fail(f"kernel_into must name a C++ function, not {kernel_into!r}")
        if "CPU" not in dispatch:
            fail("kernel_into needs 'CPU: <name>' under dispatch: the entry point opgen writes")
        if len(schema.out_arguments) > 1 or len(schema.returns) != 1 or schema.returns[0].type != Type("Tensor"):
            fail("kernel_into needs an op that returns one Tensor (at most one out= argument)")
    tensor_as_scalar = entry.get("tensor_as_scalar")
    if tensor_as_scalar is not None:
        if not isinstance(tensor_as_scalar, str) or not _IDENTIFIER.match(tensor_as_scalar):
            fail(f"tensor_as_scalar must name a C++ function, not {tensor_as_scalar!r}")
        if kernel_into is None:
            fail("tensor_as_scalar needs kernel_into")
    out_from_functional = entry.get("out_from_functional")
    if out_from_functional is not None:
        if out_from_functional not in OUT_FROM_FUNCTIONAL_RULES:
            fail(f"out_from_functional must be one of {', '.join(OUT_FROM_FUNCTIONAL_RULES)}, not {out_from_functional!r}")
        if not schema.out_arguments or schema.is_inplace:
            fail("out_from_functional needs an out= overload")
        if len(dispatch) != 1 or kernel_into is not None:
            fail("out_from_functional needs one kernel under dispatch: (the entry point opgen writes), "
                 "and no kernel_into")
    meta = entry.get("meta")
    if meta is not None:
        if meta != META_FROM_CPU:
            fail(f"meta must be '{META_FROM_CPU}' (an explicit meta kernel goes under dispatch: as 'Meta: <name>'), "
                 f"not {meta!r}")
        if "CPU" not in dispatch or "Meta" in dispatch:
            fail(f"meta: {META_FROM_CPU} needs a CPU kernel under dispatch: and no Meta one")
    if "dynamic_output_shape" in tags and (meta is not None or "Meta" in dispatch):
        fail("tagged dynamic_output_shape (its output's shape depends on data), so it can have no meta kernel")
    return Op(schema, variants, dict(dispatch), tuple(tags), derivatives, where, kernel_into=kernel_into,
              out_from_functional=out_from_functional, tensor_as_scalar=tensor_as_scalar,
              meta_from_cpu=meta is not None)


# torch's TensorOptions keywords, as kiln schemas spell them (no Layout type yet).
TENSOR_OPTIONS = ("dtype", "device")


def takes_tensor_options(op: Op) -> bool:
    """Factories and the *_like forms: kwarg-only `ScalarType? dtype` and `Device? device`.
    Their Python bindings add torch's layout, pin_memory and requires_grad keywords."""
    dtype, device = op.schema.argument("dtype"), op.schema.argument("device")
    return (op.is_factory or (dtype is not None and device is not None and dtype.kwarg_only and device.kwarg_only
                              and dtype.type == Type("ScalarType", optional=True)
                              and device.type == Type("Device", optional=True)))


def functional_of(out_op: Op, ops: list[Op]) -> Op | None:
    """The functional overload an out= overload folds into (same name, same
    arguments without `out`, and without the TensorOptions that a factory's
    out= form drops: rand.out(size, *, out) folds into rand(size, *, dtype, device)),
    or None."""
    inputs = tuple(a for a in out_op.schema.arguments if not a.is_out)
    for op in ops:
        if op is not out_op and op.name == out_op.name and not op.schema.out_arguments:
            args = op.schema.arguments
            if takes_tensor_options(op):
                args = tuple(a for a in args if not (a.kwarg_only and a.name in TENSOR_OPTIONS))
            if args == inputs:
                return op
    return None
