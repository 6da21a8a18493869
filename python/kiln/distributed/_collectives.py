"""Tensor collectives and point-to-point messages with torch.distributed's
signatures, over the group's backend (Gloo for CPU tensors, NCCL for CUDA tensors:
both take the same calls, python/csrc/Distributed.cpp's bind_collectives).

Gloo and NCCL read and writes dense contiguous memory: a tensor that is not contiguous
is copied into a contiguous buffer, and the result is copied back when the
operation completes (at wait() for async_op=True). Ranks named by callers
(src, dst) are global ranks, translated to the group's own."""

from __future__ import annotations

import warnings

from kiln._C import _distributed
from kiln._C import contiguous_format as _contiguous
from kiln.distributed._backend import ReduceOp
from kiln.distributed._process_group import resolve_group
from kiln.distributed._work import CompletedWork, Work

__all__ = ["all_gather", "all_gather_into_tensor", "all_reduce", "all_to_all", "all_to_all_single", "barrier",
           "broadcast", "gather", "irecv", "isend", "recv", "reduce", "reduce_scatter", "reduce_scatter_tensor",
           "scatter", "send"]


def _group_or_none(group, what: str):
    pg = resolve_group(group)
    if pg is None:
        warnings.warn(f"Running {what} on a process that does not belong to the given group.", stacklevel=3)
    return pg


def _check_tensor(tensor, what: str, name: str = "tensor") -> None:
    """A kiln.Tensor with memory (CPU or CUDA); the backend checks which device it takes (Gloo: the
    CPU, NCCL: its group's GPU) and raises naming the tensor otherwise."""
    if not hasattr(tensor, "is_contiguous") or not hasattr(tensor, "dtype"):
        raise TypeError(f"{what}: {name} must be a kiln.Tensor, got {type(tensor).__name__}")
    if tensor.device.type not in ("cpu", "cuda"):
        raise RuntimeError(f"{what}: {name} is on {tensor.device}; the Gloo backend takes CPU tensors and the "
                           f"NCCL backend CUDA tensors")


def _check_op(op, what: str):
    if not isinstance(op, _distributed.ReduceOp):
        raise ValueError(f"{what}: op must be a kiln.distributed.ReduceOp (SUM, AVG, PRODUCT, MIN, MAX), got {op!r}")
    return op


def _writable(tensor):
    """(buffer Gloo writes, a function copying it back into ``tensor`` or None)."""
    if tensor.is_contiguous():
        return tensor.detach(), None
    buffer = tensor.detach().contiguous()
    return buffer, lambda: tensor.detach().copy_(buffer)


def _readable(tensor):
    return tensor.detach().contiguous()


def _run(work, async_op: bool, finish=None, result=None):
    if async_op:
        return Work(work, finish, result)
    work.wait()  # a blocking call on an idle Gloo group already ran (Note [Blocking calls on an idle group])
    if finish is not None:
        finish()
    return None


def _done(async_op: bool, result=None):
    return CompletedWork(result) if async_op else None


def _flat(tensor):
    return tensor.reshape(-1)


def _copy_chunks_to(tensors, flat):
    def finish() -> None:
        start = 0
        for t in tensors:
            n = t.numel()
            t.detach().copy_(flat[start:start + n].view(t.shape))
            start += n
    return finish


def _same_shapes(tensors, like, what: str, name: str) -> None:
    for t in tensors:
        _check_tensor(t, what, name)
        if tuple(t.shape) != tuple(like.shape) or t.dtype != like.dtype:
            raise ValueError(f"{what}: every tensor of {name} must have the shape and dtype of the input "
                             f"({tuple(like.shape)}, {like.dtype}); got {tuple(t.shape)}, {t.dtype}")


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """In place: ``tensor`` becomes the reduction (``op``) of every rank's tensor."""
    _check_tensor(tensor, "all_reduce")
    op = _check_op(op, "all_reduce")
    pg = _group_or_none(group, "all_reduce")
    if pg is None:
        return None
    buffer, finish = _writable(tensor)
    return _run(pg._backend.all_reduce(buffer, op, blocking=not async_op), async_op, finish, [tensor])


