"""Run the kiln-vs-PyTorch benchmarks: ``python bench/run.py [--filter SUBSTR] [--repeat N] [--out DIR] [--quick]``.

Collects cases from every ``bench/cases_*.py`` module (each exposes
``cases() -> list[Case]``), keeps those whose ``group/name`` contains the filter,
times them with ``harness.run_cases``, prints the markdown table and writes the
JSON and markdown reports into the output folder.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))  # so cases modules can `from harness import Case`

import harness  # noqa: E402


def load_case_modules(bench_dir: Path = BENCH_DIR) -> list:
    """Import every ``cases_*.py`` in ``bench_dir``, in name order."""
    modules = []
    for path in sorted(bench_dir.glob("cases_*.py")):
        spec = importlib.util.spec_from_file_location(f"kiln_bench_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules.append(module)
    return modules


def collect_cases(modules: list, name_filter: str | None = None) -> list[harness.Case]:
    """All cases of the modules whose ``group/name`` contains ``name_filter``."""
    cases = [case for module in modules for case in module.cases()]
    if name_filter:
        cases = [case for case in cases if name_filter in f"{case.group}/{case.name}"]
    return cases


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Time kiln and PyTorch side by side.")
    parser.add_argument("--filter", help="run only cases whose group/name contains this")
    parser.add_argument("--repeat", type=int, help="samples per side (default 10, or 3 with --quick)")
    parser.add_argument("--out", type=Path, default=BENCH_DIR / "results", help="folder for the reports")
    parser.add_argument("--quick", action="store_true", help="short samples and few repeats, for a smoke run")
    parser.add_argument("--threads", type=int, default=1, help="threads for both kiln and torch (default 1)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.quick:
        settings = harness.Settings.quick(threads=args.threads)
    else:
        settings = harness.Settings(threads=args.threads)
    if args.repeat is not None:
        settings.repeat = args.repeat
    cases = collect_cases(load_case_modules(), args.filter)
    if not cases:
        print(f"no case matches {args.filter!r}", file=sys.stderr)
        return 1
    progress = lambda label: print(f"  timing {label}", file=sys.stderr, flush=True)  # noqa: E731
    report = harness.run_cases(cases, settings, progress)
    json_path, md_path = harness.write_report(report, args.out)
    print(harness.markdown_table(report))
    print(f"\nwrote {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
