"""Lists every op of eager/ops/*.yaml with its kernels, tags and the source file
that defines each kernel: the op list the kernel folders' READMEs point to,
generated from the yaml and the sources instead of kept by hand.

  python3 tools/opgen/list_kernels.py                 # every op
  python3 tools/opgen/list_kernels.py --grep softmax  # ops whose name contains softmax
  python3 tools/opgen/list_kernels.py --file pointwise/  # kernels defined under a path

One line per op: `name.overload  KEY: kernel (file) ...  [tags]`. A kernel whose
definition is not found in eager/ (or is generated) shows `(?)`.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from model import OpgenError, load_ops  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# A function definition's first line: no indentation, a name followed by "(",
# and no ";" at the end (that would be a declaration).
_DEFINITION = re.compile(r"^[A-Za-z_][\w:<>,\s&*]*?\b([A-Za-z_]\w*)\(")
# A macro that defines kernels from an op's stem: `KILN_UNARY_KERNELS(abs, ...)`
# (abs_cpu, abs_cpu_, abs_out_cpu) or an X-macro list entry `X(abs, ...)`.
_MACRO_USE = re.compile(r"^\s*[A-Z][A-Z0-9_]*\(\s*([a-z_][a-z0-9_]*)\s*[,)]")
# X-macro op lists: `#define KILN_FORALL_SPECIAL_UNARY_OPS(_) _(lgamma) _(digamma) ...`
# (in a header), expanded into kernels by `KILN_FORALL_...(SOME_FAMILY_)` in a .cpp.
_FORALL_DEFINE = re.compile(r"#define (KILN_FORALL_\w+)\(_\)((?:.*\\\n)*.*)")
_FORALL_USE = re.compile(r"^(KILN_FORALL_\w+)\((\w+)\)", re.M)
_KERNEL_SUFFIX = re.compile(r"(_out_cpu|_cpu_|_cpu)$")


def kernel_sources(root: Path = ROOT) -> tuple[dict[str, str], dict[str, str]]:
    """(function name -> the eager/ .cpp file, relative to root, defining it;
    op stem -> the .cpp file where a macro is invoked with it)."""
    found: dict[str, str] = {}
    by_macro: dict[str, str] = {}
    for path in sorted((root / "eager").rglob("*.cpp")):
        rel = str(path.relative_to(root))
        for line in path.read_text(errors="replace").splitlines():
            macro = _MACRO_USE.match(line)
            if macro:
                by_macro.setdefault(macro.group(1), rel)
            if line.startswith(("#", "//", " ", "}", "namespace", "static_assert", "template")):
                continue
            if line.rstrip().endswith(";"):
                continue
            m = _DEFINITION.match(line)
            if m:
                found.setdefault(m.group(1), rel)
    # Op stems of X-macro lists -> the .cpp expanding the list into kernels
    # (an expansion through a *FAMILY* macro first, then any but the stubs').
    lists: dict[str, list[str]] = {}
    for path in sorted((root / "eager").rglob("*.h")):
        for m in _FORALL_DEFINE.finditer(path.read_text(errors="replace")):
            lists[m.group(1)] = re.findall(r"_\((\w+)\)", m.group(2))
    expansions: dict[str, str] = {}
    for path in sorted((root / "eager").rglob("*.cpp")):
        for m in _FORALL_USE.finditer(path.read_text(errors="replace")):
            rank = 0 if "FAMILY" in m.group(2) else 1 if "STUB" not in m.group(2) else 2
            best = expansions.get(m.group(1))
            if best is None or rank < best[0]:
                expansions[m.group(1)] = (rank, str(path.relative_to(root)))
    for name, stems in lists.items():
        if name in expansions:
            for stem in stems:
                by_macro.setdefault(stem, expansions[name][1])
    return found, by_macro


def source_of(kernel: str, found: dict[str, str], by_macro: dict[str, str]) -> str:
    if kernel in found:
        return found[kernel]
    stem = _KERNEL_SUFFIX.sub("", kernel)
    for candidate in (stem, re.sub(r"(_scalar_tensor|_scalar)$", "", stem)):
        if candidate in by_macro:
            return by_macro[candidate]
    return "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--yaml", type=Path, default=ROOT / "eager" / "ops", help="eager/ops or one yaml file")
    parser.add_argument("--grep", default="", help="only ops whose full name contains this")
    parser.add_argument("--file", default="", help="only ops with a kernel defined in a file whose path contains this")
    args = parser.parse_args(argv)
    paths = sorted(args.yaml.glob("*.yaml")) if args.yaml.is_dir() else [args.yaml]
    try:
        ops = [op for p in paths for op in load_ops(p.read_text(), p.name)]
    except OpgenError as e:
        print(f"list_kernels: error: {e}", file=sys.stderr)
        return 1
    found, by_macro = kernel_sources()
    shown = 0
    for op in sorted(ops, key=lambda o: o.full_name):
        if args.grep not in op.full_name:
            continue
        files = {key: source_of(kernel, found, by_macro) for key, kernel in op.dispatch.items()}
        if args.file and not any(args.file in f for f in files.values()):
            continue
        kernels = "  ".join(f"{key}: {kernel} ({files[key]})" for key, kernel in op.dispatch.items()) or "(no kernel)"
        tags = f"  [{', '.join(op.tags)}]" if op.tags else ""
        print(f"{op.full_name}  {kernels}{tags}")
        shown += 1
    print(f"# {shown} of {len(ops)} ops", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
