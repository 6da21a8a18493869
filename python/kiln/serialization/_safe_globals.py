"""The weights_only allow-list: the globals a checkpoint may name by default,
and the ones the user adds (torch.serialization's API of the same names).

An entry the user adds is a function or class, keyed by
``f"{obj.__module__}.{obj.__qualname__}"``, or a pair ``(obj, "module.name")``
for an object pickled under another name.
"""

from __future__ import annotations

import codecs
import contextlib
from collections import Counter, OrderedDict
from typing import Any, Callable

from kiln.serialization._torch_names import TORCH_GLOBALS

__all__ = ["add_safe_globals", "safe_globals", "get_safe_globals", "clear_safe_globals"]


def _latin1_encode(obj, encoding="utf-8", errors="strict"):
    """_codecs.encode as protocol-2 pickles use it for bytes: latin-1 only (no other codec runs)."""
    if not isinstance(obj, str) or encoding not in ("latin1", "latin-1"):
        raise RuntimeError(f"kiln.load: refusing to call _codecs.encode with encoding {encoding!r} "
                           "(weights_only=True decodes latin-1 bytes only)")
    return codecs.encode(obj, "latin1", errors)


# Plain Python objects a weights_only checkpoint may name (torch's list).
_PYTHON_GLOBALS: dict[str, Any] = {
    "collections.OrderedDict": OrderedDict,
    "collections.Counter": Counter,
    "builtins.set": set,
    "builtins.frozenset": frozenset,
    "builtins.complex": complex,
    "builtins.bytearray": bytearray,
    "builtins.slice": slice,
    "_codecs.encode": _latin1_encode,
}

DEFAULT_GLOBALS: dict[str, Any] = {**_PYTHON_GLOBALS, **TORCH_GLOBALS}

_user_globals: list[Callable | tuple[Callable, str]] = []


def _name_of(entry) -> tuple[str, Any]:
    if isinstance(entry, tuple):
        if len(entry) != 2:
            raise ValueError(f"Expected tuple of length 2 (global, str of callable full path), but got tuple of "
                             f"length: {len(entry)}")
        if type(entry[1]) is not str:
            raise TypeError(f"Expected second item in tuple to be str of callable full path, but got: "
                            f"{type(entry[1])}")
        return entry[1], entry[0]
    return f"{entry.__module__}.{entry.__qualname__}", entry


def user_globals() -> dict[str, Any]:
    """The user's allowed globals by full name."""
    return dict(_name_of(entry) for entry in _user_globals)


def add_safe_globals(safe_globals: list) -> None:
    """Allows ``kiln.load(weights_only=True)`` to rebuild these functions and classes."""
    for entry in safe_globals:
        _name_of(entry)  # validate before adding any
    for entry in safe_globals:
        if entry not in _user_globals:
            _user_globals.append(entry)


def get_safe_globals() -> list:
    """The functions and classes added with add_safe_globals."""
    return list(_user_globals)


def clear_safe_globals() -> None:
    """Forgets every global added with add_safe_globals."""
    _user_globals.clear()


@contextlib.contextmanager
def safe_globals(safe_globals: list):
    """Allows these globals inside the ``with`` block only."""
    added = [entry for entry in safe_globals if entry not in _user_globals]
    add_safe_globals(added)
    try:
        yield
    finally:
        for entry in added:
            if entry in _user_globals:
                _user_globals.remove(entry)
