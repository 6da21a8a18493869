"""Instructions per cached kiln.compile call (callgrind; stable on a loaded machine), issue 23:

    python bench/compile_call_instructions.py [--calls N] [--case NAME ...] [--against OTHER_PYTHON]

Each case calls a compiled 1-element function N times with callgrind's instrumentation on around that
loop only (CALLGRIND_START/STOP_INSTRUMENTATION from valgrind/callgrind.h, in a 3-line C library built
here with the system compiler and loaded through ctypes; `valgrind --tool=callgrind --instr-atstart=no`),
one valgrind process per case, and reports instructions per call: the whole call, and the part inside
runtime::CompiledGraph::run (inclusive). Cases: x + 1.0 called positionally and with keyword or nested
arguments, without grad (under no_grad) and with x requiring grad; the eager `x + 1.0` beside them.
`--against` runs the same cases with another checkout's Python (its venv) for before/after figures.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

_LIB_SOURCE = """#include <valgrind/callgrind.h>
void kiln_cg_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; }
void kiln_cg_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; CALLGRIND_DUMP_STATS; }
"""

CASES = {
    "eager, no grad": ("eager", "pos", False),
    "positional, no grad": ("compile", "pos", False),
    "keyword, no grad": ("compile", "kw", False),
    "nested, no grad": ("compile", "nested", False),
    "positional, grad": ("compile", "pos", True),
    "keyword, grad": ("compile", "kw", True),
}


def _child(case: str, calls: int, lib: str) -> None:
    import ctypes

    import kiln

    kiln.set_num_threads(1)
    cg = ctypes.CDLL(lib)
    how, style, grad = CASES[case]
    x = kiln.ones(1, requires_grad=grad)
    if style == "pos":
        fn = lambda x: x + 1.0  # noqa: E731
        call = (lambda f: f(x))
    elif style == "kw":
        fn = lambda *, x: x + 1.0  # noqa: E731
        call = (lambda f: f(x=x))
    else:
        fn = lambda d: d["x"][0] + 1.0  # noqa: E731
        arg = {"x": [x]}
        call = (lambda f: f(arg))
    f = fn if how == "eager" else kiln.compile(fn)
    ctx = kiln.no_grad() if not grad else _Nothing()
    with ctx:
        for _ in range(5):
            call(f)
        cg.kiln_cg_start()
        for _ in range(calls):
            call(f)
        cg.kiln_cg_stop()


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _measure(python: str, case: str, calls: int, lib: str, workdir: str) -> tuple[float, float]:
    out = os.path.join(workdir, f"cg.{abs(hash((python, case)))}")
    subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}.%p",
                    python, os.path.abspath(__file__), "--child", case, "--calls", str(calls), "--lib", lib],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    files = [os.path.join(workdir, f) for f in os.listdir(workdir) if f.startswith(os.path.basename(out) + ".")]
    total = run = 0
    for path in files:
        text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
                              check=True, capture_output=True, text=True).stdout
        m = re.search(r"^([\d,]+)\s+\(100\.0%\)\s+PROGRAM TOTALS", text, re.M)
        if m:
            total += int(m.group(1).replace(",", ""))
        for line in text.splitlines():
            if "CompiledGraph::run(" in line and "run_kernel" not in line:
                run = max(run, int(line.split()[0].replace(",", "")))
        os.remove(path)
    return total / calls, run / calls


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--case", action="append")
    parser.add_argument("--against")
    parser.add_argument("--child")
    parser.add_argument("--lib")
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.calls, args.lib)
        return 0
    with tempfile.TemporaryDirectory() as workdir:
        lib = os.path.join(workdir, "libkilncg.so")
        src = os.path.join(workdir, "cg.c")
        with open(src, "w") as fh:
            fh.write(_LIB_SOURCE)
        subprocess.run(["cc", "-shared", "-fPIC", "-O1", src, "-o", lib], check=True)
        pythons = {"this": sys.executable}
        if args.against:
            pythons["against"] = args.against
        print(f"instructions per call (callgrind, {args.calls} calls, 1 thread)")
        print("| case | " + " | ".join(f"{p}: call | {p}: CompiledGraph::run" for p in pythons) + " |")
        print("|---|" + "---|---|" * len(pythons))
        for case in args.case or list(CASES):
            row = []
            for python in pythons.values():
                total, run = _measure(python, case, args.calls, lib, workdir)
                row += [f"{total:,.0f}", f"{run:,.0f}" if run else "-"]
            print(f"| {case} | " + " | ".join(row) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
