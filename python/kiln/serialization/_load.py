"""kiln.load: PyTorch checkpoints (kiln's and torch's), and safetensors files.

The file's pickle runs in the restricted unpickler by default
(weights_only=True, Note [What weights_only=True may run]) or the full one;
either way its storages come from the zip's records: read into fresh memory,
or with ``mmap=True`` mapped from the file (a record's bytes are 64-byte
aligned, so the tensor views the mapping): copy-on-write by default, so in-place
changes stay in memory (torch's MAP_PRIVATE); with
set_default_mmap_options(mmap.MAP_SHARED) they reach the file.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import pickletools
import struct

import numpy as np

from kiln import _C, cuda
from kiln.serialization._options import fallback_byteorder, mmap_shared
from kiln.serialization._safetensors import looks_like_safetensors, read_safetensors_file
from kiln.serialization._storage import LoadedStorage
from kiln.serialization._unpicklers import (
    WeightsOnlyUnpickler, allowed_global, allowed_globals, fix_py2_name, full_unpickler_class,
)
from kiln.serialization._zip_format import CheckpointReader

_ZIP_MAGIC = b"PK\x03\x04"
_LEGACY_MAGIC = b"\x80\x02\x8a\x0alZ\xfc\x9cF\xf9\x20j\xa8P\x19"  # torch's pre-1.6 format starts with this pickle


def _device_name(device) -> str:
    return str(device) if not isinstance(device, bytes) else device.decode()


def check_map_location(map_location) -> None:
    """Refuses a device kiln cannot place storages on, before reading anything."""
    if map_location is None or callable(map_location) or isinstance(map_location, dict):
        return
    name = _device_name(map_location)
    if name.split(":")[0] == "cuda" and not cuda.is_available():
        raise RuntimeError(f"kiln.load: map_location={name!r}: kiln has no CUDA device "
                           "(kiln.cuda.is_available() is False); use map_location='cpu'")
    if name.split(":")[0] not in ("cpu", "cuda"):
        raise RuntimeError(f"kiln.load: map_location={name!r}: kiln places storages on 'cpu' only")


def _place(flat, location: str):
    """Default placement: the storage's saved device, which must exist here."""
    if location == "cpu":
        return flat
    if location.startswith("cuda"):
        if not cuda.is_available():
            raise RuntimeError(f"kiln.load: attempting to deserialize a storage on the CUDA device {location!r} "
                               "but kiln.cuda.is_available() is False. If you are running on a CPU-only machine, "
                               "use kiln.load with map_location='cpu' to map your storages to the CPU.")
        return flat.to(location)
    raise RuntimeError(f"kiln.load: don't know how to restore a storage saved on {location!r}")


def _byteswapped(raw: np.ndarray, dtype, itemsize: int) -> np.ndarray:
    width = itemsize // 2 if dtype.is_complex else itemsize
    if width <= 1:
        return raw
    return np.ascontiguousarray(raw.reshape(-1, width)[:, ::-1]).reshape(-1)


