"""opgen: turns eager/ops/ops.yaml into the C++ API, the dispatcher
registrations, the kernel declarations, the op table and the Python bindings.

  python3 tools/opgen/main.py --yaml eager/ops --out build/release/generated

--yaml takes ops.yaml itself or the folder, whose *.yaml files (in name order)
together form the one op list: ops may be grouped by area into several files.

Writes only under --out (into kiln/generated/), and only files whose contents
changed, so an edit that touches one output recompiles only what includes it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import autograd  # noqa: E402
import cpp  # noqa: E402
import derivatives  # noqa: E402
import into  # noqa: E402
import out_from_functional  # noqa: E402
import python_bindings  # noqa: E402
from model import OpgenError, load_ops  # noqa: E402

OUTPUT_FILES = ("Functions.h", "Functions.cpp", "TensorMethodDecls.inc", "TensorMethods.cpp", "NativeFunctions.h",
                "MetaFunctions.h", "RegisterOps.cpp", "OpTable.h", "OpTable.cpp", "python_functions.cpp", "python_methods.cpp",
                "AutogradKernels.cpp", "IntoKernels.h", "IntoKernels.cpp", "OutFromFunctional.cpp")


def generate(yaml_text: str | list[tuple[str, str]], source: str = "ops.yaml") -> dict[str, str]:
    """File name -> contents; OpgenError naming the op and the reason on bad input.

    `yaml_text` is one file's text, or a list of (text, source) for several."""
    sources = [(yaml_text, source)] if isinstance(yaml_text, str) else yaml_text
    ops = []
    first_seen: dict[str, str] = {}
    for text, where in sources:
        for op in load_ops(text, where):
            if op.full_name in first_seen:
                raise OpgenError(f"{where}: {op.full_name}: duplicate overload (also in {first_seen[op.full_name]})")
            first_seen[op.full_name] = where
            ops.append(op)
    derivatives.check(ops)
    files = {**cpp.outputs(ops), **python_bindings.outputs(ops),
             "AutogradKernels.cpp": autograd.autograd_kernels_cpp(ops), **into.outputs(ops),
             **out_from_functional.outputs(ops)}
    assert tuple(files) == OUTPUT_FILES, "update OUTPUT_FILES (and CMakeLists.txt) with the outputs"
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--yaml", required=True, type=Path, help="eager/ops (every *.yaml in it) or one file")
    parser.add_argument("--out", required=True, type=Path, help="the build's generated/ directory")
    parser.add_argument("--list", action="store_true", help="print the output files and exit")
    args = parser.parse_args(argv)
    out_dir = args.out / "kiln" / "generated"
    if args.list:
        print("\n".join(str(out_dir / f) for f in OUTPUT_FILES))
        return 0
    try:
        paths = sorted(args.yaml.glob("*.yaml")) if args.yaml.is_dir() else [args.yaml]
        files = generate([(p.read_text(), str(p)) for p in paths])
    except OpgenError as e:
        print(f"opgen: error: {e}", file=sys.stderr)
        return 1
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        path = out_dir / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
