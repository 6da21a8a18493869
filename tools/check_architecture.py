"""Checks that kiln's source tree keeps its layering (DESIGN.md, "The pipeline").

``python tools/check_architecture.py [ROOT]`` prints every violation and exits 1
when there is one. tests/python's architecture test runs the same checks and
proves each of them fails on a deliberately broken tree.

Two rules, one per language:

- **C++**: a file may include only folders at or before its own in the pipeline
  order below (``#include "eager/core/..."`` from ``eager/kernels`` is fine; the
  reverse is not). Generated headers (``kiln/generated/...``) are ops.yaml's and
  sit at ``eager/ops``'s rank, except the Tensor type's method declarations (see
  Note [The Tensor type sits below the dispatcher]). ``tests``, ``bench`` and
  ``tools`` may include anything.
- **Python** (``python/kiln``): no import loop among the package's modules, and
  no module imports a module of a later layer (see ``PYTHON_LAYERS``). Imports
  inside functions count like any other: a lazy import hides a loop from the
  interpreter, not from the design. An import with a comment on its line is
  taken as a documented exception (an optional dependency loaded late) and is
  still held to the layer rule.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

# The pipeline, first to last (DESIGN.md's table; eager/README.md): each rank is
# the paths that sit there. A file may include paths of its own rank or an
# earlier one. The longest matching path wins, so a single file can sit apart
# from its folder.
#
# Note [The Tensor type sits below the dispatcher]
# ------------------------------------------------
# kiln::Tensor is TensorBase (eager/core) plus the op methods opgen declares from
# the op list (eager/ops/Tensor.h, kiln/generated/TensorMethodDecls.inc). The
# declarations need only core types; their definitions (the generated
# TensorMethods.cpp) call the dispatcher and sit with the registry. The
# dispatcher's boxed values (IValue) hold Tensors, so the type sits between
# memory and dispatch, as ATen's generated TensorBody.h sits below ATen's
# dispatcher and above c10. The core itself includes nothing generated.
CPP_ORDER: tuple[tuple[str, ...], ...] = (
    ("eager/core",),
    ("eager/memory",),
    ("eager/ops/Tensor.h", "kiln/generated/TensorMethodDecls.inc"),
    ("eager/dispatch",),
    ("eager/ops", "kiln/generated"),
    ("eager/autograd",),
    ("eager/cuda",),
    ("eager/kernels",),
    ("eager/distributed",),
    ("ir",),
    ("capture",),
    ("passes",),
    ("codegen",),
    ("runtime",),
    ("python",),
)
# Folders that may include anything (they sit outside the pipeline, on top).
CPP_UNRANKED = ("tests", "bench", "tools")
CPP_SUFFIXES = {".h", ".hpp", ".cpp", ".cc", ".inc", ".cu", ".cuh"}

INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"', re.MULTILINE)


@dataclass(frozen=True)
class Violation:
    """One broken rule: where, and what."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def cpp_rank(relative_path: str) -> int | None:
    """The pipeline position of a path (its longest matching prefix), or None if unranked."""
    best: tuple[int, int] | None = None  # (prefix length, rank)
    for rank, prefixes in enumerate(CPP_ORDER):
        for prefix in prefixes:
            if relative_path == prefix or relative_path.startswith(prefix + "/"):
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), rank)
    return None if best is None else best[1]


def cpp_violations(root: Path) -> list[Violation]:
    """Every ``#include "..."`` that reaches later in the pipeline than its file."""
    found: list[Violation] = []
    seen: set[Path] = set()
    for folder in sorted({prefix for prefixes in CPP_ORDER for prefix in prefixes}):
        base = root / folder
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if path.suffix not in CPP_SUFFIXES or not path.is_file() or path in seen:
                continue
            seen.add(path)
            relative = path.relative_to(root).as_posix()
            if relative.startswith(CPP_UNRANKED):
                continue
            own_rank = cpp_rank(relative)
            if own_rank is None:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for match in INCLUDE_RE.finditer(text):
                target = match.group(1)
                if not (root / target).exists() and (path.parent / target).exists():
                    target = (path.parent / target).resolve().relative_to(root.resolve()).as_posix()
                target_rank = cpp_rank(target)
                if target_rank is not None and target_rank > own_rank:
                    line = text.count("\n", 0, match.start()) + 1
                    found.append(Violation(
                        relative, line,
                        f'includes "{match.group(1)}" ({_cpp_folder_name(target_rank)}), which comes after '
                        f"{_cpp_folder_name(own_rank)} in the pipeline order"))
    return found