def reduce(tensor, dst: int = 0, op=ReduceOp.SUM, group=None, async_op: bool = False, group_dst=None):
    """In place on rank ``dst`` only: the reduction of every rank's tensor."""
    _check_tensor(tensor, "reduce")
    op = _check_op(op, "reduce")
    pg = _group_or_none(group, "reduce")
    if pg is None:
        return None
    root = group_dst if group_dst is not None else pg._group_rank(dst, "reduce: dst")
    if pg.rank() != root:  # Gloo uses the other ranks' buffers as scratch: theirs stay as they were
        scratch = tensor.detach().clone(memory_format=_contiguous)
        return _run(pg._backend.reduce(scratch, op, root, blocking=not async_op), async_op)
    buffer, finish = _writable(tensor)
    return _run(pg._backend.reduce(buffer, op, root, blocking=not async_op), async_op, finish, [tensor])


def broadcast(tensor, src: int = 0, group=None, async_op: bool = False, group_src=None):
    """In place: every rank's ``tensor`` becomes rank ``src``'s."""
    _check_tensor(tensor, "broadcast")
    pg = _group_or_none(group, "broadcast")
    if pg is None:
        return None
    root = group_src if group_src is not None else pg._group_rank(src, "broadcast: src")
    buffer, finish = _writable(tensor)
    return _run(pg._backend.broadcast(buffer, root, blocking=not async_op), async_op, finish, [tensor])


def all_gather(tensor_list, tensor, group=None, async_op: bool = False):
    """``tensor_list[r]`` becomes rank r's ``tensor``, on every rank."""
    _check_tensor(tensor, "all_gather")
    pg = _group_or_none(group, "all_gather")
    if pg is None:
        return None
    if len(tensor_list) != pg.size():
        raise ValueError(f"all_gather: tensor_list must hold world_size ({pg.size()}) tensors, got "
                         f"{len(tensor_list)}")
    _same_shapes(tensor_list, tensor, "all_gather", "tensor_list")
    flat = tensor.new_empty((pg.size() * tensor.numel(),))
    work = pg._backend.all_gather(flat, _flat(_readable(tensor)), blocking=not async_op)
    return _run(work, async_op, _copy_chunks_to(tensor_list, flat), tensor_list)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op: bool = False):
    """``output_tensor`` becomes every rank's input, concatenated (or stacked) in rank order."""
    _check_tensor(output_tensor, "all_gather_into_tensor", "output_tensor")
    _check_tensor(input_tensor, "all_gather_into_tensor", "input_tensor")
    pg = _group_or_none(group, "all_gather_into_tensor")
    if pg is None:
        return None
    if output_tensor.dtype != input_tensor.dtype:
        raise ValueError(f"all_gather_into_tensor: output_tensor is {output_tensor.dtype} but input_tensor is "
                         f"{input_tensor.dtype}")
    if output_tensor.numel() != pg.size() * input_tensor.numel():
        raise ValueError(f"all_gather_into_tensor: output tensor size must be equal to world_size ({pg.size()}) "
                         f"times input tensor size ({input_tensor.numel()}), got {output_tensor.numel()}")
    buffer, finish = _writable(output_tensor)
    work = pg._backend.all_gather(_flat(buffer), _flat(_readable(input_tensor)), blocking=not async_op)
    return _run(work, async_op, finish, [output_tensor])


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """``output`` becomes the reduction over ranks of their ``input_list[rank]``."""
    _check_tensor(output, "reduce_scatter", "output")
    op = _check_op(op, "reduce_scatter")
    pg = _group_or_none(group, "reduce_scatter")
    if pg is None:
        return None
    if len(input_list) != pg.size():
        raise ValueError(f"reduce_scatter: input_list must hold world_size ({pg.size()}) tensors, got "
                         f"{len(input_list)}")
    _same_shapes(input_list, output, "reduce_scatter", "input_list")
    n = output.numel()
    scratch = output.new_empty((pg.size() * n,))
    for r, t in enumerate(input_list):
        scratch[r * n:(r + 1) * n].copy_(_flat(t.detach()))
    buffer, finish = _writable(output)
    work = pg._backend.reduce_scatter(_flat(buffer), scratch, op, blocking=not async_op)
    return _run(work, async_op, finish, [output])


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """``output`` becomes the reduction over ranks of their input's chunk ``rank`` (input = world_size chunks)."""
    _check_tensor(output, "reduce_scatter_tensor", "output")
    _check_tensor(input, "reduce_scatter_tensor", "input")
    op = _check_op(op, "reduce_scatter_tensor")
    pg = _group_or_none(group, "reduce_scatter_tensor")
    if pg is None:
        return None
    if input.dtype != output.dtype or input.numel() != pg.size() * output.numel():
        raise ValueError(f"reduce_scatter_tensor: input tensor must be the same type as the output tensor and "
                         f"its size must be world_size ({pg.size()}) times the output size ({output.numel()}), got "
                         f"{input.dtype} with {input.numel()} elements")
    scratch = _flat(input.detach()).clone()
    buffer, finish = _writable(output)
    work = pg._backend.reduce_scatter(_flat(buffer), scratch, op, blocking=not async_op)
    return _run(work, async_op, finish, [output])