class StorageLoader:
    """persistent_load for a checkpoint: each storage record read (or mapped) once, then placed by map_location."""

    def __init__(self, reader: CheckpointReader, map_location, mapped: np.ndarray | None, big_endian: bool) -> None:
        self.reader = reader
        self.map_location = map_location
        self.mapped = mapped
        self.big_endian = big_endian
        self.loaded: dict[str, LoadedStorage] = {}

    def __call__(self, pid) -> LoadedStorage:
        _, storage_type, key, location, numel = pid
        key = key.decode() if isinstance(key, bytes) else key
        location = location.decode() if isinstance(location, bytes) else location
        if type(key) is not str or type(location) is not str or type(numel) is not int or numel < 0:
            raise pickle.UnpicklingError(f"kiln.load: corrupt checkpoint: bad storage record id {pid!r}")
        cached = self.loaded.get(key)
        if cached is not None:
            return cached
        dtype = storage_type.dtype
        itemsize = _C._functions.empty(0, dtype=dtype).element_size()
        nbytes = numel * itemsize
        name = f"data/{key}"
        if self.reader.record_info(name).file_size < nbytes:
            raise RuntimeError(f"kiln.load: corrupt checkpoint: record {name!r} holds fewer than the {numel} "
                               f"{dtype} elements its storage has")
        flat = self._read(name, dtype, itemsize, nbytes)
        storage = LoadedStorage(self._map(flat, location), location)
        self.loaded[key] = storage
        return storage

    def _read(self, name: str, dtype, itemsize: int, nbytes: int):
        if nbytes == 0:
            return _C._functions.empty(0, dtype=dtype)
        if self.mapped is not None and not (self.big_endian and itemsize > 1):
            start = self.reader.data_offset(name, len(self.mapped))
            if start is not None and start % 64 == 0:  # aligned for any dtype's kernels: view the mapping
                return _C.from_numpy(self.mapped[start:start + nbytes]).view(dtype)
        raw = _C._functions.empty(nbytes, dtype=_C.uint8)
        self.reader.read_record_into(name, raw.numpy())
        if self.big_endian and itemsize > 1:
            raw.numpy()[:] = _byteswapped(raw.numpy(), dtype, itemsize)
        return raw.view(dtype)

    def _map(self, flat, location: str):
        map_location = self.map_location
        if map_location is None:
            return _place(flat, location)
        if isinstance(map_location, dict):
            target = map_location.get(location, location)
            return _place(flat, _device_name(target))
        if callable(map_location):
            result = map_location(flat, location)
            if result is None:
                return _place(flat, location)
            if not isinstance(result, _C.TensorBase) or result.dtype is not flat.dtype or \
                    result.numel() != flat.numel():
                raise RuntimeError("kiln.load: map_location(storage, location) must return the storage (a 1-D "
                                   f"tensor of {flat.numel()} {flat.dtype}) on some device, or None; it returned "
                                   f"{type(result).__name__}")
            return result
        return _place(flat, _device_name(map_location))


