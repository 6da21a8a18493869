"""Runs opinfo_worker.py over a chunk in a subprocess, restarting it past an op that crashes or hangs,
and gathers what it reports.

The flags: KILN_OPINFO_FULL=1 compares every sample (the default takes DEFAULT_SAMPLES spread
over each op's samples per dtype); KILN_OPINFO_REFERENCE=1 adds the reference inputs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

WORKER = Path(__file__).resolve().parent / "opinfo_worker.py"
CHUNKS = 4  # each chunk is one pytest case and one worker process (~20 s of it importing torch's op_db)
DEFAULT_SAMPLES = 2  # samples per op and dtype in the default run (spread over the list: first and last)
HANG_SECONDS = 300  # an op reporting nothing for this long has hung its worker


@dataclass
class ChunkResult:
    reports: list = field(default_factory=list)  # OpReport dicts
    missing: list = field(default_factory=list)  # keys of OpInfos with no kiln op (their reports dropped)
    crashed: dict = field(default_factory=dict)  # key -> how the worker ended


def sample_limit() -> int:
    return 0 if os.environ.get("KILN_OPINFO_FULL") == "1" else DEFAULT_SAMPLES


def with_reference() -> bool:
    return os.environ.get("KILN_OPINFO_REFERENCE") == "1"


def _read(path: Path) -> list:
    if not path.exists():
        return []
    lines = []
    for line in path.read_text().splitlines():
        try:
            lines.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut by a crash
            pass
    return lines


def _run_worker(path: Path, chunk: int, chunks: int, after: str | None) -> str | None:
    """Runs the worker to its end; None when it finished, else how it ended (crash or hang)."""
    command = [sys.executable, str(WORKER), str(path), "--chunk", str(chunk), "--chunks", str(chunks),
               "--samples", str(sample_limit())]
    command += ["--reference"] if with_reference() else []
    command += ["--after", after] if after is not None else []
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    last_size, last_change = -1, time.monotonic()
    while process.poll() is None:
        time.sleep(0.5)
        size = path.stat().st_size if path.exists() else 0
        if size != last_size:
            last_size, last_change = size, time.monotonic()
        elif time.monotonic() - last_change > HANG_SECONDS:
            process.kill()
            process.wait()
            return f"hung (no progress in {HANG_SECONDS} s)"
    stderr = process.stderr.read().decode(errors="replace").strip().splitlines()
    if process.returncode == 0:
        return None
    return f"worker exited with {process.returncode}: {stderr[-1] if stderr else ''}"


def run_chunk(chunk: int, chunks: int = CHUNKS) -> ChunkResult:
    result = ChunkResult()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "reports.jsonl"
        after = None
        while True:
            ended = _run_worker(path, chunk, chunks, after)
            lines = _read(path)
            started = [line["start"] for line in lines if "start" in line]
            finished = {line["report"]["key"] for line in lines if "report" in line}
            finished |= {line["missing"] for line in lines if "missing" in line}
            if ended is None:
                break
            unfinished = [key for key in started if key not in finished and key not in result.crashed]
            if not unfinished:  # the worker died before its first op (an import error): nothing to resume
                raise RuntimeError(f"the OpInfo worker for chunk {chunk} failed: {ended}")
            result.crashed[unfinished[-1]] = ended
            after = unfinished[-1]
        result.reports = [line["report"] for line in lines if "report" in line]
        result.missing = [line["missing"] for line in lines if "missing" in line]
        # an op found by name whose cases reach a kiln op or module that does not exist counts as missing
        result.missing += [report["key"] for report in result.reports if report["missing"]]
        result.reports = [report for report in result.reports if not report["missing"]]
    return result
