"""A short soak (scripts/soak.py): a GPT-style model trains eagerly and through kiln.compile,
and after warm-up nothing grows: live allocator memory is the same after every step, the
reserved segments stay under the warm-up's peak, and the RSS stays within a small slack.
KILN_LONG_TESTS=1 soaks each mode for five minutes."""

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
LONG = os.environ.get("KILN_LONG_TESTS") == "1"


def _soak_module():
    spec = importlib.util.spec_from_file_location("soak", ROOT / "scripts" / "soak.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


soak = _soak_module()


@pytest.mark.parametrize("mode", ["eager", "compiled"])
def test_training_reaches_a_steady_state(mode):
    problems = soak.soak(mode, seconds=300 if LONG else 0, warmup=4, rss_slack=16 << 20, min_steps=12)
    assert problems == []
