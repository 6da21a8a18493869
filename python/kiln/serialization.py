"""kiln.save / kiln.load: tensors and nested containers of them, in a safe
format (no arbitrary pickle), and reading PyTorch checkpoints.

The file is safetensors' layout (an 8-byte little-endian header length, a JSON
header naming each tensor's dtype, shape and byte range, then the raw bytes),
so any safetensors reader sees the tensors. The container structure around
them (dicts, lists, tuples, numbers, strings, Parameters, shared tensors)
travels as JSON in the header's __metadata__. ``load`` also reads files written
by ``torch.save`` (a zip of a pickle and raw storages) with a restricted
unpickler that only rebuilds tensors and plain containers, never runs code.

``save_file`` / ``load_file`` are safetensors' own API for flat dicts.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import struct
import zipfile
from collections import OrderedDict
from typing import Any, BinaryIO

from kiln import _C
from kiln.nn.parameter import Parameter

__all__ = ["save", "load", "save_file", "load_file"]

_DTYPE_CODES = {
    "float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16", "int64": "I64", "int32": "I32",
    "int16": "I16", "int8": "I8", "uint8": "U8", "bool": "BOOL",
}
_CODE_DTYPES = {code: getattr(_C, name) for name, code in _DTYPE_CODES.items()}
_STRUCTURE_KEY = "kiln.structure"


def _dtype_name(t) -> str:
    return str(t.dtype).removeprefix("kiln.")


# --- safetensors layout ----------------------------------------------------------


def _write_safetensors(tensors: dict[str, Any], f: BinaryIO, metadata: dict[str, str] | None) -> None:
    header: dict[str, Any] = {}
    blobs = []
    offset = 0
    for name, t in tensors.items():
        data = _C._tensor_bytes(t)
        header[name] = {"dtype": _DTYPE_CODES[_dtype_name(t)], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # align the data to 8 bytes, as safetensors does
    f.write(struct.pack("<Q", len(text)))
    f.write(text)
    for blob in blobs:
        f.write(blob)


def _read_safetensors(buf: bytes) -> tuple[dict[str, Any], dict[str, str]]:
    if len(buf) < 8:
        raise RuntimeError("kiln.load: file too short to be a safetensors file")
    (n,) = struct.unpack("<Q", buf[:8])
    if 8 + n > len(buf):
        raise RuntimeError("kiln.load: corrupt safetensors header (length past the end of the file)")
    header = json.loads(buf[8:8 + n])
    metadata = header.pop("__metadata__", {}) or {}
    base = 8 + n
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        if info["dtype"] not in _CODE_DTYPES:
            raise RuntimeError(f"kiln.load: unsupported safetensors dtype {info['dtype']} for '{name}'")
        if not 0 <= begin <= end <= len(buf) - base:
            raise RuntimeError(f"kiln.load: corrupt safetensors file: '{name}' lies outside the data")
        tensors[name] = _C._tensor_from_bytes(buf[base + begin:base + end], _CODE_DTYPES[info["dtype"]],
                                              list(info["shape"]))
    return tensors, metadata


def save_file(tensors: dict[str, Any], filename: str | os.PathLike, metadata: dict[str, str] | None = None) -> None:
    """safetensors.torch.save_file for kiln tensors."""
    with open(filename, "wb") as f:
        _write_safetensors(tensors, f, metadata)


def load_file(filename: str | os.PathLike, device: str = "cpu") -> dict[str, Any]:
    """safetensors.torch.load_file for kiln tensors."""
    with open(filename, "rb") as f:
        tensors, _ = _read_safetensors(f.read())
    return tensors


# --- kiln.save / kiln.load ----------------------------------------------------------


def _flatten(obj: Any, tensors: dict[str, Any], seen: dict[int, str]) -> Any:
    """The JSON form of obj, with tensors moved into `tensors`."""
    if isinstance(obj, _C.TensorBase):
        key = seen.get(id(obj))
        if key is None:
            key = f"t{len(tensors)}"
            seen[id(obj)] = key
            tensors[key] = obj.detach()
        node: dict[str, Any] = {"__tensor__": key}
        if isinstance(obj, Parameter):
            node["parameter"] = True
        if obj.requires_grad:
            node["requires_grad"] = True
        return node
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, dict):
        items = [[_flatten(k, tensors, seen), _flatten(v, tensors, seen)] for k, v in obj.items()]
        return {"__dict__": items, "ordered": isinstance(obj, OrderedDict)}
    if isinstance(obj, (list, tuple)):
        return {"__list__" if isinstance(obj, list) else "__tuple__": [_flatten(v, tensors, seen) for v in obj]}
    if isinstance(obj, (_C.dtype,)):
        return {"__dtype__": str(obj).removeprefix("kiln.")}
    raise TypeError(f"kiln.save: cannot save an object of type {type(obj).__name__} safely: only tensors, numbers, "
                    "strings, None, dtypes and dicts, lists and tuples of them are supported")


def _unflatten(node: Any, tensors: dict[str, Any], memo: dict[str, Any] | None = None) -> Any:
    memo = {} if memo is None else memo
    if not isinstance(node, dict):
        return node
    if "__tensor__" in node:
        key = node["__tensor__"]
        if key in memo:  # a tensor saved once and referenced again (tied weights) comes back as one object
            return memo[key]
        t = tensors[key]
        if node.get("parameter"):
            t = Parameter(t, node.get("requires_grad", False))
        elif node.get("requires_grad"):
            t.requires_grad_(True)
        memo[key] = t
        return t
    if "__dict__" in node:
        pairs = [(_unflatten(k, tensors, memo), _unflatten(v, tensors, memo)) for k, v in node["__dict__"]]
        return OrderedDict(pairs) if node.get("ordered") else dict(pairs)
    if "__list__" in node:
        return [_unflatten(v, tensors, memo) for v in node["__list__"]]
    if "__tuple__" in node:
        return tuple(_unflatten(v, tensors, memo) for v in node["__tuple__"])
    if "__dtype__" in node:
        return getattr(_C, node["__dtype__"])
    raise RuntimeError("kiln.load: corrupt structure in the file's metadata")


def save(obj: Any, f, pickle_module=None, pickle_protocol: int = 2, _use_new_zipfile_serialization: bool = True,
         _disable_byteorder_record: bool = False) -> None:
    """Saves tensors and nested dicts/lists/tuples of them (a state_dict, an
    optimizer state) to a path or a binary file object."""
    tensors: dict[str, Any] = {}
    structure = _flatten(obj, tensors, {})
    metadata = {"format": "kiln", _STRUCTURE_KEY: json.dumps(structure)}
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            _write_safetensors(tensors, fh, metadata)
    else:
        _write_safetensors(tensors, f, metadata)


def _check_map_location(map_location) -> None:
    if map_location is None or callable(map_location) or isinstance(map_location, dict):
        return
    name = str(map_location)
    if name.split(":")[0] != "cpu":
        raise RuntimeError(f"kiln.load: map_location={name!r}: kiln has no CUDA device yet "
                           "(kiln.cuda.is_available() is False); use map_location='cpu'")


def load(f, map_location=None, pickle_module=None, *, weights_only: bool = True, mmap=None, **pickle_load_args):
    """Loads what kiln.save wrote, any safetensors file (a dict of tensors), or
    a torch.save checkpoint of tensors and plain containers (read safely)."""
    _check_map_location(map_location)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            buf = fh.read()
    else:
        buf = f.read()
    if buf[:4] == b"PK\x03\x04":
        return _load_torch_zip(buf)
    tensors, metadata = _read_safetensors(buf)
    if _STRUCTURE_KEY in metadata:
        return _unflatten(json.loads(metadata[_STRUCTURE_KEY]), tensors)
    return tensors


# --- torch.save checkpoints ------------------------------------------------------------

_TORCH_STORAGE_DTYPES = {
    "DoubleStorage": "float64", "FloatStorage": "float32", "HalfStorage": "float16", "BFloat16Storage": "bfloat16",
    "LongStorage": "int64", "IntStorage": "int32", "ShortStorage": "int16", "CharStorage": "int8",
    "ByteStorage": "uint8", "BoolStorage": "bool",
}
_ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "int16": 2,
             "int8": 1, "uint8": 1, "bool": 1}


class _StorageType:
    def __init__(self, dtype_name: str) -> None:
        self.dtype_name = dtype_name


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                       metadata=None):
    dtype_name, data = storage
    n = len(data) // _ITEMSIZE[dtype_name]
    flat = _C._tensor_from_bytes(data, getattr(_C, dtype_name), [n])
    t = flat.as_strided(list(size), list(stride), storage_offset)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_parameter(data, requires_grad, backward_hooks):
    return Parameter(data, requires_grad)


class _TorchUnpickler(pickle.Unpickler):
    """Rebuilds tensors and plain containers only; anything else is refused."""

    def __init__(self, file, archive: zipfile.ZipFile, prefix: str) -> None:
        super().__init__(file)
        self.archive = archive
        self.prefix = prefix

    def find_class(self, module: str, name: str):
        if module == "collections" and name == "OrderedDict":
            return OrderedDict
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor_v2
        if module == "torch._utils" and name == "_rebuild_parameter":
            return _rebuild_parameter
        if module == "torch" and name in _TORCH_STORAGE_DTYPES:
            return _StorageType(_TORCH_STORAGE_DTYPES[name])
        if module == "torch" and name in _DTYPE_CODES:
            return getattr(_C, name)
        if module == "builtins" and name in ("set", "frozenset", "slice", "complex"):
            return getattr(__import__("builtins"), name)
        raise pickle.UnpicklingError(f"kiln.load: refusing to load '{module}.{name}' from a torch checkpoint "
                                     "(only tensors and plain containers are loaded, for safety)")

    def persistent_load(self, pid):
        kind, storage_type, key, location, numel = pid
        if kind != "storage":
            raise pickle.UnpicklingError(f"kiln.load: unknown persistent id {kind!r}")
        data = self.archive.read(f"{self.prefix}data/{key}")
        dtype_name = storage_type.dtype_name if isinstance(storage_type, _StorageType) else "uint8"
        return (dtype_name, data)


def _load_torch_zip(buf: bytes):
    archive = zipfile.ZipFile(io.BytesIO(buf))
    pkl = next((n for n in archive.namelist() if n.endswith("data.pkl")), None)
    if pkl is None:
        raise RuntimeError("kiln.load: zip file without data.pkl is not a torch checkpoint")
    prefix = pkl[: -len("data.pkl")]
    return _TorchUnpickler(io.BytesIO(archive.read(pkl)), archive, prefix).load()
