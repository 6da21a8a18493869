"""CUDA streams and events (torch.cuda.Stream, Event, stream(), current_stream(), ...).

A Stream or Event made without a driver raises kiln's no-driver RuntimeError.
"""

from __future__ import annotations

from kiln import _C
from kiln.cuda._device import _device_index


class Stream:
    """A CUDA stream on a device; ``Stream()`` makes a new one on the current device."""

    def __init__(self, device=None, priority: int = 0, **kwargs):
        handle = kwargs.get("_handle")
        self._stream = handle if handle is not None else _C._CudaStream(_device_index(device), priority)

    @classmethod
    def _wrap(cls, handle) -> "Stream":
        return cls(_handle=handle)

    @property
    def device(self):
        return _C.device("cuda", self._stream.device_index)

    @property
    def device_index(self) -> int:
        return self._stream.device_index

    @property
    def cuda_stream(self) -> int:
        return self._stream.cuda_stream

    @property
    def priority(self) -> int:
        return self._stream.priority

    def query(self) -> bool:
        """True when all work queued on the stream has finished."""
        return self._stream.query()

    def synchronize(self) -> None:
        self._stream.synchronize()

    def wait_event(self, event: "Event") -> None:
        event.wait(self)

    def wait_stream(self, stream: "Stream") -> None:
        self.wait_event(stream.record_event())

    def record_event(self, event: "Event | None" = None) -> "Event":
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other) -> bool:
        return isinstance(other, Stream) and self._stream == other._stream

    def __hash__(self) -> int:
        return hash(self._stream)

    def __repr__(self) -> str:
        return f"<kiln.cuda.Stream device={self.device} cuda_stream={self.cuda_stream:#x}>"


class Event:
    """A CUDA event: record it on a stream, wait for it on another, time between two."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        if interprocess:
            raise NotImplementedError("kiln.cuda.Event: interprocess events are not supported")
        self._event = _C._CudaEvent(enable_timing, blocking)

    def record(self, stream: Stream | None = None) -> None:
        self._event.record((current_stream() if stream is None else stream)._stream)

    def wait(self, stream: Stream | None = None) -> None:
        self._event.wait((current_stream() if stream is None else stream)._stream)

    def query(self) -> bool:
        return self._event.query()

    def synchronize(self) -> None:
        self._event.synchronize()

    def elapsed_time(self, end_event: "Event") -> float:
        """Milliseconds from this event to ``end_event`` (both recorded, with enable_timing=True)."""
        return self._event.elapsed_time(end_event._event)

    def __repr__(self) -> str:
        return f"<kiln.cuda.Event {'recorded' if self._event.recorded else 'uninitialized'}>"


def current_stream(device=None) -> Stream:
    """The calling thread's current stream on ``device`` (the default stream until set)."""
    return Stream._wrap(_C._CudaStream.current(_device_index(device)))


def default_stream(device=None) -> Stream:
    return Stream._wrap(_C._CudaStream.default(_device_index(device)))


def set_stream(stream: Stream) -> None:
    if stream is not None:
        _C._CudaStream.set_current(stream._stream)


class StreamContext:
    """``with kiln.cuda.stream(s):`` runs the block with ``s`` as its device's current stream
    (and that device current); None leaves everything as it is."""

    def __init__(self, stream: Stream | None):
        self.stream = stream
        self._saved = None

    def __enter__(self):
        if self.stream is None:
            return None
        index = self.stream.device_index
        self._saved = (_C._cuda_current_device(), _C._CudaStream.current(index))
        if self._saved[0] != index:
            _C._cuda_set_device(index)
        _C._CudaStream.set_current(self.stream._stream)
        return self.stream

    def __exit__(self, *exc):
        if self.stream is None:
            return False
        previous_device, previous_stream = self._saved
        _C._CudaStream.set_current(previous_stream)
        if previous_device != self.stream.device_index:
            _C._cuda_set_device(previous_device)
        return False


def stream(stream: Stream | None) -> StreamContext:
    return StreamContext(stream)
