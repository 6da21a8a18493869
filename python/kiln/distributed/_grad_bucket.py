"""GradBucket: what DistributedDataParallel hands a communication hook (torch.distributed.GradBucket)."""

from __future__ import annotations

__all__ = ["GradBucket"]


class GradBucket:
    """One bucket of gradients: a flat ``buffer()`` holding the gradients of ``parameters()`` (this
    rank's, not yet reduced), its ``index()`` in reduction order, and whether it ``is_last()``.

    The hook returns a kiln.futures.Future whose value is the reduced buffer (a tensor of the same
    number of elements, or a list holding one); DDP writes it back into the parameters' gradients."""

    def __init__(self, index: int, buffer, parameters: list, offsets: list, is_last: bool) -> None:
        self._index = index
        self._buffer = buffer
        self._parameters = parameters
        self._offsets = offsets
        self._is_last = is_last

    def index(self) -> int:
        return self._index

    def buffer(self):
        return self._buffer

    def gradients(self) -> list:
        """One view of the buffer per parameter, shaped as the parameter."""
        return [self._buffer[start:start + p.numel()].view(p.shape)
                for p, start in zip(self._parameters, self._offsets)]

    def parameters(self) -> list:
        return list(self._parameters)

    def is_last(self) -> bool:
        return self._is_last

    def set_buffer(self, buffer) -> None:
        """``buffer()`` becomes ``buffer`` (a compressing hook swaps in a lower-precision copy); DDP takes
        the reduced gradients from the hook's Future, not from here."""
        self._buffer = buffer

    def __repr__(self) -> str:
        return f"<kiln.distributed.GradBucket index={self._index} params={len(self._parameters)}>"
