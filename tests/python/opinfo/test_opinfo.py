"""kiln against PyTorch's own operator test database (OpInfo), chunk by chunk.

Each case runs one chunk of torch's op_db in a worker subprocess (opinfo_driver.py):
forward values and dtypes in float32, float64, an integer dtype and bool, float64
gradients, and error inputs (opinfo_cases.py). Every disagreement must be a row of
known_differences.KNOWN_DIFFERENCES, with its reason, and every row must still
disagree (but the rounding-dependent ones, which another CPU may get right); an op
that crashes its worker fails the chunk by name.

KILN_OPINFO_FULL=1 compares every sample (the default: a few per op and dtype);
KILN_OPINFO_REFERENCE=1 adds the reference inputs.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from known_differences import (FULL_RUN_DIFFERENCES, KNOWN_DIFFERENCES, MISSING_OPS, ROUNDING_DEPENDENT,
                               ROUNDING_DEPENDENT_FULL)
from opinfo_driver import CHUNKS, run_chunk, sample_limit


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_opinfo_chunk(chunk):
    result = run_chunk(chunk)
    full = sample_limit() == 0
    table = {**KNOWN_DIFFERENCES, **FULL_RUN_DIFFERENCES} if full else KNOWN_DIFFERENCES
    may_agree = ROUNDING_DEPENDENT | ROUNDING_DEPENDENT_FULL if full else ROUNDING_DEPENDENT
    assert not result.crashed, f"ops that crashed or hung the worker: {result.crashed}"
    found = defaultdict(list)
    for report in result.reports:
        for kind, index, message in report["disagreements"]:
            found[(report["key"], kind)].append(f"sample {index}: {message}")
    unexplained = {group: messages[:2] for group, messages in found.items() if group not in table}
    keys = {report["key"] for report in result.reports}
    stale = [group for group in table if group[0] in keys and group not in found and group not in may_agree]
    unlisted_missing = sorted(set(result.missing) - set(MISSING_OPS))
    resolved_now = sorted(key for key in MISSING_OPS if key in keys)
    assert not unexplained, "disagreements with torch that known_differences.py does not list:\n" + "\n".join(
        f"{key} | {kind}: {messages}" for (key, kind), messages in sorted(unexplained.items()))
    assert not stale, f"known differences that now agree with torch (remove their rows): {stale}"
    assert not unlisted_missing, f"OpInfos with no kiln op that MISSING_OPS does not list: {unlisted_missing}"
    assert not resolved_now, f"ops MISSING_OPS lists that kiln now has (remove them): {resolved_now}"