def _cpp_folder_name(rank: int) -> str:
    return " / ".join(CPP_ORDER[rank])


# --- Python ------------------------------------------------------------------

# python/kiln's layers, lowest first: a module may import modules of its own
# layer and of the layers before it. Longest prefix wins. The package root
# ``kiln`` (its __init__.py, which assembles the public namespace) is the layer
# named ROOT: the layers after it are clients of the public namespace (they may
# ``import kiln``), loaded by __init__.py only once everything they use is bound.
ROOT = "kiln"
PYTHON_LAYERS: tuple[tuple[str, ...], ...] = (
    ("kiln._C",),
    ("kiln.autograd",),
    # The tensor library: Tensor, the functions of kiln's namespace by topic, and the
    # namespaces torch keeps beside it (special, linalg, fft).
    ("kiln._", "kiln.random", "kiln.return_types", "kiln.special", "kiln.linalg", "kiln.fft", "kiln.cuda",
     "kiln.futures", "kiln.sparse"),
    # Collectives across processes (tensors in, tensors out); DDP in kiln.nn.parallel builds on them.
    ("kiln.distributed",),
    ("kiln.nn",),
    # kiln.distributed.optim wraps kiln.optim's optimizers, so it sits with them, above kiln.distributed.
    ("kiln.optim", "kiln.distributed.optim", "kiln.amp", "kiln.library",
     "kiln.serialization", "kiln.testing", "kiln.utils", "kiln.compiler", "kiln.profiler"),
    (ROOT,),
    ("kiln.func", "kiln.distributions", "kiln.bench", "kiln.onnx", "kiln.masked", "kiln.signal"),
)


@dataclass(frozen=True)
class PythonImport:
    """One import statement of a module: the module it names, where, and whether it is documented."""

    target: str
    line: int
    in_function: bool
    commented: bool


