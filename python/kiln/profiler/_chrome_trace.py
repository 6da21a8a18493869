"""Chrome trace JSON (the Trace Event Format that chrome://tracing and Perfetto open): complete ('X') events for
ranges with their arguments, instant ('i') events, torch's ``[memory]`` instants and a memory counter ('C')
track of the allocator's totals over time."""

from __future__ import annotations

import json
import os
import socket


def fused_kernel_args(event) -> dict:
    """A fused kernel's trace arguments: its ops and bytes moved, the rate it moved them at and that rate as a
    fraction of this machine's measured copy bandwidth (kiln.compiler.kernel_summary's estimate)."""
    from kiln.compiler._kernel_summary import copy_bandwidth_gbps

    args = dict(event.args)
    moved = args.get("bytes moved", 0)
    seconds = event.cpu_time_total / 1e6
    if moved and seconds > 0:
        rate = moved / seconds / 1e9
        args["achieved GB/s"] = round(rate, 3)
        args["fraction of copy bandwidth"] = round(rate / copy_bandwidth_gbps(), 4)
    return args


def trace_events(events, memory_records) -> list:
    """The trace's events: metadata naming the process and threads, then every event by time."""
    pid = os.getpid()
    out = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python"}},
           {"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "args": {"labels": "CPU"}}]
    for thread in sorted({e.thread for e in events} | {m.thread for m in memory_records}):
        out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": thread,
                    "args": {"name": f"thread {thread}"}})
    timed = []
    for external_id, e in enumerate(events, start=1):
        if e.memory is not None:
            continue  # written with the memory records below
        if e.is_instant:
            timed.append({"ph": "i", "s": "t", "cat": e.category, "name": e.name, "pid": pid, "tid": e.thread,
                          "ts": e.time_range.start, "args": dict(e.args)})
            continue
        args = fused_kernel_args(e) if e.category == "fused_kernel" else dict(e.args)
        args["External id"] = external_id
        if e.input_shapes:
            args["Input Dims"] = e.input_shapes
        timed.append({"ph": "X", "cat": e.category, "name": e.trace_name or e.name, "pid": pid, "tid": e.thread,
                      "ts": e.time_range.start, "dur": e.cpu_time_total, "args": args})
    for m in memory_records:
        timed.append({"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": pid,
                      "tid": m.thread, "ts": m.time_us,
                      "args": {"Total Reserved": m.total_reserved, "Total Allocated": m.total_allocated,
                               "Bytes": m.bytes, "Addr": m.address, "Device Type": m.device_type,
                               "Device Id": -1 if m.device_type == 0 else 0}})
        timed.append({"ph": "C", "name": "Memory (bytes)", "pid": pid, "ts": m.time_us,
                      "args": {"allocated": m.total_allocated, "reserved": m.total_reserved}})
    timed.sort(key=lambda ev: ev["ts"])
    return out + timed


def write_chrome_trace(events, memory_records, path: str) -> None:
    """Writes the trace to ``path`` (gzip-compressed when it ends with ``.gz``)."""
    document = {"schemaVersion": 1, "deviceProperties": [], "displayTimeUnit": "ms",
                "host_name": socket.gethostname(), "traceEvents": trace_events(events, memory_records),
                "traceName": str(path)}
    text = json.dumps(document)
    if str(path).endswith(".gz"):
        import gzip

        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
        return
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
