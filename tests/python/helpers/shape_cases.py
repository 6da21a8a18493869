"""Inputs for the shape-op tests: the same values in kiln and torch, in every
dtype and in several layouts (contiguous, transposed, strided, expanded, with a
storage offset), and the comparison of an op's outcome on both sides.

Values are small integers (quarters for floating dtypes), so every dtype holds
them exactly and copies compare bit for bit.
"""

from __future__ import annotations

import numpy as np
import torch

import kiln
from torch_compare import DTYPE_NAMES, as_kiln_text, assert_same_error, raised, values

LAYOUTS = ["contiguous", "transposed", "strided", "expanded", "offset"]


def _values(shape, dtype_name: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype_name == "bool":
        return rng.integers(0, 2, size=shape).astype(np.float64)
    if dtype_name == "uint8":
        return rng.integers(0, 20, size=shape).astype(np.float64)
    if dtype_name in ("float32", "float64", "float16", "bfloat16"):
        return rng.integers(-40, 40, size=shape) / 4.0
    return rng.integers(-9, 10, size=shape).astype(np.float64)


def pair_from_values(v: np.ndarray, dtype_name: str):
    """Contiguous kiln and torch tensors holding `v` as `dtype_name` (row-major strides on both sides,
    whatever numpy's strides for empty arrays)."""
    v = np.asarray(v, dtype=np.float64)
    t = torch.empty(v.shape, dtype=getattr(torch, dtype_name))
    t.copy_(torch.from_numpy(v.copy()))
    if dtype_name == "bfloat16":
        # bfloat16 is the upper half of float32; the values are exact in it.
        bits = np.asarray((v.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)).view(np.int16)
        source = kiln.from_numpy(bits.reshape(v.shape).copy()).view(kiln.bfloat16)
    else:
        source = kiln.from_numpy(v.astype(getattr(np, dtype_name)).reshape(v.shape).copy())
    k = kiln.empty(v.shape, dtype=getattr(kiln, dtype_name))
    k.copy_(source)
    return k, t


def make(shape, dtype_name: str, layout: str = "contiguous", seed: int = 0):
    """(kiln, torch) tensors of `shape` with equal values and equal geometry in `layout`."""
    shape = tuple(shape)
    n = len(shape)
    if layout == "transposed" and n >= 2:
        base = shape[:-2] + (shape[-1], shape[-2])
        k, t = pair_from_values(_values(base, dtype_name, seed), dtype_name)
        return k.transpose(-1, -2), t.transpose(-1, -2)
    if layout == "strided" and n >= 1:
        base = shape[:-1] + (2 * shape[-1],)
        k, t = pair_from_values(_values(base, dtype_name, seed), dtype_name)
        return k[..., ::2], t[..., ::2]
    if layout == "expanded" and n >= 1 and shape[0] != 1:
        k, t = pair_from_values(_values((1,) + shape[1:], dtype_name, seed), dtype_name)
        return k.expand(shape), t.expand(shape)
    if layout == "offset":
        numel = int(np.prod(shape, dtype=np.int64))
        k, t = pair_from_values(_values((numel + 3,), dtype_name, seed), dtype_name)
        return k[3:].view(shape), t[3:].view(shape)
    return pair_from_values(_values(shape, dtype_name, seed), dtype_name)


def _storage_base(t) -> int:
    """Address of element 0 of the tensor's storage (data_ptr minus the offset)."""
    return t.data_ptr() - t.storage_offset() * t.element_size()


def _tensors(result):
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _has_internal_overlap(t) -> bool:
    return any(stride == 0 and size > 1 for size, stride in zip(t.shape, t.stride()))


def compare_outcome(kiln_fn, torch_fn, kiln_inputs, torch_inputs, *, check_stride: bool = True) -> str:
    """Runs both sides. Where torch raises, kiln raises the same (type and text).
    Else the results agree in shape, dtype, values, strides, contiguity and, for
    every result torch makes a view of an input, kiln's is a view of the same
    input at the same offset, sharing its version counter, and a write through it
    changes the input as in torch. Returns "error", "view" or "copy"."""
    if raised(torch_fn) is not None:
        assert_same_error(kiln_fn, torch_fn)
        return "error"
    k_out, t_out = _tensors(kiln_fn()), _tensors(torch_fn())
    assert len(k_out) == len(t_out)
    kind = "copy"
    for k, t in zip(k_out, t_out):
        assert isinstance(k, kiln.Tensor), type(k)
        assert tuple(k.shape) == tuple(t.shape), (tuple(k.shape), tuple(t.shape))
        assert str(k.dtype) == as_kiln_text(str(t.dtype))
        kv, tv = values(k), values(t)
        assert np.array_equal(kv, tv, equal_nan=kv.dtype.kind == "f"), f"kiln {kv} != torch {tv}"
        if check_stride:
            assert k.stride() == t.stride(), (k.stride(), t.stride())
        assert k.is_contiguous() == t.is_contiguous()
        if t.numel() == 0:
            continue
        t_bases = [i for i, ti in enumerate(torch_inputs) if ti.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()]
        k_bases = [i for i, ki in enumerate(kiln_inputs) if ki.numel() > 0 and _storage_base(ki) == _storage_base(k)]
        assert k_bases == [i for i in t_bases if torch_inputs[i].numel() > 0], "views and copies differ from torch"
        if t_bases:
            kind = "view"
            assert k.storage_offset() == t.storage_offset()
    if kind == "view":
        _check_write_through(k_out[0], t_out[0], kiln_inputs, torch_inputs)
    return kind


def _check_write_through(k, t, kiln_inputs, torch_inputs) -> None:
    """A write through the view reaches the input as in torch and bumps the shared version."""
    if k.numel() == 0 or _has_internal_overlap(t):
        return
    before = [ki._version for ki in kiln_inputs]
    value = True if t.dtype == torch.bool else 7
    k.fill_(value)
    t.fill_(value)
    for ki, ti, b in zip(kiln_inputs, torch_inputs, before):
        assert np.array_equal(values(ki), values(ti))
        if ki.numel() > 0 and _storage_base(ki) == _storage_base(k):
            assert ki._version > b and ki._version == k._version


DTYPES = DTYPE_NAMES
