"""The text table of ``key_averages().table()``, in the layout of PyTorch's (its column
headers, widths, time formats and the closing ``Self CPU time total`` line), so that
what reads or diffs PyTorch's tables reads fastnn's."""

from __future__ import annotations

_WIDTH = 12  # PyTorch's DEFAULT_COLUMN_WIDTH
_SPACING = 2


def format_time(time_us: float) -> str:
    """PyTorch's time format: ``1.234s``, ``1.234ms`` or ``1.234us``."""
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def format_share(time_us: float, total_us: float) -> str:
    if total_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


def _in_unit(time_us: float, unit) -> str:
    if unit == "s":
        return f"{time_us / 1e6:.3f}s"
    if unit == "ms":
        return f"{time_us / 1e3:.3f}ms"
    if unit == "us":
        return f"{time_us:.3f}us"
    return format_time(time_us)


def _trim_path(path: str, width: int) -> str:
    if len(path) > width:
        path = path[len(path) - width:]
        if len(path) > 3:
            path = "..." + path[3:]
    return path


def build_table(events, sort_by=None, header=None, row_limit=100, max_src_column_width=75,
                max_name_column_width=55, max_shapes_column_width=80,
                top_level_events_only=False, time_unit=None) -> str:
    """The table of ``events`` (FunctionEvents or FunctionEventAvgs), PyTorch's layout."""
    if len(events) == 0:
        return ""
    if time_unit not in (None, "s", "ms", "us"):
        raise ValueError(f"table: time_unit must be None, 's', 'ms' or 'us', got {time_unit!r}")
    has_shapes = any(evt.input_shapes for evt in events)
    if sort_by is not None:
        events = sorted(events, key=lambda evt: getattr(evt, sort_by), reverse=True)
    name_width = max(len(evt.key) for evt in events) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    shapes_width = max(len(str(evt.input_shapes)) for evt in events) + 4
    if max_shapes_column_width is not None:
        shapes_width = min(shapes_width, max_shapes_column_width)
    stacks = [evt.stack for evt in events if evt.stack]
    src_width = None
    if stacks:
        src_width = max(max(len(entry) for entry in stack) for stack in stacks) + 4
        if max_src_column_width is not None:
            src_width = min(src_width, max_src_column_width)

    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
               "# of Calls"]
    columns = [(name_width, ">")] + [(_WIDTH, ">")] * (len(headers) - 1)
    if has_shapes:
        headers.append("Input Shapes")
        columns.append((shapes_width, ">"))
    if stacks:
        headers.append("Source Location")
        columns.append((src_width, "<"))
    row_format = "".join("{: " + align + str(width) + "}" + " " * _SPACING
                         for width, align in columns)
    separator = "".join("-" * width + " " * _SPACING for width, _ in columns)
    line_length = sum(width + _SPACING for width, _ in columns) - _SPACING

    total = sum(evt.self_cpu_time_total for evt in events)
    lines = []
    if header is not None:
        lines += ["=" * line_length, header]
    if top_level_events_only:
        lines += ["=" * line_length, "This report only display top-level ops statistics"]
    lines += [separator, row_format.format(*headers), separator]
    shown = 0
    for evt in events:
        if shown == row_limit:
            break
        if top_level_events_only and evt.cpu_parent is not None:
            continue
        shown += 1
        name = evt.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[: max_name_column_width - 3] + "..."
        row = [name, format_share(evt.self_cpu_time_total, total),
               _in_unit(evt.self_cpu_time_total, time_unit),
               format_share(evt.cpu_time_total, total),
               _in_unit(evt.cpu_time_total, time_unit), _in_unit(evt.cpu_time, time_unit),
               evt.count]
        if has_shapes:
            row.append(str(evt.input_shapes)[:shapes_width])
        if stacks:
            row.append(_trim_path(evt.stack[0], src_width) if evt.stack else "")
        lines.append(row_format.format(*row))
        if stacks:
            blank = [""] * (len(headers) - 1)
            for entry in (evt.stack or [])[1:]:
                lines.append(row_format.format(*blank, _trim_path(entry, src_width)))
            lines.append(row_format.format(*blank, ""))
    lines += [separator, f"Self CPU time total: {_in_unit(total, time_unit)}"]
    return "\n".join(lines) + "\n"
