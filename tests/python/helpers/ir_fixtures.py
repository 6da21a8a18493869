"""IR text fixtures for graph passes, FileCheck style (MLIR's split-input files).

A fixture file holds cases separated by a ``# -----`` line. Each case is
directives, an input graph, then what the passes must leave::

    # CASE: mul_by_one
    # PASSES: simplify_algebra eliminate_dead_code
    # FIRES: mul_by_one
    graph(%x : f32[2]):
      %a : f32[2] = kiln::mul.Scalar(%x, other=1)
      return (%a)
    # EXPECT
    graph(%x : f32[2]):
      return (%x)

``# EXPECT`` is followed by the whole expected graph (compared after parse and
print, so it may be written loosely); ``# CHECK: text``, ``# CHECK-NEXT: text``
and ``# CHECK-NOT: text`` lines match the printed result as FileCheck does.
``# FIRES: rule ...`` (or ``none``) names the rewrite rules simplify_algebra
must fire, exactly.
"""

from __future__ import annotations

import dataclasses
import pathlib
import re


@dataclasses.dataclass
class Case:
    name: str
    passes: list
    source: str
    expect: str | None = None
    checks: list = dataclasses.field(default_factory=list)  # (directive, text)
    fires: list | None = None


def load_cases(path: pathlib.Path) -> list:
    cases = []
    for chunk in path.read_text().split("\n# -----\n"):
        case = Case(name="", passes=[], source="")
        source, expect, in_expect = [], [], False
        for line in chunk.strip("\n").splitlines():
            stripped = line.strip()
            if stripped.startswith("# CASE:"):
                case.name = stripped.split(":", 1)[1].strip()
            elif stripped.startswith("# PASSES:"):
                case.passes = stripped.split(":", 1)[1].split()
            elif stripped.startswith("# FIRES:"):
                names = stripped.split(":", 1)[1].split()
                case.fires = [] if names == ["none"] else names
            elif stripped == "# EXPECT":
                in_expect = True
            elif stripped.startswith(("# CHECK:", "# CHECK-NEXT:", "# CHECK-NOT:")):
                directive, text = stripped[2:].split(":", 1)
                case.checks.append((directive, text.strip()))
            elif stripped.startswith("#") or not stripped:
                continue
            elif in_expect:
                expect.append(line)
            else:
                source.append(line)
        assert case.name and case.passes, f"{path.name}: a case without CASE or PASSES:\n{chunk}"
        case.source = "\n".join(source) + "\n"
        case.expect = "\n".join(expect) + "\n" if expect else None
        cases.append(case)
    return cases


def _pattern(text: str) -> re.Pattern:
    """A CHECK text as a regex: literal, except ``{{regex}}`` parts (FileCheck's syntax)."""
    parts = re.split(r"\{\{(.*?)\}\}", text)
    return re.compile("".join(p if i % 2 else re.escape(p) for i, p in enumerate(parts)))


def filecheck(output: str, checks: list) -> str | None:
    """None when ``output`` meets the CHECK lines, else what failed."""
    lines = output.splitlines()
    checks = [(d, _pattern(t)) for d, t in checks]
    pos = 0  # the next line a CHECK may match
    pending_not = []
    last = -1
    for directive, text in checks:
        if directive == "CHECK-NOT":
            pending_not.append(text)
            continue
        if directive == "CHECK-NEXT":
            found = last + 1 if last + 1 < len(lines) and text.search(lines[last + 1]) else None
        else:
            found = next((i for i in range(pos, len(lines)) if text.search(lines[i])), None)
        if found is None:
            return f"{directive}: {text.pattern!r} not found after line {pos}"
        for banned in pending_not:
            for i in range(pos, found):
                if banned.search(lines[i]):
                    return f"CHECK-NOT: {banned.pattern!r} found on line {i + 1}: {lines[i]}"
        pending_not = []
        last, pos = found, found + 1
    for banned in pending_not:
        for i in range(pos, len(lines)):
            if banned.search(lines[i]):
                return f"CHECK-NOT: {banned.pattern!r} found on line {i + 1}: {lines[i]}"
    return None