@contextlib.contextmanager
def _opened(f):
    """A seekable binary file for f (a path, a path-like or a file object); a path is closed afterwards."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            yield fh
        return
    if not hasattr(f, "read"):
        raise TypeError(f"kiln.load: expected a path or a binary file object, got {type(f).__name__}")
    seekable = getattr(f, "seekable", None)
    if seekable is not None and seekable():
        yield f
    else:
        yield io.BytesIO(f.read())


def _peek(fh, n: int) -> bytes:
    position = fh.tell()
    head = fh.read(n)
    fh.seek(position)
    if not isinstance(head, bytes):
        raise TypeError("kiln.load: the file object must be opened in binary mode")
    return head


def _unpickle(reader: CheckpointReader, loader: StorageLoader, weights_only: bool, pickle_module, load_args):
    data = io.BytesIO(reader.read_record("data.pkl"))
    if not weights_only:
        base = pickle_module.Unpickler if pickle_module is not None else pickle.Unpickler
        return full_unpickler_class(base)(data, loader, **load_args).load()
    unpickler = WeightsOnlyUnpickler(data, loader, encoding=load_args.get("encoding", "utf-8"))
    try:
        return unpickler.load()
    except (pickle.UnpicklingError, RuntimeError) as e:
        if "kiln" in str(e):
            raise
        # CPython's own unpickler errors ("Memo value not found at index 40") say nothing of
        # the checkpoint; found by fuzz/python/fuzz_load.py.
        raise type(e)(f"kiln.load: corrupt checkpoint: its pickle is invalid ({e})") from None
    except (EOFError, IndexError, KeyError, TypeError, ValueError, AttributeError, OverflowError,
            RecursionError, MemoryError, UnicodeDecodeError, struct.error) as e:  # struct.error: a truncated opcode
        raise pickle.UnpicklingError(f"kiln.load: corrupt checkpoint: its pickle is invalid "
                                     f"({type(e).__name__}: {e})") from None


def _load_zip(fh, path, map_location, weights_only: bool, mmap: bool, pickle_module, load_args):
    reader = CheckpointReader(fh)
    byteorder = reader.read_record("byteorder").decode(errors="replace") if reader.has_record("byteorder") \
        else fallback_byteorder()
    if byteorder not in ("little", "big"):
        raise RuntimeError(f"kiln.load: corrupt checkpoint: unknown byte order {byteorder!r}")
    mapped = None
    if mmap:
        mapped = np.memmap(path, dtype=np.uint8, mode="r+" if mmap_shared() else "c")
    loader = StorageLoader(reader, map_location, mapped, big_endian=byteorder == "big")
    return _unpickle(reader, loader, weights_only, pickle_module, load_args)


def load(f, map_location=None, pickle_module=None, *, weights_only: bool | None = None, mmap: bool | None = None,
         **pickle_load_args):
    """Loads an object saved with kiln.save or torch.save (or a safetensors file).

    ``weights_only=True`` (the default) rebuilds tensors, parameters, dtypes and
    plain containers only, plus what ``kiln.serialization.add_safe_globals``
    allows, and never runs other code; ``weights_only=False`` unpickles
    anything, as torch.load does (torch's classes become kiln's). ``map_location``
    is a device, a dict from saved location to location, or
    ``fn(storage, location)``; ``mmap=True`` maps the file's storages instead of
    reading them (f must be a path).
    """
    if weights_only is None:
        weights_only = True
    if weights_only and pickle_module is not None:
        raise RuntimeError("kiln.load: cannot load weights safely with an explicit pickle_module; pass "
                           "weights_only=False if you trust the file")
    check_map_location(map_location)
    if mmap and not isinstance(f, (str, os.PathLike)):
        raise ValueError("kiln.load: f must be a file path in order to use the mmap argument")
    load_args = dict(pickle_load_args)
    load_args.setdefault("encoding", "utf-8")
    with _opened(f) as fh:
        head = _peek(fh, 16)
        if not head:
            raise RuntimeError("kiln.load: the file is empty (0 bytes), not a checkpoint: was its save interrupted?")
        if head.startswith(_ZIP_MAGIC):
            return _load_zip(fh, f, map_location, weights_only, bool(mmap), pickle_module, load_args)
        if mmap:
            raise RuntimeError("kiln.load: mmap can only be used with files in torch's zip checkpoint format")
        if looks_like_safetensors(head):
            return read_safetensors_file(fh.read())
        if head.startswith(_LEGACY_MAGIC[:4]):
            raise RuntimeError("kiln.load: this is torch's legacy checkpoint format (torch < 1.6, or "
                               "_use_new_zipfile_serialization=False), which kiln does not read; re-save it with "
                               "torch.save's default format")
        raise RuntimeError("kiln.load: not a checkpoint: the file is neither torch's zip format nor safetensors")


def get_unsafe_globals_in_checkpoint(f) -> list[str]:
    """The globals the checkpoint names that weights_only=True would refuse (torch.serialization's function)."""
    with _opened(f) as fh:
        if not _peek(fh, 4).startswith(_ZIP_MAGIC):
            raise RuntimeError("kiln.serialization.get_unsafe_globals_in_checkpoint: not a zip checkpoint")
        data = CheckpointReader(fh).read_record("data.pkl")
    allowed = allowed_globals()
    unsafe: set[str] = set()
    strings: list[str] = []  # the strings pushed so far, for STACK_GLOBAL's module and name
    memo: dict[int, object] = {}
    last: object = None  # the string the previous opcode pushed, if it pushed one
    proto = 0
    try:
        for opcode, arg, _ in pickletools.genops(data):
            kind = opcode.name
            if kind == "MEMOIZE":
                memo[len(memo)] = last
                continue
            if kind in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo[arg] = last
                continue
            last = None
            if kind == "PROTO":
                proto = arg
            elif kind in ("GET", "BINGET", "LONG_BINGET"):
                last = memo.get(arg)
                if isinstance(last, str):
                    strings.append(last)
            elif "UNICODE" in kind and isinstance(arg, str):
                last = arg
                strings.append(arg)
            elif kind in ("GLOBAL", "INST") or (kind == "STACK_GLOBAL" and len(strings) >= 2):
                if kind == "STACK_GLOBAL":
                    module, name = strings[-2], strings[-1]
                else:
                    module, name = arg.split(" ", 1)
                    if proto < 3:
                        module, name = fix_py2_name(module, name)
                if allowed_global(allowed, module, name) is None:
                    unsafe.add(f"{module}.{name}")
    except ValueError as e:
        raise RuntimeError(f"kiln.serialization.get_unsafe_globals_in_checkpoint: corrupt pickle ({e})") from None
    return sorted(unsafe)
