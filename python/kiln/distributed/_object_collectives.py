"""Collectives of picklable Python objects (broadcast_object_list,
all_gather_object, gather_object, scatter_object_list), as torch's: each
object is pickled into a uint8 tensor, sizes travel first, then the bytes
padded to the largest size; on an NCCL group these tensors live on the group's
GPU, as torch's do. Unpickling runs whatever the sender pickled: use
them only between processes of one trusted job, as torch warns."""

from __future__ import annotations

import io
import pickle

import numpy as np

from kiln import _C
from kiln.distributed._collectives import all_gather, broadcast, gather, scatter
from kiln.distributed._process_group import get_rank, resolve_group

__all__ = ["all_gather_object", "broadcast_object_list", "gather_object", "scatter_object_list"]


def _device(pg) -> str:
    """Where the group's backend takes tensors: the CPU (Gloo) or its GPU (NCCL)."""
    return f"cuda:{pg._backend.device}" if pg._backend_name == "nccl" else "cpu"


def _on(array, device: str):
    tensor = _C.from_numpy(array)
    return tensor if device == "cpu" else tensor.to(device)


def _to_tensor(obj, device: str):
    buffer = io.BytesIO()
    pickle.Pickler(buffer).dump(obj)
    data = np.frombuffer(buffer.getvalue(), dtype=np.uint8).copy()
    return _on(data, device), _on(np.array([data.size], dtype=np.int64), device)


def _from_tensor(tensor, size: int):
    return pickle.loads(tensor[:size].cpu().numpy().tobytes())


def _padded(tensor, length: int, device: str):
    out = _empty_bytes(length, device)
    out[:tensor.numel()].copy_(tensor)
    return out


def _empty_bytes(length: int, device: str):
    return _on(np.zeros(length, dtype=np.uint8), device)


def _empty_size(device: str):
    return _on(np.zeros(1, dtype=np.int64), device)


def all_gather_object(object_list: list, obj, group=None) -> None:
    """``object_list[r]`` becomes rank r's ``obj``, on every rank."""
    pg = resolve_group(group)
    if pg is None:
        return
    dev = _device(pg)
    size = pg.size()
    data, length = _to_tensor(obj, dev)
    lengths = [_empty_size(dev) for _ in range(size)]
    all_gather(lengths, length, group=group)
    longest = max(int(n.item()) for n in lengths)
    gathered = [_empty_bytes(longest, dev) for _ in range(size)]
    all_gather(gathered, _padded(data, longest, dev), group=group)
    for r in range(size):
        object_list[r] = _from_tensor(gathered[r], int(lengths[r].item()))


def broadcast_object_list(object_list: list, src: int = 0, group=None, device=None, group_src=None) -> None:
    """Every rank's ``object_list`` becomes rank ``src``'s (the lists have the same length everywhere)."""
    pg = resolve_group(group)
    if pg is None:
        return
    dev = _device(pg)
    is_source = (pg.rank() == group_src) if group_src is not None else (get_rank() == src)
    n = len(object_list)
    if is_source:
        pairs = [_to_tensor(obj, dev) for obj in object_list]
        lengths = _on(np.array([int(p[1].item()) for p in pairs], dtype=np.int64), dev)
    else:
        lengths = _on(np.zeros(n, dtype=np.int64), dev)
    broadcast(lengths, src=src, group=group, group_src=group_src)
    total = int(lengths.sum().item())
    payload = _empty_bytes(total, dev)
    if is_source and total:
        payload.copy_(_on(np.concatenate([p[0].cpu().numpy() for p in pairs]), dev))
    broadcast(payload, src=src, group=group, group_src=group_src)
    if not is_source:
        start = 0
        for i in range(n):
            size = int(lengths[i].item())
            object_list[i] = _from_tensor(payload[start:start + size], size)
            start += size


def gather_object(obj, object_gather_list=None, dst: int = 0, group=None, group_dst=None) -> None:
    """On rank ``dst``, ``object_gather_list[r]`` becomes rank r's ``obj``."""
    pg = resolve_group(group)
    if pg is None:
        return
    dev = _device(pg)
    is_destination = (pg.rank() == group_dst) if group_dst is not None else (get_rank() == dst)
    # Sizes differ per rank; an all-gather of the sizes lets every rank pad to the same length.
    everything = [None] * pg.size()
    if is_destination and (object_gather_list is None or len(object_gather_list) != pg.size()):
        raise ValueError(f"gather_object: the destination rank needs object_gather_list with world_size "
                         f"({pg.size()}) entries")
    data, length = _to_tensor(obj, dev)
    lengths = [_empty_size(dev) for _ in range(pg.size())]
    all_gather(lengths, length, group=group)
    longest = max(int(n.item()) for n in lengths)
    received = [_empty_bytes(longest, dev) for _ in range(pg.size())] if is_destination else None
    gather(_padded(data, longest, dev), received, dst=dst, group=group, group_dst=group_dst)
    if is_destination:
        for r in range(pg.size()):
            everything[r] = _from_tensor(received[r], int(lengths[r].item()))
        object_gather_list[:] = everything


def scatter_object_list(scatter_object_output_list: list, scatter_object_input_list=None, src: int = 0, group=None,
                        group_src=None) -> None:
    """``scatter_object_output_list[0]`` becomes rank ``src``'s ``scatter_object_input_list[rank]``."""
    pg = resolve_group(group)
    if pg is None:
        return
    dev = _device(pg)
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at least 1.")
    is_source = (pg.rank() == group_src) if group_src is not None else (get_rank() == src)
    longest = _empty_size(dev)
    if is_source:
        pairs = [_to_tensor(obj, dev) for obj in scatter_object_input_list]
        longest.fill_(max(int(p[1].item()) for p in pairs))
    broadcast(longest, src=src, group=group, group_src=group_src)
    width = int(longest.item())
    out_bytes, out_size = _empty_bytes(width, dev), _empty_size(dev)
    scatter(out_bytes, [_padded(p[0], width, dev) for p in pairs] if is_source else None, src=src, group=group,
            group_src=group_src)
    scatter(out_size, [p[1] for p in pairs] if is_source else None, src=src, group=group, group_src=group_src)
    scatter_object_output_list[0] = _from_tensor(out_bytes, int(out_size.item()))
