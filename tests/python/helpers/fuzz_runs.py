"""Runs a Python fuzz target (fuzz/python/fuzz_<name>.py) as a subprocess over its corpus and a seeded
number of new inputs, and checks that it ended with no finding (tests/python/tooling)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def seeded_outcomes(target: Path, corpus: Path, runs: int, seed: int, artifacts: Path, input_name: str,
                    timeout: float) -> dict[str, int]:
    """The outcome counts of `target` over `corpus` then `runs` inputs from `seed`; fails the test, naming the
    last input (artifacts / input_name, which the target writes before each call), when the target exits
    non-zero. Asserts every corpus entry and seeded input was counted."""
    proc = subprocess.run([sys.executable, str(target), "--runs", str(runs), "--seed", str(seed), "--artifact",
                           str(artifacts), str(corpus)], capture_output=True, text=True, timeout=timeout)
    current = artifacts / input_name
    last_case = current.read_text() if current.exists() else "(none)"
    assert proc.returncode == 0, (f"{target.stem} failed (exit {proc.returncode}); last case {last_case}\n"
                                  f"{proc.stderr[-3000:]}")
    counts = json.loads(proc.stdout.split("no finding: ")[1].replace("'", '"'))
    assert sum(counts.values()) == runs + len(list(corpus.iterdir()))
    return counts
