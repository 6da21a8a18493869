"""safetensors files: ``save_file`` / ``load_file`` (safetensors.torch's API for
kiln tensors), and reading them back in ``kiln.load``.

The layout is an 8-byte little-endian header length, a JSON header naming each
tensor's dtype, shape and byte range, then the raw bytes; any safetensors
reader (``safetensors.numpy``, ``safetensors.torch``) reads what ``save_file``
writes. Nothing in it is code, so reading one is safe whatever ``weights_only`` says.

Files written by kiln.save before it wrote PyTorch's checkpoint format were
safetensors with the container structure (dicts, lists, Parameters, tied
tensors) as JSON in ``__metadata__["kiln.structure"]``; ``read_safetensors_file``
still rebuilds that structure.
"""

from __future__ import annotations

import json
import os
import struct
from collections import OrderedDict
from typing import Any, BinaryIO

from kiln import _C
from kiln.nn.parameter import Parameter

__all__ = ["save_file", "load_file"]

_DTYPE_CODES = {
    "float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16", "int64": "I64",
    "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8", "bool": "BOOL",
}
_CODE_DTYPES = {code: getattr(_C, name) for name, code in _DTYPE_CODES.items()}
_STRUCTURE_KEY = "kiln.structure"


def _dtype_name(t) -> str:
    return str(t.dtype).removeprefix("kiln.")


def _write_safetensors(tensors: dict[str, Any], f: BinaryIO, metadata: dict[str, str] | None) -> None:
    header: dict[str, Any] = {}
    blobs = []
    offset = 0
    for name, t in tensors.items():
        if _dtype_name(t) not in _DTYPE_CODES:
            raise TypeError(f"save_file: safetensors has no code for '{name}''s dtype {t.dtype}")
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
    try:
        header = json.loads(buf[8:8 + n])
    except ValueError as e:
        raise RuntimeError(f"kiln.load: corrupt safetensors header ({e})") from None
    if not isinstance(header, dict):
        raise _corrupt("its header is not a JSON object")
    metadata = header.pop("__metadata__", {}) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise _corrupt("its __metadata__ is not a map of strings")
    base = 8 + n
    tensors = {}
    for name, info in header.items():
        begin, end, dtype, shape = _entry(name, info)
        if not 0 <= begin <= end <= len(buf) - base:
            raise RuntimeError(f"kiln.load: corrupt safetensors file: '{name}' lies outside the data")
        numel = 1
        for size in shape:
            numel *= size
        if numel * dtype.itemsize != end - begin:
            raise _corrupt(f"'{name}' holds {end - begin} bytes, not the {numel * dtype.itemsize} of shape {shape} "
                           f"and dtype {info['dtype']}")
        tensors[name] = _C._tensor_from_bytes(buf[base + begin:base + end], dtype, shape)
    return tensors, metadata


def _corrupt(problem: str) -> RuntimeError:
    return RuntimeError(f"kiln.load: corrupt safetensors file: {problem}")


def _entry(name: str, info: Any) -> tuple[int, int, Any, list[int]]:
    """(begin, end, dtype, shape) of one header entry, each checked for its type: the
    header is the file's JSON, which may say anything (fuzz/corpus/load)."""
    if not isinstance(info, dict):
        raise _corrupt(f"the entry for '{name}' is not a JSON object")
    offsets, code, shape = info.get("data_offsets"), info.get("dtype"), info.get("shape")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets)):
        raise _corrupt(f"'{name}' has no [begin, end] data_offsets")
    if not isinstance(code, str) or code not in _CODE_DTYPES:
        raise RuntimeError(f"kiln.load: unsupported safetensors dtype {code} for '{name}'")
    if not (isinstance(shape, list) and all(type(size) is int and size >= 0 for size in shape)):
        raise _corrupt(f"'{name}' has no shape of non-negative integer sizes")
    return offsets[0], offsets[1], _CODE_DTYPES[code], shape


def looks_like_safetensors(head: bytes) -> bool:
    """Whether the first bytes of a file are a safetensors header (a length, then a JSON object)."""
    return len(head) >= 9 and head[8:9] == b"{"


def save_file(tensors: dict[str, Any], filename: str | os.PathLike, metadata: dict[str, str] | None = None) -> None:
    """safetensors.torch.save_file for kiln tensors."""
    with open(filename, "wb") as f:
        _write_safetensors(tensors, f, metadata)


def load_file(filename: str | os.PathLike, device: str = "cpu") -> dict[str, Any]:
    """safetensors.torch.load_file for kiln tensors."""
    with open(filename, "rb") as f:
        tensors, _ = _read_safetensors(f.read())
    return tensors


def read_safetensors_file(buf: bytes) -> Any:
    """What kiln.load returns for a safetensors file: the dict of its tensors,
    or the structure an earlier kiln.save recorded around them."""
    tensors, metadata = _read_safetensors(buf)
    if _STRUCTURE_KEY in metadata:
        try:
            structure = json.loads(metadata[_STRUCTURE_KEY])
        except ValueError as e:
            raise RuntimeError(f"kiln.load: corrupt structure in the file's metadata ({e})") from None
        try:
            return _unflatten(structure, tensors, {})
        except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as e:
            # The structure is the file's JSON: any shape of value may stand where a node should.
            raise RuntimeError(f"kiln.load: corrupt structure in the file's metadata ({type(e).__name__}: {e})") \
                from None
    return tensors


def _unflatten(node: Any, tensors: dict[str, Any], memo: dict[str, Any]) -> Any:
    if not isinstance(node, dict):
        return node
    if "__tensor__" in node:
        key = node["__tensor__"]
        if key in memo:  # a tensor saved once and referenced again (tied weights) comes back as one object
            return memo[key]
        if key not in tensors:
            raise RuntimeError(f"kiln.load: corrupt structure in the file's metadata (no tensor {key!r})")
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
    if "__dtype__" in node and isinstance(getattr(_C, str(node["__dtype__"]), None), _C.dtype):
        return getattr(_C, node["__dtype__"])
    raise RuntimeError("kiln.load: corrupt structure in the file's metadata")
