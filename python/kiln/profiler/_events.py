"""The recorded events as torch.autograd.profiler_util shapes them: ``FunctionEvent`` (one range, instant or
allocator event, with its parent and children), ``EventList`` and ``FunctionEventAvg`` (``key_averages``).

Times are microseconds (floats), as torch reports them; memory is bytes. See Note [What the profiler records]
(eager/core/ProfilerEvents.h) for where each event comes from."""

from __future__ import annotations

from dataclasses import dataclass, field

from kiln.profiler._chrome_trace import write_chrome_trace
from kiln.profiler._table import build_table, format_time

RANGE, INSTANT, MEMORY = 0, 1, 2  # the kinds of kiln._C._profiler.stop()'s tuples


@dataclass(frozen=True)
class Interval:
    """A range's start and end on the profiler's clock, in microseconds."""

    start: float
    end: float

    def elapsed_us(self) -> float:
        return self.end - self.start


@dataclass(eq=False)
class MemoryRecord:
    """One allocation (bytes > 0) or free (bytes < 0), with the allocator's totals after it."""

    time_us: float
    thread: int
    bytes: int
    total_allocated: int
    total_reserved: int
    address: int
    device_type: int


@dataclass(eq=False)
class FunctionEvent:
    """One recorded range (an op, an autograd node, a record_function, a compiled graph, a fused kernel), an
    instant (a kernel-cache hit, an OS allocation) or an unattributed allocator event (``[memory]``)."""

    id: int
    name: str
    thread: int
    time_range: Interval
    category: str = "cpu_op"
    input_shapes: list = field(default_factory=list)
    args: dict = field(default_factory=dict)
    is_instant: bool = False
    cpu_parent: "FunctionEvent | None" = None
    cpu_children: list = field(default_factory=list)
    self_cpu_memory_usage: int = 0
    cpu_memory_usage: int = 0
    memory: MemoryRecord | None = None
    count: int = 1
    is_async: bool = False
    stack: list = field(default_factory=list)
    device_type: str = "CPU"
    trace_name: str = ""  # the name in the Chrome trace when it differs ("ProfilerStep#3")

    @property
    def key(self) -> str:
        return self.name

    @property
    def cpu_time_total(self) -> float:
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total

    @property
    def self_device_time_total(self) -> float:
        return 0.0

    @property
    def device_time_total(self) -> float:
        return 0.0

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={format_time(self.cpu_time_total)} "
                f"self_cpu_time={format_time(self.self_cpu_time_total)} thread={self.thread} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>")


class FunctionEventAvg:
    """The events of one key (a name, or a name and input shapes) summed: calls, total and self time, memory."""

    def __init__(self, key: str, input_shapes=None):
        self.key = key
        self.input_shapes = input_shapes
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.cpu_parent = None
        self.is_async = False
        self.stack: list = []
        self.node_id = -1

    def add(self, event: FunctionEvent) -> "FunctionEventAvg":
        self.count += event.count
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total
        self.cpu_memory_usage += event.cpu_memory_usage
        self.self_cpu_memory_usage += event.self_cpu_memory_usage
        return self

    @property
    def cpu_time(self) -> float:
        """Average total time per call."""
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def self_device_time_total(self) -> float:
        return 0.0

    @property
    def device_time_total(self) -> float:
        return 0.0

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={format_time(self.self_cpu_time_total)} "
                f"cpu_time={format_time(self.cpu_time)} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage}>")


