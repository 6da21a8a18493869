"""Reading a captured graph: the ``ir`` text form (ir/README.md, "The text
form") parsed into plain Python records, the form kiln.onnx walks.

A Graph from ``kiln._C._ir`` is an opaque handle whose text is its interface
(python/csrc/PyIr.cpp), so this module reads ``str(graph)``: the graph's
inputs with their types, each node's kind, output names and types, its
arguments (values by position, then ``name=`` literals or values) and the
returned values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_DTYPE_SHORT_NAMES = {"f32": "float32", "f64": "float64", "f16": "float16", "bf16": "bfloat16", "i8": "int8",
                      "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8", "b8": "bool",
                      "c64": "complex64", "c128": "complex128"}

_TOKEN = re.compile(r"""\s*(?:
    (?P<value>%[\w.]+)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<number>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)
  | (?P<name>[A-Za-z_]\w*(?:::\w+)?(?:\.\w+)*)
  | (?P<punct>[()\[\]{},:=@?*\-])
)""", re.VERBOSE)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


@dataclass(frozen=True)
class TensorType:
    """A tensor value's type: dtype name ("float32", None when unknown), sizes (None: rank unknown; an entry is
    an int or a symbol's name) and strides (None when not recorded)."""

    dtype: str | None
    sizes: tuple | None
    strides: tuple | None = None


@dataclass(frozen=True)
class OtherType:
    """A non-tensor type, spelled as the text form spells it (``int``, ``int[]``, ``Tensor?``)."""

    spelling: str


@dataclass(frozen=True)
class ValueRef:
    """A use of a value in a node's arguments."""

    name: str


@dataclass(frozen=True)
class Device:
    spelling: str


@dataclass(frozen=True)
class DTypeLiteral:
    name: str  # "float32", "int64", ...


@dataclass
class Node:
    """One statement: ``outputs = kind(positional..., name=keyword...)``."""

    kind: str
    outputs: list  # [(name, type)]
    positional: list  # ValueRef or literal
    keyword: dict  # name -> ValueRef or literal
    line: str = ""


@dataclass
class Graph:
    inputs: list  # [(name, type)]
    nodes: list = field(default_factory=list)
    outputs: list = field(default_factory=list)  # [value name]


class _Tokens:
    def __init__(self, text: str):
        self.items = []
        pos = 0
        text = text.rstrip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None or m.end() == pos:
                raise ValueError(f"kiln.onnx: cannot read the graph text at {text[pos:pos + 40]!r}")
            kind = m.lastgroup
            self.items.append((kind, m.group(kind)))
            pos = m.end()
        self.i = 0

    def peek(self, ahead: int = 0):
        j = self.i + ahead
        return self.items[j] if j < len(self.items) else (None, None)

    def take(self):
        item = self.peek()
        self.i += 1
        return item

    def accept(self, text: str) -> bool:
        if self.peek()[1] == text:
            self.i += 1
            return True
        return False

    def expect(self, text: str):
        kind, tok = self.take()
        if tok != text:
            raise ValueError(f"kiln.onnx: graph text: expected {text!r}, got {tok!r}")

    def done(self) -> bool:
        return self.i >= len(self.items)