def python_module_name(package_root: Path, path: Path) -> str:
    """``kiln.nn.functional`` for python/kiln/nn/functional.py; a package's __init__ is the package."""
    parts = list(path.relative_to(package_root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def python_modules(package_root: Path) -> dict[str, Path]:
    """Every module of the package, by dotted name."""
    return {python_module_name(package_root, path): path for path in sorted(package_root.rglob("*.py"))}


def _resolve_relative(module: str, is_package: bool, level: int, name: str | None) -> str:
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def python_imports(module: str, path: Path, known: set[str]) -> list[PythonImport]:
    """The package-internal modules ``module`` imports, at module level or inside functions.

    ``from a import b`` names ``a.b`` when that is a module of the package, else ``a``.
    """
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, str(path))
    lines = source.splitlines()
    is_package = path.name == "__init__.py"
    found: list[PythonImport] = []

    def commented(node: ast.stmt) -> bool:
        return "#" in lines[node.lineno - 1]

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.split(".")[0] == "kiln":
                        found.append(PythonImport(alias.name, child.lineno, in_function, commented(child)))
            elif isinstance(child, ast.ImportFrom):
                source_module = (child.module or "") if child.level == 0 else _resolve_relative(
                    module, is_package, child.level, child.module)
                if source_module.split(".")[0] != "kiln":
                    continue
                for alias in child.names:
                    candidate = f"{source_module}.{alias.name}"
                    target = candidate if candidate in known else source_module
                    found.append(PythonImport(target, child.lineno, in_function, commented(child)))
            if not isinstance(child, (ast.Import, ast.ImportFrom)):
                visit(child, nested)

    visit(tree, False)
    # `import a.b.c` also imports a and a.b; keep the named module (the one the code uses).
    return [imp for imp in found if imp.target != module]


def python_layer(module: str, layers: tuple[tuple[str, ...], ...]) -> int:
    """The layer of a module: the longest prefix that matches it (``kiln._`` matches ``kiln._tensor``).

    The root ``kiln`` matches only itself; a module no prefix matches sits in the last layer
    before the root (or in the last layer, when the layers name no root).
    """
    best: tuple[int, int] | None = None
    for rank, prefixes in enumerate(layers):
        for prefix in prefixes:
            if prefix == ROOT:
                matched = module == ROOT
            else:
                matched = module == prefix or module.startswith(prefix if prefix.endswith("_") else prefix + ".")
            if matched and (best is None or len(prefix) > best[0]):
                best = (len(prefix), rank)
    if best is not None:
        return best[1]
    roots = [rank for rank, prefixes in enumerate(layers) if ROOT in prefixes]
    return roots[0] - 1 if roots else len(layers)


def python_violations(package_root: Path, layers: tuple[tuple[str, ...], ...] = PYTHON_LAYERS) -> list[Violation]:
    """Upward imports and import loops in the package at ``package_root`` (python/kiln)."""
    modules = python_modules(package_root)
    known = set(modules) | {"kiln._C"}
    found: list[Violation] = []
    graph: dict[str, dict[str, PythonImport]] = {}
    repo = package_root.parent.parent
    for module, path in modules.items():
        relative = path.relative_to(repo).as_posix() if path.is_relative_to(repo) else str(path)
        edges: dict[str, PythonImport] = {}
        for imp in python_imports(module, path, known):
            target = imp.target if imp.target in known else _owning_module(imp.target, known)
            if target is None or target == module:
                continue
            # A package's __init__ assembles its namespace from its own submodules, whatever their layer.
            assembling = path.name == "__init__.py" and target.startswith(module + ".")
            upward = python_layer(target, layers) > python_layer(module, layers)
            if not assembling and upward and target not in edges:
                found.append(Violation(relative, imp.line,
                                       f"{module} imports {target}, which is in a later layer"))
            if assembling:  # how packages are built, not a loop
                continue
            edges.setdefault(target, imp)
        graph[module] = edges
    for cycle in _cycles(graph):
        first = cycle[0]
        imp = graph[first][cycle[1 % len(cycle)]]
        relative = modules[first].relative_to(repo).as_posix() if modules[first].is_relative_to(repo) else first
        found.append(Violation(relative, imp.line, "import loop: " + " -> ".join(cycle + [cycle[0]])))
    return found


def _owning_module(name: str, known: set[str]) -> str | None:
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in known:
            return candidate
        parts.pop()
    return None


def _cycles(graph: dict[str, dict[str, PythonImport]]) -> list[list[str]]:
    """One representative cycle per strongly connected component with a loop (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0

    def connect(start: str) -> None:
        nonlocal counter
        work = [(start, iter(sorted(graph.get(start, {}))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, {})))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(component)

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return [_one_cycle(graph, set(component)) for component in components]


def _one_cycle(graph: dict[str, dict[str, PythonImport]], members: set[str]) -> list[str]:
    """A shortest loop through the component's first member (breadth-first)."""
    start = min(members)
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node]):
                if child not in members:
                    continue
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return list(reversed(path))
                if child not in parents:
                    parents[child] = node
                    following.append(child)
        frontier = following
    return sorted(members)


def all_violations(root: Path) -> list[Violation]:
    """The C++ and Python violations of the tree at ``root`` (the repository root)."""
    return cpp_violations(root) + python_violations(root / "python" / "kiln")


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent
    violations = all_violations(root)
    for violation in violations:
        print(violation)
    print(f"check_architecture: {len(violations)} violation(s)")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