def gather(tensor, gather_list=None, dst: int = 0, group=None, async_op: bool = False, group_dst=None):
    """On rank ``dst``, ``gather_list[r]`` becomes rank r's ``tensor``; other ranks pass no list."""
    _check_tensor(tensor, "gather")
    pg = _group_or_none(group, "gather")
    if pg is None:
        return None
    root = group_dst if group_dst is not None else pg._group_rank(dst, "gather: dst")
    source = _flat(_readable(tensor))
    if pg.rank() == root:
        if gather_list is None or len(gather_list) != pg.size():
            raise ValueError(f"gather: the destination rank needs gather_list with world_size ({pg.size()}) tensors")
        _same_shapes(gather_list, tensor, "gather", "gather_list")
        flat = tensor.new_empty((pg.size() * tensor.numel(),))
        work = pg._backend.gather(flat, source, root, blocking=not async_op)
        return _run(work, async_op, _copy_chunks_to(gather_list, flat), gather_list)
    if gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    return _run(pg._backend.gather(None, source, root, blocking=not async_op), async_op)


def scatter(tensor, scatter_list=None, src: int = 0, group=None, async_op: bool = False, group_src=None):
    """``tensor`` becomes rank ``src``'s ``scatter_list[rank]``; other ranks pass no list."""
    _check_tensor(tensor, "scatter")
    pg = _group_or_none(group, "scatter")
    if pg is None:
        return None
    root = group_src if group_src is not None else pg._group_rank(src, "scatter: src")
    buffer, finish = _writable(tensor)
    if pg.rank() == root:
        if scatter_list is None or len(scatter_list) != pg.size():
            raise ValueError(f"scatter: the source rank needs scatter_list with world_size ({pg.size()}) tensors")
        _same_shapes(scatter_list, tensor, "scatter", "scatter_list")
        n = tensor.numel()
        flat = tensor.new_empty((pg.size() * n,))
        for r, t in enumerate(scatter_list):
            flat[r * n:(r + 1) * n].copy_(_flat(t.detach()))
        return _run(pg._backend.scatter(_flat(buffer), flat, root, blocking=not async_op), async_op, finish, [tensor])
    if scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    return _run(pg._backend.scatter(_flat(buffer), None, root, blocking=not async_op), async_op, finish, [tensor])


def _row_elements(tensor) -> int:
    """Elements in one slice along dim 0 (split sizes count these rows)."""
    n = 1
    for size in tuple(tensor.shape)[1:]:
        n *= size
    return n