def _parse_type(t: _Tokens):
    kind, tok = t.take()
    if tok == "?" or (kind == "name" and tok in _DTYPE_SHORT_NAMES and t.peek()[1] == "["):
        t.expect("[")
        sizes: list | None = []
        if t.accept("*"):
            sizes = None
        while not t.accept("]"):
            k, s = t.take()
            if k == "number":
                sizes.append(int(s))
            elif k == "name":
                sizes.append(s)
            elif s != ",":
                raise ValueError(f"kiln.onnx: graph text: bad size {s!r}")
        strides = None
        if t.accept("{"):
            strides = []
            while not t.accept("}"):
                k, v = t.take()
                if k == "number":
                    strides.append(int(v))
                elif k == "name":
                    strides.append(v)
        if t.accept("@"):
            _parse_device_tail(t, t.take()[1])
        t.accept("requires_grad")
        return TensorType(_DTYPE_SHORT_NAMES.get(tok), None if sizes is None else tuple(sizes),
                          None if strides is None else tuple(strides))
    if tok == "Tensor":
        result = TensorType(None, None)
        spelling = "Tensor"
    else:
        result = None
        spelling = tok
    while True:
        if t.peek()[1] == "[" and t.peek(1)[1] == "]":
            t.take(), t.take()
            spelling += "[]"
            result = None
        elif t.peek()[1] == "?":
            t.take()
            spelling += "?"
            result = None
        else:
            break
    return result if result is not None else OtherType(spelling)


def _parse_device_tail(t: _Tokens, head: str) -> str:
    if t.peek()[1] == ":" and t.peek(1)[0] == "number":
        t.take()
        return f"{head}:{t.take()[1]}"
    return head


_NAMED_LITERALS = {"None": None, "True": True, "False": False, "inf": float("inf"), "nan": float("nan")}


def _parse_literal(t: _Tokens):
    kind, tok = t.take()
    if kind == "value":
        return ValueRef(tok[1:])
    if kind == "string":
        return re.sub(r"\\(x[0-9a-fA-F]{2}|.)",
                      lambda m: chr(int(m.group(1)[1:], 16)) if m.group(1)[0] == "x" else _ESCAPES[m.group(1)],
                      tok[1:-1])
    if kind == "number":
        return float(tok) if any(c in tok for c in ".eE") else int(tok)
    if tok == "-":
        value = _parse_literal(t)
        return -value
    if tok == "[":
        items = []
        while not t.accept("]"):
            items.append(_parse_literal(t))
            t.accept(",")
        return items
    if kind == "name":
        if tok in _NAMED_LITERALS:
            return _NAMED_LITERALS[tok]
        if tok == "complex":
            t.expect("(")
            real = _parse_literal(t)
            t.expect(",")
            imag = _parse_literal(t)
            t.expect(")")
            return complex(real, imag)
        if tok in ("cpu", "cuda", "meta"):
            return Device(_parse_device_tail(t, tok))
        return DTypeLiteral(tok)
    raise ValueError(f"kiln.onnx: graph text: unexpected {tok!r}")


def _parse_definitions(t: _Tokens, end: str) -> list:
    defs = []
    while not t.accept(end):
        kind, tok = t.take()
        if kind != "value":
            raise ValueError(f"kiln.onnx: graph text: expected a value, got {tok!r}")
        t.expect(":")
        defs.append((tok[1:], _parse_type(t)))
        t.accept(",")
    return defs


def _parse_node(line: str) -> Node:
    t = _Tokens(line)
    outputs = []
    if t.peek()[0] == "value":
        while True:
            kind, tok = t.take()
            t.expect(":")
            outputs.append((tok[1:], _parse_type(t)))
            if not t.accept(","):
                break
        t.expect("=")
    kind, name = t.take()
    t.expect("(")
    positional, keyword = [], {}
    while not t.accept(")"):
        if t.peek()[0] == "name" and t.peek(1)[1] == "=":
            key = t.take()[1]
            t.take()
            keyword[key] = _parse_literal(t)
        else:
            positional.append(_parse_literal(t))
        t.accept(",")
    return Node(name, outputs, positional, keyword, line.strip())


def parse(text: str) -> Graph:
    """The records of a graph's text form (``str(graph)``)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    header = _Tokens(lines[0])
    header.expect("graph")
    header.expect("(")
    graph = Graph(_parse_definitions(header, ")"))
    for line in lines[1:]:
        stripped = line.strip()
        if stripped.startswith("return"):
            graph.outputs = re.findall(r"%([\w.]+)", stripped)
            break
        graph.nodes.append(_parse_node(stripped))
    return graph
