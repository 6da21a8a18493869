"""Binary pointwise cases: add and mul on 1K, 1M and 16M float32 elements,
contiguous and transposed (2-D views, both operands), on 1 and 2 threads.

Each case sets the thread count on both sides in its make() (whatever --threads
says) and puts the previous counts back in its notes hook, which the harness
calls right after timing. The 16M cases are bandwidth-bound: a
``copy 64 MiB`` reference case (numpy.copyto into a preallocated array on the
kiln side, torch's copy_ on the other) runs in the same process, and

    python bench/cases_binary.py [--quick] [--repeat N]

prints the table with each large case's bandwidth (bytes read + written: a
16M add moves 3 x 64 MiB) as a fraction of the copy's (2 x 64 MiB).
"""

from __future__ import annotations

import sys
from pathlib import Path

from harness import Case

SIZES = {"1K": 1 << 10, "1M": 1 << 20, "16M": 1 << 24}
SIDE = {"1K": 32, "1M": 1 << 10, "16M": 1 << 12}  # the 2-D view is SIDE x SIDE
THREADS = (1, 2)
COPY_ELEMENTS = 1 << 24  # 64 MiB of float32
COPY_CASE = "copy 64 MiB (numpy.copyto | torch copy_)"


def _libs():
    import torch

    import kiln

    return kiln, torch


def _set_threads(threads: int) -> tuple[int, int]:
    """Set both sides' thread counts; return the previous (kiln, torch) counts."""
    kiln, torch = _libs()
    before = (kiln.get_num_threads(), torch.get_num_threads())
    kiln.set_num_threads(threads)
    torch.set_num_threads(threads)
    return before


def _binary_case(op: str, size: str, layout: str, threads: int) -> Case:
    elements = SIZES[size]
    previous: list[tuple[int, int]] = []

    def make():
        kiln, torch = _libs()
        previous.append(_set_threads(threads))
        if layout == "contiguous":
            shape = (elements,)
            ka, kb = kiln.ones(shape), kiln.full(shape, 2.0)
            ta, tb = torch.ones(shape), torch.full(shape, 2.0)
        else:
            n = SIDE[size]
            ka, kb = kiln.ones(n, n).transpose(0, 1), kiln.full((n, n), 2.0).transpose(0, 1)
            ta, tb = torch.ones(n, n).transpose(0, 1), torch.full((n, n), 2.0).transpose(0, 1)
        kfn, tfn = getattr(kiln, op), getattr(torch, op)
        return (lambda: kfn(ka, kb)), (lambda: tfn(ta, tb))

    def notes():
        kiln, torch = _libs()
        kiln_threads, torch_threads = previous.pop()
        kiln.set_num_threads(kiln_threads)
        torch.set_num_threads(torch_threads)
        return {"bytes_moved": 3 * 4 * elements, "threads": threads}

    return Case(f"{op} {size} f32 {layout} {threads}T", make=make, notes=notes, group="binary")


def _copy_case() -> Case:
    def make():
        import numpy

        _, torch = _libs()
        src, dst = numpy.ones(COPY_ELEMENTS, dtype=numpy.float32), numpy.empty(COPY_ELEMENTS, dtype=numpy.float32)
        tsrc, tdst = torch.ones(COPY_ELEMENTS), torch.empty(COPY_ELEMENTS)
        copyto = numpy.copyto
        return (lambda: copyto(dst, src)), (lambda: tdst.copy_(tsrc))

    return Case(COPY_CASE, make=make, notes=lambda: {"bytes_moved": 2 * 4 * COPY_ELEMENTS}, group="binary")


def cases() -> list[Case]:
    result = [_copy_case()]
    for size in SIZES:
        for layout in ("contiguous", "transposed"):
            for threads in THREADS:
                for op in ("add", "mul"):
                    result.append(_binary_case(op, size, layout, threads))
    return result


def bandwidth_table(report: dict) -> str:
    """The binary cases with, for the 16M ones, GB/s and the fraction of the copy's bandwidth."""
    by_name = {case["name"]: case for case in report["cases"]}
    copy = by_name.get(COPY_CASE)
    copy_bw = None
    if copy and not copy["error"]:
        copy_bw = copy["notes"]["bytes_moved"] / copy["sides"]["kiln"]["median_s"]
    rows = [
        "| case | kiln | torch | kiln/torch | kiln GB/s | torch GB/s | kiln / copy bw | torch / copy bw |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    from harness import format_ratio, format_seconds

    for case in report["cases"]:
        if case["group"] != "binary":
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

    quick = "--quick" in argv
    settings = harness.Settings.quick() if quick else harness.Settings()
    if "--repeat" in argv:
        settings.repeat = int(argv[argv.index("--repeat") + 1])
    progress = lambda label: print(f"  timing {label}", file=sys.stderr, flush=True)  # noqa: E731
    report = harness.run_cases(cases(), settings, progress)
    json_path, _ = harness.write_report(report, Path(__file__).resolve().parent / "results")
    print(bandwidth_table(report))
    print(f"\nwrote {json_path}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main(sys.argv[1:]))
