"""tools/opgen loaded as the tests use it: its main module (which puts tools/opgen on
sys.path and imports its modules), and the generator run on a small ops.yaml text."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

OPGEN = Path(__file__).resolve().parents[3] / "tools" / "opgen"


def load_opgen():
    """tools/opgen/main.py as a module, loaded once per process."""
    main = sys.modules.get("kiln_opgen_main")
    if main is None:
        spec = importlib.util.spec_from_file_location("kiln_opgen_main", OPGEN / "main.py")
        main = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(main)
        sys.modules["kiln_opgen_main"] = main
    return main


def generate(text: str) -> dict[str, str]:
    """The files opgen writes for the ops.yaml ``text`` (dedented)."""
    return load_opgen().generate(textwrap.dedent(text))


def error_of(text: str) -> str:
    """The message of the OpgenError opgen raises for ``text``."""
    with pytest.raises(sys.modules["model"].OpgenError) as info:
        generate(text)
    return str(info.value)
