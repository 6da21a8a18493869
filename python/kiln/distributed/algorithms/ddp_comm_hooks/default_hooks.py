"""torch's default DDP communication hooks. Each takes ``(process_group, bucket)`` (None: the default
group) and returns a kiln.futures.Future of the bucket's gradients averaged over the group's ranks."""

from __future__ import annotations

from kiln._C import bfloat16, float16
from kiln.distributed._collectives import all_reduce
from kiln.distributed._process_group import GroupMember

__all__ = ["allreduce_hook", "bf16_compress_hook", "bf16_compress_wrapper", "fp16_compress_hook",
           "fp16_compress_wrapper"]


def _group_or_world(process_group):
    return process_group if process_group is not None else GroupMember.WORLD


def allreduce_hook(process_group, bucket):
    """Divides the bucket by the world size and all-reduces it (SUM): what DDP does with no hook."""
    group = _group_or_world(process_group)
    tensor = bucket.buffer()
    tensor.div_(group.size())
    return all_reduce(tensor, group=group, async_op=True).get_future().then(lambda fut: fut.value()[0])


def _compress_hook(dtype, process_group, bucket):
    group = _group_or_world(process_group)
    buffer = bucket.buffer()
    compressed = buffer.to(dtype).div_(group.size())

    def decompress(fut):
        buffer.copy_(fut.value()[0])
        return buffer

    return all_reduce(compressed, group=group, async_op=True).get_future().then(decompress)


def fp16_compress_hook(process_group, bucket):
    """All-reduces the bucket in float16 (half the bytes), then casts back to the bucket's dtype."""
    return _compress_hook(float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket):
    """All-reduces the bucket in bfloat16 (half the bytes), then casts back to the bucket's dtype."""
    return _compress_hook(bfloat16, process_group, bucket)


def _compress_wrapper(dtype, hook):
    def compressed_hook(hook_state, bucket):
        bucket.set_buffer(bucket.buffer().to(dtype))
        fut = hook(hook_state, bucket)

        def decompress(fut):
            decompressed = bucket.buffer()
            decompressed.copy_(fut.value())
            return decompressed

        return fut.then(decompress)

    return compressed_hook


def fp16_compress_wrapper(hook):
    """``hook`` run on a float16 copy of the bucket (torch's wrapper): a hook that compresses first."""
    return _compress_wrapper(float16, hook)


def bf16_compress_wrapper(hook):
    """``hook`` run on a bfloat16 copy of the bucket (torch's wrapper)."""
    return _compress_wrapper(bfloat16, hook)