def _split_counts(tensor, split_sizes, world: int, what: str, name: str) -> list[int]:
    """Elements going to (or coming from) each rank: split_sizes rows each, or equal chunks of dim 0."""
    if tensor.dim() == 0:
        raise ValueError(f"{what}: {name} must have at least one dimension to be split across ranks")
    rows = tensor.shape[0]
    if split_sizes is None or len(split_sizes) == 0:
        if rows % world != 0:
            raise ValueError(f"{what}: {name}'s dim 0 ({rows}) does not divide equally across group size ({world})")
        sizes = [rows // world] * world
    else:
        sizes = [int(s) for s in split_sizes]
        if len(sizes) != world:
            raise ValueError(f"{what}: number of {name} splits ({len(sizes)}) not equal to group size ({world})")
        if any(s < 0 for s in sizes):
            raise ValueError(f"{what}: {name} split sizes must not be negative, got {sizes}")
        if sum(sizes) != rows:
            raise ValueError(f"{what}: {name} split sizes {sizes} don't match total dim 0 size ({rows})")
    row = _row_elements(tensor)
    return [s * row for s in sizes]


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                      async_op: bool = False):
    """Rows of ``input`` go to the ranks in order (``input_split_sizes[r]`` rows to rank r, or equal
    chunks of dim 0); ``output``'s rows come from the ranks in order (``output_split_sizes``)."""
    _check_tensor(output, "all_to_all_single", "output")
    _check_tensor(input, "all_to_all_single", "input")
    pg = _group_or_none(group, "all_to_all_single")
    if pg is None:
        return None
    if output.dtype != input.dtype:
        raise ValueError(f"all_to_all_single: output is {output.dtype} but input is {input.dtype}")
    world = pg.size()
    out_counts = _split_counts(output, output_split_sizes, world, "all_to_all_single", "output")
    in_counts = _split_counts(input, input_split_sizes, world, "all_to_all_single", "input")
    buffer, finish = _writable(output)
    work = pg._backend.all_to_all(_flat(buffer), _flat(_readable(input)), out_counts, in_counts, blocking=not async_op)
    return _run(work, async_op, finish, [output])


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op: bool = False):
    """``input_tensor_list[r]`` goes to rank r; ``output_tensor_list[r]`` comes from rank r (any sizes:
    rank r's ``input_tensor_list[j]`` and rank j's ``output_tensor_list[r]`` must have as many elements)."""
    pg = _group_or_none(group, "all_to_all")
    if pg is None:
        return None
    world = pg.size()
    for name, tensors in (("output_tensor_list", output_tensor_list), ("input_tensor_list", input_tensor_list)):
        if len(tensors) != world:
            raise ValueError(f"all_to_all: {name} must hold world_size ({world}) tensors, got {len(tensors)}")
        for t in tensors:
            _check_tensor(t, "all_to_all", name)
    dtype = input_tensor_list[0].dtype
    if any(t.dtype != dtype for t in list(output_tensor_list) + list(input_tensor_list)):
        raise ValueError("all_to_all: every tensor of output_tensor_list and input_tensor_list must have one dtype")
    in_counts = [t.numel() for t in input_tensor_list]
    out_counts = [t.numel() for t in output_tensor_list]
    flat_in = input_tensor_list[0].new_empty((sum(in_counts),))
    start = 0
    for t, n in zip(input_tensor_list, in_counts):
        flat_in[start:start + n].copy_(_flat(t.detach()))
        start += n
    flat_out = input_tensor_list[0].new_empty((sum(out_counts),))
    work = pg._backend.all_to_all(flat_out, flat_in, out_counts, in_counts, blocking=not async_op)
    return _run(work, async_op, _copy_chunks_to(output_tensor_list, flat_out), output_tensor_list)


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Blocks until every process of the group reached the barrier."""
    pg = _group_or_none(group, "barrier")
    if pg is None:
        return None
    return _run(pg._backend.barrier(blocking=not async_op), async_op)


def _point_to_point(tensor, peer, group, tag: int, what: str, sending: bool, group_peer=None):
    _check_tensor(tensor, what)
    pg = _group_or_none(group, what)
    if pg is None:
        return None, None
    if group_peer is not None:
        peer_rank = group_peer
    elif peer is None:
        peer_rank = -1
    else:
        peer_rank = pg._group_rank(peer, f"{what}: {'dst' if sending else 'src'}")
    if sending:
        return pg, Work(pg._backend.send(_flat(_readable(tensor)), peer_rank, tag))
    buffer, finish = _writable(tensor)
    return pg, Work(pg._backend.recv(_flat(buffer), peer_rank, tag), finish, [tensor])


def isend(tensor, dst=None, group=None, tag: int = 0, group_dst=None):
    """Starts sending ``tensor`` to rank ``dst``; returns a Work."""
    return _point_to_point(tensor, dst, group, tag, "isend", True, group_dst)[1]


def irecv(tensor, src=None, group=None, tag: int = 0, group_src=None):
    """Starts receiving into ``tensor`` from rank ``src`` (None: any rank); returns a Work."""
    return _point_to_point(tensor, src, group, tag, "irecv", False, group_src)[1]


def send(tensor, dst=None, group=None, tag: int = 0, group_dst=None) -> None:
    """Sends ``tensor`` to rank ``dst`` and waits until it went."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src=None, group=None, tag: int = 0, group_src=None) -> int:
    """Receives into ``tensor`` from rank ``src`` (None: any rank); returns the sender's global rank."""
    pg, work = _point_to_point(tensor, src, group, tag, "recv", False, group_src)
    if work is None:
        return -1
    work.wait()
    return pg._ranks[work._source_rank()]
