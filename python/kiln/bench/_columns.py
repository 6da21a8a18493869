"""The report's four columns and what each needs: the library (``kiln``, or ``torch`` imported
here lazily, only when a torch column runs: kiln never imports torch at module level) and the
compile function. A column that cannot run says why (torch not installed, skipped by --quick)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    library: str       # "kiln" or "torch"
    compiled: bool


COLUMNS = [
    Column("kiln_eager", "kiln eager", "kiln", False),
    Column("kiln_compiled", "kiln compiled", "kiln", True),
    Column("torch_eager", "torch eager", "torch", False),
    Column("torch_compile", "torch.compile", "torch", True),
]
BASELINE = "kiln_eager"   # speedups are over this column; agreement is checked against its first call


def load_library(name: str):
    """``kiln`` or ``torch``; None when torch is not importable."""
    if name == "kiln":
        import kiln
        return kiln
    try:
        import torch  # optional: the torch columns only; kiln itself never imports it
    except ImportError:
        return None
    return torch


def why_not_run(column: Column, lib, quick: bool, torch_compile_in_quick: bool) -> Optional[tuple]:
    """(status, note) when the column does not run, else None."""
    if lib is None:
        return "unavailable", f"{column.library} is not installed"
    if column.key == "torch_compile" and quick and not torch_compile_in_quick:
        return "skipped", "skipped by --quick (torch.compile's cold compile takes seconds per workload; " \
                          "add --torch-compile)"
    return None
