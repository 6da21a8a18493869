"""Copies of an OpInfo sample's arguments for kiln, and of kiln's results for torch.

A tensor keeps its layout: a non-contiguous, expanded or offset sample becomes a kiln
view with the same sizes, strides and storage offset over a copy of torch's storage.
dtypes, devices, sizes and memory formats become kiln's; containers keep their type.
"""

from __future__ import annotations

import numpy as np
import torch

import kiln


# The dtypes a tensor crosses between the two libraries in (through numpy).
NUMPY_DTYPES = (torch.float32, torch.float64, torch.complex64, torch.complex128, torch.bool, torch.uint8, torch.int8,
                torch.int16, torch.int32, torch.int64)


class NotConvertible(Exception):
    """A sample holds a value kiln has no counterpart of (a torch Generator, a sparse tensor)."""


def kiln_tensor(t: torch.Tensor, bases: dict | None = None) -> kiln.Tensor:
    """A kiln tensor with t's values, sizes, strides, storage offset and requires_grad. ``bases``
    maps a torch storage already copied for this sample to its kiln copy: a tensor over that
    storage (another view of it) becomes a view of the same copy, so views that overlap in torch
    overlap in kiln (an out= that aliases an input is refused alike)."""
    if t.layout != torch.strided:
        raise NotConvertible(f"a {t.layout} tensor")
    if t.device.type != "cpu" or t.dim() > 64:
        raise NotConvertible(f"a {t.device.type} tensor of {t.dim()} dimensions")
    if t.dtype in (torch.float16, torch.bfloat16):  # through float32, which holds both exactly
        k = kiln_tensor(t.detach().float()).to(getattr(kiln, str(t.dtype).removeprefix("torch.")))
        return k.requires_grad_() if t.requires_grad else k
    if t.dtype not in NUMPY_DTYPES:
        raise NotConvertible(f"a {t.dtype} tensor")
    plain = t.detach().resolve_conj().resolve_neg()
    storage_numel = plain.untyped_storage().nbytes() // plain.element_size()
    key = (plain.untyped_storage().data_ptr(), plain.dtype)
    if bases is not None and key in bases and plain.untyped_storage().nbytes() > 0:
        k = bases[key].as_strided(tuple(plain.shape), tuple(plain.stride()), plain.storage_offset())
    elif plain.is_contiguous() and plain.storage_offset() == 0:
        k = kiln.from_numpy(plain.numpy().copy())
        if bases is not None and plain.numel() == storage_numel:
            bases[key] = k.reshape(-1)
    else:
        storage = torch.as_strided(plain, (storage_numel,), (1,), 0)
        base = kiln.from_numpy(storage.numpy().copy())
        k = base.as_strided(tuple(plain.shape), tuple(plain.stride()), plain.storage_offset())
        if bases is not None:
            bases[key] = base
    return k.requires_grad_() if t.requires_grad else k


def _torch_named(value) -> str:
    return str(value).removeprefix("torch.")


def to_kiln(value, tensors: dict | None = None, bases: dict | None = None):
    """value with every torch object replaced by kiln's; ``tensors`` maps id(torch tensor) to
    its kiln copy, so one tensor passed twice stays one tensor, and ``bases`` torch storages to
    their kiln copies, so views of one storage stay views of one storage (aliasing kept)."""
    tensors = {} if tensors is None else tensors
    bases = {} if bases is None else bases
    if isinstance(value, torch.Tensor):
        if id(value) not in tensors:
            tensors[id(value)] = (value, kiln_tensor(value, bases))
        return tensors[id(value)][1]
    if isinstance(value, torch.dtype):
        return getattr(kiln, _torch_named(value))
    if isinstance(value, torch.device):
        return kiln.device(str(value))
    if isinstance(value, torch.Size):
        return kiln.Size(tuple(value))
    if isinstance(value, (torch.memory_format, torch.layout)):
        name = _torch_named(value)
        if not hasattr(kiln, name):
            raise NotConvertible(f"torch.{name}")
        return getattr(kiln, name)
    if isinstance(value, torch.Generator):
        raise NotConvertible("a torch.Generator")
    if isinstance(value, list):
        return [to_kiln(item, tensors, bases) for item in value]
    if isinstance(value, tuple):
        items = [to_kiln(item, tensors, bases) for item in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, dict):
        return {key: to_kiln(item, tensors, bases) for key, item in value.items()}
    if callable(value) and getattr(value, "__module__", "") and str(value.__module__).startswith("torch"):
        raise NotConvertible(f"a torch callable {value!r}")
    return value


def to_torch(k: kiln.Tensor) -> torch.Tensor:
    """kiln tensor's values as a torch tensor of the same dtype."""
    name = str(k.dtype).removeprefix("kiln.")
    k = k.detach()
    if name in ("float16", "bfloat16"):
        return torch.from_numpy(np.array(k.to(kiln.float32).numpy(), copy=True)).to(getattr(torch, name))
    return torch.from_numpy(np.array(k.numpy(force=True), copy=True))


def flat_values(value) -> list:
    """The leaves of a result (tensors, numbers, None), in order."""
    if isinstance(value, (list, tuple)) and not isinstance(value, (torch.Size, kiln.Size)):
        leaves = []
        for item in value:
            leaves.extend(flat_values(item))
        return leaves
    return [value]
