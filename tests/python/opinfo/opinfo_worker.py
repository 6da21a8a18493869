"""The subprocess that runs a chunk of PyTorch's OpInfo database through kiln and torch.

    python opinfo_worker.py OUT --chunk I --chunks N [--after KEY] [--samples K] [--reference]

Chunk I of N is every N-th OpInfo starting at I (by op_db order), so each chunk mixes
cheap and costly ops. It appends JSON lines to OUT as it goes: {"start": key} before an
op, then {"report": {...}} (opinfo_cases.OpReport) or {"missing": key} where the op does
not resolve to kiln. A line {"start"} without its report means the op crashed or hung the
process; the driver (opinfo_driver.py) records that and restarts after that op (--after).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "helpers"))

from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402

from opinfo_cases import OpReport, run_opinfo  # noqa: E402
from opinfo_resolve import kiln_callable, opinfo_key  # noqa: E402


def chunk_opinfos(chunk: int, chunks: int) -> list:
    return op_db[chunk::chunks]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--chunk", type=int, default=0)
    parser.add_argument("--chunks", type=int, default=1)
    parser.add_argument("--after", default=None, help="resume after this op (the one that crashed)")
    parser.add_argument("--samples", type=int, default=0, help="samples per dtype, 0 for all")
    parser.add_argument("--reference", action="store_true")
    options = parser.parse_args()
    opinfos = chunk_opinfos(options.chunk, options.chunks)
    keys = [opinfo_key(opinfo) for opinfo in opinfos]
    start = keys.index(options.after) + 1 if options.after is not None else 0
    warnings.simplefilter("ignore")
    with open(options.out, "a") as out:
        for opinfo, key in zip(opinfos[start:], keys[start:]):
            out.write(json.dumps({"start": key}) + "\n")
            out.flush()
            kiln_fn = kiln_callable(opinfo)
            if kiln_fn is None:
                out.write(json.dumps({"missing": key}) + "\n")
                continue
            try:
                report = run_opinfo(opinfo, key, kiln_fn, samples_per_dtype=options.samples or None,
                                    reference=options.reference)
            except Exception as error:  # noqa: BLE001 - the harness failing on an op is reported for that op
                report = OpReport(key)
                report.disagree("harness", 0, f"{type(error).__name__}: {error}")
            out.write(json.dumps({"report": dataclasses.asdict(report)}) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
