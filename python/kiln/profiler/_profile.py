"""``profile``, ``record_function`` and ``tensorboard_trace_handler``, with torch.profiler's signatures and
step semantics. The recording itself is C++ (``kiln._C._profiler``; Note [What the profiler records] in
eager/core/ProfilerEvents.h): while a trace is active every eager op, autograd node, compiled graph, fused
kernel, JIT compile and (with ``profile_memory``) allocator event is recorded; otherwise nothing is."""

from __future__ import annotations

import functools
import os
import socket
import time
import warnings
from typing import Any, Callable, Iterable

from kiln import _C
from kiln.profiler._events import EventList, build_events
from kiln.profiler._schedule import ProfilerAction, ProfilerActivity, _default_schedule_fn

_recorder = _C._profiler


class record_function:
    """A named range in the profile, as a context manager or a decorator (each call its own range)."""

    def __init__(self, name: str, args: str | None = None):
        self.name = name
        self.args = args
        self._handle = None

    def __enter__(self) -> "record_function":
        self._handle = _recorder.begin_range(self.name, "user_annotation")
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        if self._handle is not None:
            _recorder.end_range(self._handle)
            self._handle = None

    def __call__(self, fn: Callable) -> Callable:
        name, args = self.name, self.args

        @functools.wraps(fn)
        def wrapper(*a, **kw):
            with record_function(name, args):
                return fn(*a, **kw)

        return wrapper


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None, use_gzip: bool = False,
                              use_python_export: bool = False) -> Callable:
    """An ``on_trace_ready`` that writes each trace to ``dir_name/{worker_name}.{time_ns}.pt.trace.json[.gz]``
    (worker_name defaults to ``{hostname}_{pid}``), the layout TensorBoard's profiler plugin reads."""

    def handler_fn(prof) -> None:
        nonlocal worker_name
        try:
            os.makedirs(dir_name, exist_ok=True)
        except OSError as e:
            raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, file_name))

    return handler_fn


