"""torch.serialization's process-wide options, honoured by kiln.load / kiln.save:
the byte order assumed for a checkpoint without a ``byteorder`` record, the mmap
flags of ``load(mmap=True)`` (MAP_PRIVATE: copy-on-write; MAP_SHARED: writes
reach the file), and whether records carry a CRC-32 (kiln always writes one:
Python's zipfile computes it; the option is kept and read back)."""

from __future__ import annotations

import enum
import mmap as _mmap
import sys

__all__ = ["LoadEndianness", "get_default_load_endianness", "set_default_load_endianness",
           "get_default_mmap_options", "set_default_mmap_options", "get_crc32_options", "set_crc32_options",
           "SourceChangeWarning"]


class LoadEndianness(enum.Enum):
    NATIVE = 1
    LITTLE = 2
    BIG = 3


class SourceChangeWarning(Warning):
    """torch's warning for a pickled module whose source changed (kiln does not compare sources)."""


_state = {"endianness": None, "mmap_flags": _mmap.MAP_PRIVATE, "crc32": True}


def get_default_load_endianness() -> LoadEndianness | None:
    """The byte order assumed for a checkpoint without a ``byteorder`` record (None: native)."""
    return _state["endianness"]


def set_default_load_endianness(endianness) -> None:
    if not isinstance(endianness, LoadEndianness) and endianness is not None:
        raise TypeError("Invalid argument type in function set_default_load_endianness")
    _state["endianness"] = endianness


def fallback_byteorder() -> str:
    endianness = _state["endianness"]
    if endianness is LoadEndianness.LITTLE:
        return "little"
    if endianness is LoadEndianness.BIG:
        return "big"
    return sys.byteorder


def get_default_mmap_options() -> int:
    return _state["mmap_flags"]


class set_default_mmap_options:
    """Sets the mmap flags of ``load(mmap=True)`` (mmap.MAP_PRIVATE or mmap.MAP_SHARED); also a context manager."""

    def __init__(self, flags: int) -> None:
        if flags not in (_mmap.MAP_PRIVATE, _mmap.MAP_SHARED):
            raise ValueError("Invalid argument in function set_default_mmap_options, expected mmap.MAP_PRIVATE or "
                             f"mmap.MAP_SHARED, but got {flags}")
        self.previous = _state["mmap_flags"]
        _state["mmap_flags"] = flags

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> None:
        _state["mmap_flags"] = self.previous


def mmap_shared() -> bool:
    return _state["mmap_flags"] == _mmap.MAP_SHARED


def get_crc32_options() -> bool:
    return _state["crc32"]


def set_crc32_options(compute_crc32: bool) -> None:
    _state["crc32"] = bool(compute_crc32)
