"""kiln's logs of what kiln.compile does (torch._logging's shape): which
artifacts print to stderr through Python logging.

Artifacts: ``graph`` (each captured graph's text), ``guards`` (the guards a
new cache entry was keyed on), ``recompiles`` (each recompile, naming the
guard that failed), ``breaks`` (each graph break with its reason), ``passes``
(the graph after each pass of kiln._C._passes.run_pipeline, which asks
``is_enabled("passes")`` and logs through ``log``), ``codegen`` (each fused
kernel's kernel IR and the LLVM IR of its graph's module). Chosen by
the ``KILN_LOGS`` environment variable at import (``KILN_LOGS=graph,guards``;
``graph_breaks`` is accepted for ``breaks``, as torch spells it; ``all`` is
every artifact) or by ``set_logs(graph=True, ...)``. Records go to the logger
``kiln.compile.<artifact>`` at INFO, so ``caplog`` and user handlers see them
too. Imports nothing of kiln.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings

ARTIFACTS = ("graph", "guards", "recompiles", "breaks", "passes", "codegen")
_SPELLINGS = {"graph_breaks": "breaks", "graph_code": "graph"}

_enabled: set = set()
_ROOT = logging.getLogger("kiln.compile")


class _StderrHandler(logging.StreamHandler):
    """Writes to the sys.stderr of the moment (not the one at import), so redirection and capture see it."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


_handler = _StderrHandler()
_handler.setFormatter(logging.Formatter("[kiln.compile.%(artifact)s] %(message)s"))


def set_logs(graph: bool = False, guards: bool = False, recompiles: bool = False, breaks: bool = False,
             graph_breaks: bool = False, passes: bool = False, codegen: bool = False) -> None:
    """Turns each artifact's log on or off (every artifact not named is off, as torch._logging.set_logs)."""
    chosen = {"graph": graph, "guards": guards, "recompiles": recompiles, "breaks": breaks or graph_breaks,
              "passes": passes, "codegen": codegen}
    _enabled.clear()
    _enabled.update(name for name, on in chosen.items() if on)
    for name in ARTIFACTS:
        logging.getLogger(f"kiln.compile.{name}").setLevel(logging.INFO if name in _enabled else logging.WARNING)
    if _enabled and _handler not in _ROOT.handlers:
        _ROOT.addHandler(_handler)
    elif not _enabled and _handler in _ROOT.handlers:
        _ROOT.removeHandler(_handler)


def parse(spec: str) -> dict:
    """set_logs' arguments for a KILN_LOGS value (comma- or space-separated artifact names)."""
    names = [n.strip() for n in spec.replace(" ", ",").split(",") if n.strip()]
    chosen = {}
    for name in names:
        if name == "all":
            chosen.update(dict.fromkeys(ARTIFACTS, True))
            continue
        name = _SPELLINGS.get(name.lstrip("+"), name.lstrip("+"))
        if name not in ARTIFACTS:
            raise ValueError(f"KILN_LOGS: unknown artifact {name!r} (known: {', '.join(ARTIFACTS)}, all)")
        chosen[name] = True
    return chosen


def is_enabled(artifact: str) -> bool:
    return artifact in _enabled


def log(artifact: str, message: str) -> None:
    """Logs ``message`` for ``artifact`` when it is on (callers test is_enabled first where the message costs)."""
    if artifact in _enabled:
        logging.getLogger(f"kiln.compile.{artifact}").info(message, extra={"artifact": artifact})


try:
    set_logs(**parse(os.environ.get("KILN_LOGS", "")))
except ValueError as e:  # a typo in the environment must not stop `import kiln`
    warnings.warn(str(e), stacklevel=2)