class profile:
    """Profiler context manager (torch.profiler.profile's arguments; kiln records host activity only).

    Without ``schedule`` it records from ``start``/``__enter__`` to ``stop``/``__exit__`` and calls
    ``on_trace_ready`` once at the end. With ``schedule``, ``step()`` marks step boundaries: each step is a
    ``ProfilerStep#N`` range, steps whose action is RECORD or RECORD_AND_SAVE are recorded, and each
    RECORD_AND_SAVE step's end hands the trace to ``on_trace_ready``. ``key_averages()``, ``events()`` and
    ``export_chrome_trace()`` read the last finished trace."""

    def __init__(self, *, activities: Iterable[Any] | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[..., Any] | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config: Any = None,
                 execution_trace_observer: Any = None, acc_events: bool = False, use_cuda: bool | None = None,
                 custom_trace_id_callback: Callable[[], str] | None = None,
                 post_processing_timeout_s: float | None = None):
        self.activities = set(activities) if activities is not None else {ProfilerActivity.CPU}
        if use_cuda:
            self.activities.add(ProfilerActivity.CUDA)
        if self.activities - {ProfilerActivity.CPU}:
            warnings.warn("kiln.profiler records host (CPU) activity only; device activities record nothing "
                          "more yet", stacklevel=2)
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.acc_events = acc_events
        self.on_trace_ready = on_trace_ready
        self.record_steps = schedule is not None
        self.schedule = schedule if schedule is not None else _default_schedule_fn
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self.step_rec_fn: record_function | None = None
        self._recording = False
        self._events: EventList | None = None
        self._action_map = {
            (ProfilerAction.NONE, ProfilerAction.NONE): [],
            (ProfilerAction.NONE, ProfilerAction.WARMUP): [self.prepare_trace],
            (ProfilerAction.NONE, ProfilerAction.RECORD): [self.prepare_trace, self.start_trace],
            (ProfilerAction.NONE, ProfilerAction.RECORD_AND_SAVE): [self.prepare_trace, self.start_trace],
            (ProfilerAction.WARMUP, ProfilerAction.NONE): [
                functools.partial(warnings.warn, "Incorrect schedule: WARMUP followed by NONE"),
                self.start_trace, self.stop_trace],
            (ProfilerAction.WARMUP, ProfilerAction.WARMUP): [],
            (ProfilerAction.WARMUP, ProfilerAction.RECORD): [self.start_trace],
            (ProfilerAction.WARMUP, ProfilerAction.RECORD_AND_SAVE): [self.start_trace],
            (ProfilerAction.RECORD, ProfilerAction.NONE): [
                functools.partial(warnings.warn, "Incorrect schedule: RECORD followed by NONE"), self.stop_trace],
            (ProfilerAction.RECORD, ProfilerAction.WARMUP): [
                functools.partial(warnings.warn, "Incorrect schedule: RECORD followed by WARMUP"),
                self.stop_trace],
            (ProfilerAction.RECORD, ProfilerAction.RECORD): [],
            (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE): [],
            (ProfilerAction.RECORD_AND_SAVE, ProfilerAction.NONE): [self.stop_trace, self._trace_ready],
            (ProfilerAction.RECORD_AND_SAVE, ProfilerAction.WARMUP): [
                self.stop_trace, self._trace_ready, self.prepare_trace],
            (ProfilerAction.RECORD_AND_SAVE, ProfilerAction.RECORD): [
                self.stop_trace, self._trace_ready, self.prepare_trace, self.start_trace],
            (ProfilerAction.RECORD_AND_SAVE, ProfilerAction.RECORD_AND_SAVE): [
                self.stop_trace, self._trace_ready, self.prepare_trace, self.start_trace],
            (ProfilerAction.WARMUP, None): [self.start_trace, self.stop_trace],
            (ProfilerAction.RECORD, None): [self.stop_trace, self._trace_ready],
            (ProfilerAction.RECORD_AND_SAVE, None): [self.stop_trace, self._trace_ready],
        }

    # -- the step state machine (torch.profiler.profile's) ------------------------------------------------
    def __enter__(self) -> "profile":
        self.start()
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        self.stop()

    def start(self) -> None:
        self._transit_action(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function(f"ProfilerStep#{self.step_num}")
            self.step_rec_fn.__enter__()

    def stop(self) -> None:
        if self.record_steps and self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        self._transit_action(self.current_action, None)

    def step(self) -> None:
        """Signals that the next step has started."""
        if self.record_steps and self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        prev_action = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit_action(prev_action, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function(f"ProfilerStep#{self.step_num}")
            self.step_rec_fn.__enter__()

    def _transit_action(self, prev_action, current_action) -> None:
        for action in self._action_map.get((prev_action, current_action), []):
            action()

    def _trace_ready(self) -> None:
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    # -- recording ------------------------------------------------------------------------------------------
    def prepare_trace(self) -> None:
        """Warm-up: kiln's recorder needs none (a warm-up step records nothing)."""

    def start_trace(self) -> None:
        _recorder.start(record_shapes=self.record_shapes, profile_memory=self.profile_memory)
        self._recording = True

    def stop_trace(self) -> None:
        if not self._recording:
            return
        self._recording = False
        events = build_events(_recorder.stop(), self.profile_memory)
        if self.acc_events and self._events is not None:
            events = EventList(list(self._events) + list(events), profile_memory=self.profile_memory,
                               memory_records=self._events.memory_records + events.memory_records)
        self._events = events

    # -- results of the last trace ------------------------------------------------------------------------
    def events(self) -> EventList:
        """Every event of the last finished trace."""
        if self._events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self._events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """Events averaged by name (and input shapes, with ``group_by_input_shape``)."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def export_chrome_trace(self, path: str, use_python_export: bool = False) -> None:
        """Writes the last trace as Chrome trace JSON (opens in chrome://tracing and https://ui.perfetto.dev);
        gzip-compressed when ``path`` ends with ``.gz``. ``use_python_export`` is torch's; kiln always writes
        from Python."""
        self.events().export_chrome_trace(path)

    def table(self, *args, **kwargs) -> str:
        return self.key_averages().table(*args, **kwargs)