class EventList(list):
    """A list of events with torch's summaries: ``key_averages``, ``table``, ``export_chrome_trace``."""

    def __init__(self, *args, profile_memory: bool = False, memory_records=(), **kwargs):
        super().__init__(*args, **kwargs)
        self._profile_memory = profile_memory
        self.memory_records = list(memory_records)

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> "EventList":
        """One ``FunctionEventAvg`` per name (and per input shapes with ``group_by_input_shape``), in first-seen
        order."""
        groups: dict = {}
        for e in self:
            key = (e.key, str(e.input_shapes)) if group_by_input_shape else e.key
            avg = groups.get(key)
            if avg is None:
                avg = groups[key] = FunctionEventAvg(e.key, e.input_shapes if group_by_input_shape else None)
            avg.add(e)
        return EventList(groups.values(), profile_memory=self._profile_memory)

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg("Total")
        for e in self:
            total.add(e)
        return total

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        """The summary table, laid out as torch's (``sort_by`` an attribute such as ``"self_cpu_time_total"``)."""
        return build_table(self, sort_by=sort_by, row_limit=row_limit, header=header,
                           max_name_column_width=max_name_column_width,
                           max_shapes_column_width=max_shapes_column_width,
                           profile_memory=self._profile_memory, top_level_events_only=top_level_events_only,
                           time_unit=time_unit)

    def export_chrome_trace(self, path: str) -> None:
        """Writes the events as Chrome trace JSON (chrome://tracing, https://ui.perfetto.dev)."""
        write_chrome_trace(self, self.memory_records, path)

    def __str__(self) -> str:
        return self.table()


def build_events(raw: list, profile_memory: bool) -> EventList:
    """FunctionEvents from ``kiln._C._profiler.stop()``'s tuples: ranges nested per thread (parent = the
    innermost range that contains it), instants as zero-length children, allocator events charged to the
    innermost open range of their thread (``[memory]`` events where none is open)."""
    events: list[FunctionEvent] = []
    memory_records: list[MemoryRecord] = []
    by_thread: dict[int, list] = {}
    for kind, name, category, start_ns, end_ns, thread, shapes, args, mem in raw:
        if kind == RANGE and end_ns < 0:
            continue  # never ended (the profiler stopped inside it)
        by_thread.setdefault(thread, []).append((kind, name, category, start_ns, end_ns, thread, shapes, args, mem))
    next_id = 0
    for thread, items in by_thread.items():
        # Parents before children: by start, then the longer range first, ranges before points.
        items.sort(key=lambda r: (r[3], -(r[4] - r[3]), r[0] != RANGE))
        open_ranges: list[FunctionEvent] = []
        for kind, name, category, start_ns, end_ns, _, shapes, args, mem in items:
            while open_ranges and not (start_ns <= open_ranges[-1]._end_ns and
                                       (kind != RANGE or end_ns <= open_ranges[-1]._end_ns)):
                open_ranges.pop()
            parent = open_ranges[-1] if open_ranges else None
            if kind == MEMORY:
                record = MemoryRecord(start_ns / 1e3, thread, mem[0], mem[1], mem[2], mem[3], mem[4])
                memory_records.append(record)
                if not profile_memory:
                    continue
                if parent is not None:
                    parent.self_cpu_memory_usage += record.bytes
                    continue
                event = FunctionEvent(next_id, "[memory]", thread, Interval(start_ns / 1e3, start_ns / 1e3),
                                      category="cpu_instant_event", is_instant=True, memory=record,
                                      self_cpu_memory_usage=record.bytes)
            else:
                # torch lists every step as "ProfilerStep*"; the trace keeps each step's number.
                event = FunctionEvent(next_id, "ProfilerStep*" if name.startswith("ProfilerStep#") else name,
                                      thread, Interval(start_ns / 1e3, end_ns / 1e3), category=category,
                                      input_shapes=list(shapes), args=dict(args), is_instant=kind == INSTANT,
                                      trace_name=name)
            event._end_ns = end_ns
            next_id += 1
            event.cpu_parent = parent
            if parent is not None:
                parent.cpu_children.append(event)
            events.append(event)
            if kind == RANGE:
                open_ranges.append(event)
    # Total memory: a range's own plus its children's (children come after their parents).
    for e in events:
        e.cpu_memory_usage = e.self_cpu_memory_usage
    for e in reversed(events):
        if e.cpu_parent is not None:
            e.cpu_parent.cpu_memory_usage += e.cpu_memory_usage
    events.sort(key=lambda e: (e.time_range.start, -e.time_range.elapsed_us()))
    return EventList(events, profile_memory=profile_memory, memory_records=memory_records)
