"""pytest's setup for the Python suite.

It puts helpers/ on sys.path, so a test in any area folder imports the shared helpers
by module name (``from torch_compare import assert_same_error``), whether pytest runs the
whole tree or one file.

It keeps the skip budget: a test may skip only for a reason on ALLOWED_SKIPS.

A skip that is not on the list reports as a failure naming its reason, so a
skip cannot hide a regression (a lost binding, an op that stopped raising, a
case that no longer applies). A case that does not apply is not generated; a
known kiln bug is an xfail with strict=True and its reason, never a skip.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

_HELPERS = str(Path(__file__).resolve().parent / "helpers")
if _HELPERS not in sys.path:
    sys.path.insert(0, _HELPERS)

# Compiled kernels of the run go to a fresh disk cache (codegen/llvm/KernelCache.h), never ~/.cache/kiln;
# subprocesses the tests start inherit it.
_KERNEL_CACHE_DIR = tempfile.mkdtemp(prefix="kiln-test-kernel-cache-")
os.environ["KILN_CACHE_DIR"] = _KERNEL_CACHE_DIR
atexit.register(shutil.rmtree, _KERNEL_CACHE_DIR, True)

# hypothesis: scripts/test.sh (the gate) sets KILN_HYPOTHESIS_PROFILE=gate, so CI draws the same examples every
# run and a red run means a change, not a newly drawn example; pytest run by hand draws fresh ones and explores.
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("gate", derandomize=True, database=None)
if os.environ.get("KILN_HYPOTHESIS_PROFILE"):
    _hypothesis_settings.load_profile(os.environ["KILN_HYPOTHESIS_PROFILE"])

# Each reason a test may skip for, and the one way of writing it.
ALLOWED_SKIPS = {
    "no GPU": re.compile(r"^no GPU\b"),
    "an optional package is missing (naming it)": re.compile(
        r"^(optional package [\w.\-]+ is not installed|could not import '[\w.\-]+')"),
    "the CPU lacks an instruction set": re.compile(r"^CPU lacks the instruction set\b"),
}


def skip_reason(report) -> str:
    """The text a skipped report gives as its reason."""
    if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    return str(report.longrepr)


def skip_is_allowed(reason: str) -> bool:
    return any(pattern.search(reason) for pattern in ALLOWED_SKIPS.values())


def fail_unallowed_skip(report) -> None:
    """Turns a skipped report whose reason is not allowed into a failure that says so."""
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = skip_reason(report)
    if not skip_is_allowed(reason):
        report.outcome = "failed"
        report.longrepr = (f"skipped for a reason outside the allow-list (tests/python/conftest.py ALLOWED_SKIPS: "
                           f"{'; '.join(ALLOWED_SKIPS)}): {reason}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    fail_unallowed_skip(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """A module that skips as a whole (a module-level importorskip) is held to the same list."""
    outcome = yield
    fail_unallowed_skip(outcome.get_result())


def pytest_collection_modifyitems(config, items):
    """An xfail must be strict (an unexpected pass fails) and say why."""
    for item in items:
        for mark in item.iter_markers("xfail"):
            if mark.kwargs.get("strict") is not True or not mark.kwargs.get("reason"):
                raise pytest.UsageError(f"{item.nodeid}: xfail needs strict=True and a reason")
