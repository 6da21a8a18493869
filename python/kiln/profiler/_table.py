"""``EventList.table``: the summary table, with torch.profiler's columns, widths and number formats."""

from __future__ import annotations


def format_time(time_us: float) -> str:
    """A duration as torch prints it: "12.345us", "1.234ms", "1.234s"."""
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"

_COLUMN_WIDTH = 12
_SPACING = 2


def _format_share(time_us: float, total_us: float) -> str:
    if total_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


def _format_memory(nbytes: int) -> str:
    kb, mb, gb = 1024, 1024 ** 2, 1024 ** 3
    if abs(nbytes) >= gb:
        return f"{nbytes / gb:.2f} GB"
    if abs(nbytes) >= mb:
        return f"{nbytes / mb:.2f} MB"
    if abs(nbytes) >= kb:
        return f"{nbytes / kb:.2f} KB"
    return f"{nbytes} B"


def _with_unit(time_us: float, unit: str | None) -> str:
    if unit == "s":
        return f"{time_us / 1e6:.3f}s"
    if unit == "ms":
        return f"{time_us / 1e3:.3f}ms"
    if unit == "us":
        return f"{time_us:.3f}us"
    return format_time(time_us)


def build_table(events, sort_by=None, row_limit=100, header=None, max_name_column_width=55,
                max_shapes_column_width=80, profile_memory=False, top_level_events_only=False,
                time_unit=None) -> str:
    """The table text: a dashed rule, the header row, a rule, one row per event (at most ``row_limit``), a rule,
    and "Self CPU time total"."""
    if len(events) == 0:
        return ""
    rows = list(events)
    if sort_by is not None:
        rows.sort(key=lambda e: getattr(e, sort_by.replace("cuda", "device")), reverse=True)
    has_shapes = any(e.input_shapes for e in rows)
    name_width = min(max(len(e.key) for e in rows) + 4, max_name_column_width)
    shapes_width = min(max(len(str(e.input_shapes)) for e in rows) + 4, max_shapes_column_width)

    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    widths = [name_width] + [_COLUMN_WIDTH] * (len(headers) - 1)
    if has_shapes:
        headers.append("Input Shapes")
        widths.append(shapes_width)
    row_format = "".join("{: >" + str(w) + "}" + " " * _SPACING for w in widths)
    rule = "".join("-" * w + " " * _SPACING for w in widths)
    line_length = sum(w + _SPACING for w in widths) - _SPACING

    total_self = sum(e.self_cpu_time_total for e in rows)
    out: list[str] = []
    if header is not None:
        out += ["=" * line_length, header]
    if top_level_events_only:
        out += ["=" * line_length, "This report only display top-level ops statistics"]
    out += [rule, row_format.format(*headers), rule]
    shown = 0
    for e in rows:
        if shown == row_limit:
            break
        if top_level_events_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        values = [name,
                  _format_share(e.self_cpu_time_total, total_self),
                  _with_unit(e.self_cpu_time_total, time_unit),
                  _format_share(e.cpu_time_total, total_self) if not e.is_async else 0,
                  _with_unit(e.cpu_time_total, time_unit),
                  _with_unit(e.cpu_time, time_unit)]
        if profile_memory:
            values += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
        values.append(e.count)
        if has_shapes:
            values.append(str(e.input_shapes)[:shapes_width])
        out.append(row_format.format(*values))
    out += [rule, f"Self CPU time total: {format_time(total_self)}"]
    return "\n".join(out) + "\n"
