"""Unary pointwise and activation cases: exp, tanh, gelu, sigmoid and relu on 1K,
1M and 16M float32 elements, contiguous and transposed (a 2-D view), on 1 and 2
threads, side by side with torch (gelu and relu through torch.nn.functional's
aten ops). Each case sets both sides' thread counts in its make() and puts the
previous ones back in its notes hook. The 16M cases are bandwidth-bound: a
``copy 64 MiB`` reference case runs in the same process, and

    python bench/cases_unary.py [--quick] [--repeat N] [--filter SUBSTR]

prints the table with each large case's bandwidth (bytes read + written: a 16M
unary op moves 2 x 64 MiB) as a fraction of the copy's.
"""

from __future__ import annotations

import sys
from pathlib import Path

from harness import Case

SIZES = {"1K": 1 << 10, "1M": 1 << 20, "16M": 1 << 24}
SIDE = {"1K": 32, "1M": 1 << 10, "16M": 1 << 12}  # the 2-D view is SIDE x SIDE
THREADS = (1, 2)
OPS = ("exp", "tanh", "gelu", "sigmoid", "relu")
COPY_ELEMENTS = 1 << 24  # 64 MiB of float32
COPY_CASE = "copy 64 MiB (numpy.copyto | torch copy_) [unary]"
GROUP = "unary"


def _libs():
    import torch

    import kiln

    return kiln, torch


def _functions(op: str):
    kiln, torch = _libs()
    if op == "gelu":
        return kiln._C._functions.gelu, torch._C._nn.gelu
    return getattr(kiln, op), getattr(torch, op)


def _unary_case(op: str, size: str, layout: str, threads: int) -> Case:
    elements = SIZES[size]
    previous: list[tuple[int, int]] = []

    def make():
        kiln, torch = _libs()
        previous.append((kiln.get_num_threads(), torch.get_num_threads()))
        kiln.set_num_threads(threads)
        torch.set_num_threads(threads)
        if layout == "contiguous":
            kx, tx = kiln.rand(elements) * 4 - 2, torch.rand(elements) * 4 - 2
        else:
            n = SIDE[size]
            kx = (kiln.rand(n, n) * 4 - 2).transpose(0, 1)
            tx = (torch.rand(n, n) * 4 - 2).transpose(0, 1)
        kfn, tfn = _functions(op)
        return (lambda: kfn(kx)), (lambda: tfn(tx))

    def notes():
        kiln, torch = _libs()
        kiln_threads, torch_threads = previous.pop()
        kiln.set_num_threads(kiln_threads)
        torch.set_num_threads(torch_threads)
        return {"bytes_moved": 2 * 4 * elements, "threads": threads}

    return Case(f"{op} {size} f32 {layout} {threads}T", make=make, notes=notes, group=GROUP)


def _copy_case() -> Case:
    def make():
        import numpy

        _, torch = _libs()
        src, dst = numpy.ones(COPY_ELEMENTS, dtype=numpy.float32), numpy.empty(COPY_ELEMENTS, dtype=numpy.float32)
        tsrc, tdst = torch.ones(COPY_ELEMENTS), torch.empty(COPY_ELEMENTS)
        copyto = numpy.copyto
        return (lambda: copyto(dst, src)), (lambda: tdst.copy_(tsrc))

    return Case(COPY_CASE, make=make, notes=lambda: {"bytes_moved": 2 * 4 * COPY_ELEMENTS}, group=GROUP)


def cases() -> list[Case]:
    result = [_copy_case()]
    for size in SIZES:
        for layout in ("contiguous", "transposed"):
            for threads in THREADS:
                for op in OPS:
                    result.append(_unary_case(op, size, layout, threads))
    return result


def bandwidth_table(report: dict) -> str:
    """The unary cases with, for the 16M ones, GB/s and the fraction of the copy's bandwidth."""
    from harness import format_ratio, format_seconds

    by_name = {case["name"]: case for case in report["cases"]}
    copy = by_name.get(COPY_CASE)
    copy_bw = None
    if copy and not copy["error"]:
        copy_bw = copy["notes"]["bytes_moved"] / copy["sides"]["kiln"]["median_s"]
    rows = [
        "| case | kiln | torch | kiln/torch | kiln GB/s | torch GB/s | kiln / copy bw | torch / copy bw |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for case in report["cases"]:
        if case["group"] != GROUP:
            continue
        if case["error"]:
            rows.append(f"| {case['name']} | error: {case['error']} | | | | | | |")
            continue
        k, t = case["sides"]["kiln"]["median_s"], case["sides"]["torch"]["median_s"]
        extra = ["", "", "", ""]
        moved = (case["notes"] or {}).get("bytes_moved")
        if moved and ("16M" in case["name"] or case["name"] == COPY_CASE):
            extra = [f"{moved / k / 1e9:.1f}", f"{moved / t / 1e9:.1f}"]
            extra += [f"{moved / k / copy_bw:.2f}", f"{moved / t / copy_bw:.2f}"] if copy_bw else ["", ""]
        rows.append(f"| {case['name']} | {format_seconds(k)} | {format_seconds(t)} | {format_ratio(case['ratio'])} | "
                    + " | ".join(extra) + " |")
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    import harness

    settings = harness.Settings.quick() if "--quick" in argv else harness.Settings()
    if "--repeat" in argv:
        settings.repeat = int(argv[argv.index("--repeat") + 1])
    selected = cases()
    if "--filter" in argv:
        needle = argv[argv.index("--filter") + 1]
        selected = [c for c in selected if needle in c.name or c.name == COPY_CASE]
    progress = lambda label: print(f"  timing {label}", file=sys.stderr, flush=True)  # noqa: E731
    report = harness.run_cases(selected, settings, progress)
    json_path, _ = harness.write_report(report, Path(__file__).resolve().parent / "results")
    print(bandwidth_table(report))
    print(f"\nwrote {json_path}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main(sys.argv[1:]))
