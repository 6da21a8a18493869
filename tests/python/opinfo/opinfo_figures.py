"""Prints the OpInfo parity figures: OpInfos, resolving to kiln, missing, cases compared,
cases disagreeing and in how many ops, and each disagreement group (op, kind) with an example.

    python opinfo_figures.py [--jobs 2] [--chunks 8] [--json OUT]

It honours KILN_OPINFO_FULL and KILN_OPINFO_REFERENCE as the test does (opinfo_driver.py).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

from opinfo_driver import run_chunk


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--chunks", type=int, default=8)
    parser.add_argument("--json", default=None)
    options = parser.parse_args()
    with ThreadPoolExecutor(options.jobs) as pool:
        results = list(pool.map(lambda chunk: run_chunk(chunk, options.chunks), range(options.chunks)))
    reports = [report for result in results for report in result.reports]
    missing = sorted(key for result in results for key in result.missing)
    crashed = {key: how for result in results for key, how in result.crashed.items()}
    groups = defaultdict(list)
    for report in reports:
        for kind, index, message in report["disagreements"]:
            groups[(report["key"], kind)].append((index, message))
    cases = sum(report["cases"] for report in reports)
    disagreeing = sum(len(report["disagreements"]) for report in reports)
    ops = {key for key, _ in groups} | set(crashed)
    print(f"OpInfos: {len(reports) + len(missing) + len(crashed)}; resolving to kiln: {len(reports) + len(crashed)}; "
          f"missing: {len(missing)}")
    print(f"cases compared: {cases}; disagreeing: {disagreeing} in {len(ops)} ops; crashed: {len(crashed)}")
    print("missing:", ", ".join(missing))
    for key, how in sorted(crashed.items()):
        print(f"CRASH {key}: {how}")
    for (key, kind), items in sorted(groups.items()):
        print(f"{key} | {kind} | {len(items)} | {items[0][1][:240]}")
    if options.json:
        with open(options.json, "w") as out:
            json.dump({"reports": reports, "missing": missing, "crashed": crashed}, out)


if __name__ == "__main__":
    main()
