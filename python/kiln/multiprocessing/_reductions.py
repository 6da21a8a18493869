"""Tensors between processes through shared memory: the reducers kiln.multiprocessing
registers with multiprocessing's ForkingPickler (what its Queues and Pipes use).

Note [A tensor crosses a process boundary through /dev/shm]
-----------------------------------------------------------
The sending process copies the tensor's elements into a fresh POSIX shared-memory
segment and pickles only its name, dtype, shape and strides; the receiving
process maps the segment, unlinks its name at once (the mapping keeps the memory
alive, so nothing leaks once the receiver drops the tensor) and wraps the mapping
in a tensor without copying (kiln.from_numpy keeps the mapping alive). A batch a
DataLoader worker makes is therefore written once and never copied through the
pipe. A segment whose message is never received (its receiver died) stays in
/dev/shm until reboot, as with torch's file-system sharing strategy.
"""

from __future__ import annotations

import mmap
import os
import secrets
from multiprocessing.reduction import ForkingPickler

import numpy as np

from kiln import _C
from kiln._tensor import Tensor
from kiln.nn.parameter import Parameter

try:
    import _posixshmem
except ImportError:  # not a POSIX system: tensors pickle by value
    _posixshmem = None

_PREFIX = "/kiln_"


def _dtype_by_name(name: str):
    dtype = getattr(_C, name, None)
    if not isinstance(dtype, _C.dtype):
        raise RuntimeError(f"kiln.multiprocessing: unknown dtype {name!r}")
    return dtype


def _write_segment(data: np.ndarray) -> str:
    name = _PREFIX + secrets.token_hex(12)
    fd = _posixshmem.shm_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, mode=0o600)
    try:
        os.ftruncate(fd, data.nbytes)
        with mmap.mmap(fd, data.nbytes) as segment:
            np.frombuffer(segment, dtype=np.uint8)[:] = data
    finally:
        os.close(fd)
    return name


def _map_segment(name: str, nbytes: int) -> np.ndarray:
    fd = _posixshmem.shm_open(name, os.O_RDWR, mode=0o600)
    try:
        segment = mmap.mmap(fd, nbytes)
    finally:
        os.close(fd)
        _posixshmem.shm_unlink(name)
    return np.frombuffer(segment, dtype=np.uint8)


def rebuild_shared_tensor(cls, name: str, dtype_name: str, shape, requires_grad: bool):
    dtype = _dtype_by_name(dtype_name)
    if name is None:
        flat = _C._functions.empty(list(shape), dtype=dtype)
    else:
        nbytes = _C._functions.empty(0, dtype=dtype).element_size()
        for n in shape:
            nbytes *= n
        flat = _C.from_numpy(_map_segment(name, nbytes)).view(dtype).view(list(shape))
    if cls is Parameter:
        return Parameter(flat, requires_grad)
    return flat.requires_grad_(requires_grad) if requires_grad else flat


def reduce_tensor(t):
    """ForkingPickler's reducer for kiln tensors: the elements go through a shared-memory segment."""
    if _posixshmem is None:
        return t.__reduce_ex__(2)
    if t.requires_grad and not t.is_leaf:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
                           "does not support crossing process boundaries.  If you just want to transfer the data, "
                           "call detach() on the tensor before serializing (e.g., putting it on the queue).")
    data = t.detach().contiguous()
    dtype_name = str(t.dtype).removeprefix("kiln.")
    shape = tuple(t.shape)
    name = _write_segment(data.view(_C.uint8).numpy().reshape(-1)) if data.numel() else None
    return (rebuild_shared_tensor, (type(t) if type(t) is Parameter else Tensor, name, dtype_name, shape,
                                    t.requires_grad))


def init_reductions() -> None:
    """Registers the tensor reducers with multiprocessing's pickler (done when kiln.multiprocessing is imported)."""
    for cls in (Tensor, Parameter, _C.TensorBase):
        ForkingPickler.register(cls, reduce_tensor)
