"""tools/opgen/list_kernels.py, the generated op list eager/kernels/cpu/README.md points to:
every op appears once, with its kernels, tags and the file defining each kernel."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "tools" / "opgen" / "list_kernels.py"


def run(*args: str) -> list[str]:
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def test_every_op_once_with_kernel_file_and_tags():
    lines = run()
    names = [line.split()[0] for line in lines]
    assert len(names) == len(set(names)) > 500
    mm = next(line for line in lines if line.split()[0] == "mm")
    assert "CPU: mm_cpu (eager/kernels/cpu/linalg/" in mm
    add_ = next(line for line in lines if line.split()[0] == "add_.Tensor")
    assert add_.endswith("]") and "inplace" in add_


def test_filters_by_name_and_by_file():
    assert all("softmax" in line.split()[0] for line in run("--grep", "softmax"))
    by_file = run("--file", "cpu/fft/")
    assert by_file and all("cpu/fft/" in line for line in by_file)
