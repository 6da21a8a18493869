"""pytest's setup for the Python suite: puts helpers/ on sys.path, so a test in any
area folder imports the shared helpers by module name (``from torch_compare import
assert_same_error``), whether pytest runs the whole tree or one file."""

import sys
from pathlib import Path

_HELPERS = str(Path(__file__).resolve().parent / "helpers")
if _HELPERS not in sys.path:
    sys.path.insert(0, _HELPERS)
