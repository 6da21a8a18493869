"""Running kiln under each CPU capability build (Note [One kernel source, several
instruction sets], eager/kernels/cpu/CpuCapability.h) and checking which build ran.

KILN_CPU_CAPABILITY only caps the build kiln picks: on a CPU without AVX-512,
asking for avx512 runs avx2. So a test first asks this module whether the CPU
has the instruction set (read from /proc/cpuinfo, not from kiln, which is under
test), skips with that reason where it does not, and asserts that the build kiln
reports (kiln._C._cpu_capability()) is the one asked for.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest

CAPABILITIES = ("default", "avx2", "avx512")

# The CPU flags each build needs (as CpuCapability.cpp's detect() asks __builtin_cpu_supports).
REQUIRED_FLAGS = {
    "default": (),
    "avx2": ("avx2", "fma"),
    "avx512": ("avx512f", "avx512bw", "avx512vl", "avx512dq"),
}

# What a skip for a missing instruction set says (conftest.py's allow-list matches it).
SKIP_PREFIX = "CPU lacks the instruction set"


@functools.cache
def cpu_flags() -> frozenset[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def skip_unless_supported(capability: str) -> None:
    """Skips the calling test where this CPU cannot run ``capability``'s build."""
    missing = [flag for flag in REQUIRED_FLAGS[capability] if flag not in cpu_flags()]
    if missing:
        pytest.skip(f"{SKIP_PREFIX} of the {capability} build: no {', '.join(missing)} in /proc/cpuinfo")


def run_under(capability: str, script: str, *, env: dict | None = None) -> str:
    """Runs ``script`` in a fresh interpreter capped at ``capability``; asserts that build ran; returns its stdout.

    The script's stdout is kiln's report of the build that ran (one line), then the script's own output.
    """
    skip_unless_supported(capability)
    environment = dict(os.environ if env is None else env, KILN_CPU_CAPABILITY=capability)
    prologue = "import sys, kiln; sys.stdout.write(kiln._C._cpu_capability() + '\\n'); sys.stdout.flush()\n"
    done = subprocess.run([sys.executable, "-c", prologue + script], env=environment, capture_output=True, text=True,
                          cwd=Path(__file__).parent, check=True)
    ran, _, output = done.stdout.partition("\n")
    assert ran == capability, f"KILN_CPU_CAPABILITY={capability} ran the {ran} build"
    return output
