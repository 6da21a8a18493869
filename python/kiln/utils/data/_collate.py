"""default_collate and default_convert: how DataLoader turns a list of samples
into a batch (tensors stacked; numbers and numpy arrays made tensors; tuples,
lists, dicts and namedtuples collated element-wise), as torch.utils.data."""

from __future__ import annotations

import collections.abc
import re

import numpy as np

from kiln import _C

__all__ = ["default_collate", "default_convert"]

_NP_STRING_CLASSES = re.compile(r"[SaUO]")
_COLLATE_ERROR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}")


def _from_numpy(array: np.ndarray):
    array = np.asarray(array)
    return _C.from_numpy(array if array.flags.c_contiguous else np.ascontiguousarray(array))


def default_convert(data):
    """Converts numpy arrays (and containers of them) to tensors, leaving the rest as is."""
    if isinstance(data, _C.TensorBase):
        return data
    if isinstance(data, np.ndarray) or isinstance(data, np.generic):
        if data.dtype.kind in "SaUO":
            return data
        return _from_numpy(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        try:
            return type(data)({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def default_collate(batch):
    """Collates a list of samples into a batch, recursing into containers."""
    elem = batch[0]
    if isinstance(elem, _C.TensorBase):
        return _C._functions.stack(list(batch), 0)
    if isinstance(elem, np.ndarray) and not _NP_STRING_CLASSES.search(elem.dtype.str):
        return default_collate([_from_numpy(b) for b in batch])
    if isinstance(elem, np.generic) and not _NP_STRING_CLASSES.search(elem.dtype.str):
        return _from_numpy(np.asarray(batch))
    if isinstance(elem, np.ndarray) or isinstance(elem, np.generic):
        raise TypeError(_COLLATE_ERROR.format(elem.dtype))
    if isinstance(elem, bool):
        return _from_numpy(np.asarray(batch, dtype=np.bool_))
    if isinstance(elem, float):
        return _from_numpy(np.asarray(batch, dtype=np.float64))
    if isinstance(elem, int):
        return _from_numpy(np.asarray(batch, dtype=np.int64))
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        try:
            return type(elem)({key: default_collate([d[key] for d in batch]) for key in elem})
        except TypeError:
            return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if not all(len(e) == size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]  # a list, as torch returns
        try:
            return type(elem)([default_collate(samples) for samples in transposed])
        except TypeError:
            return [default_collate(samples) for samples in transposed]
    raise TypeError(_COLLATE_ERROR.format(type(elem)))
