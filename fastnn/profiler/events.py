"""The recorded events as PyTorch's profiler gives them: :class:`FunctionEvent` (one call
or range), :class:`FunctionEventAvg` (the events of one key summed) and
:class:`EventList` (``key_averages``, ``table``, ``export_chrome_trace``...).

Times are in microseconds, as PyTorch's attributes: ``cpu_time_total`` is an event's
wall time from its start to its end, ``self_cpu_time_total`` that less its children's
(the calls and ranges that ran inside it, in the same thread). fastnn measures host time
only: the device columns of PyTorch's tables (``cuda_time_total``...) are zero.
"""

from __future__ import annotations

import json
import os

from fastnn.api.frames import line_at
from fastnn.profiler.table import build_table, format_time

# sort keys of PyTorch's tables that name device time, which fastnn does not measure: they
# sort by the host time that stands for it (see docs/profiling.md)
DEVICE_KEYS = {f"{prefix}{device}_time{suffix}": f"{prefix}cpu_time{suffix}"
               for prefix in ("", "self_") for suffix in ("", "_total")
               for device in ("cuda", "device", "xpu", "privateuse1")}
SORT_KEYS = ("cpu_time", "cpu_time_total", "self_cpu_time_total", "count", *DEVICE_KEYS)


class Interval:
    """An event's start and end, in microseconds from the start of its cycle."""

    __slots__ = ("start", "end")

    def __init__(self, start: float, end: float):
        self.start, self.end = start, end

    def elapsed_us(self) -> float:
        return self.end - self.start

    def __repr__(self) -> str:
        return f"Interval(start={self.start:.3f}, end={self.end:.3f})"


class _Times:
    """What PyTorch's FormattedTimesMixin gives: averages, zero device times, strings."""

    count: int
    cpu_time_total: float
    self_cpu_time_total: float
    device_time_total = self_device_time_total = 0.0
    cuda_time_total = self_cuda_time_total = 0.0
    cpu_memory_usage = self_cpu_memory_usage = 0
    device_memory_usage = self_device_memory_usage = 0
    cuda_memory_usage = self_cuda_memory_usage = 0
    flops = 0
    node_id = -1
    is_async = is_remote = is_legacy = False
    use_device = None
    overload_name = ""

    @property
    def cpu_time(self) -> float:
        """The average time of one call (``cpu_time_total / count``)."""
        return self.cpu_time_total / self.count if self.count else 0.0

    device_time = cuda_time = 0.0
    cpu_time_str = property(lambda self: format_time(self.cpu_time))
    cpu_time_total_str = property(lambda self: format_time(self.cpu_time_total))
    self_cpu_time_total_str = property(lambda self: format_time(self.self_cpu_time_total))
    device_time_str = device_time_total_str = self_device_time_total_str = "0.000us"


class FunctionEvent(_Times):
    """One recorded hook call or range: ``name`` (the hook's name, a record_function's
    label, ``backward`` or a backward rule's node name), ``time_range``, ``thread``,
    ``input_shapes`` and ``input_dtypes`` (with record_shapes), ``stack`` (with
    with_stack), ``cpu_parent`` and ``cpu_children``, and ``backend``: the backend whose
    hook it is (None for a range)."""

    def __init__(self, id, name, thread, start_us, end_us, input_shapes=None,
                 input_dtypes=None, stack=None, backend=None, kind="hook"):
        # as PyTorch's: the steps' ranges average together as ProfilerStep*, and the
        # trace keeps their numbers
        self.trace_name = name
        if name.startswith("ProfilerStep#"):
            name = "ProfilerStep*"
        self.id, self.name, self.thread = id, name, thread
        self.time_range = Interval(start_us, end_us)
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.input_dtypes = input_dtypes if input_dtypes is not None else []
        self.stack = stack if stack is not None else []
        self.backend, self.kind = backend, kind
        self.is_user_annotation = kind == "user"
        self.count = 1
        self.cpu_parent: FunctionEvent | None = None
        self.cpu_children: list = []

    @property
    def key(self) -> str:
        return self.name

    @property
    def cpu_time_total(self) -> float:
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} backend={self.backend} "
                f"cpu_time={self.cpu_time_str} start_us={self.time_range.start:.3f} "
                f"end_us={self.time_range.end:.3f} cpu_children="
                f"{[c.id for c in self.cpu_children]} thread={self.thread} "
                f"input_shapes={self.input_shapes}>")


class FunctionEventAvg(_Times):
    """The events of one key (name, and shapes or stack when grouped by them) summed."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.input_shapes = self.stack = None
        self.cpu_parent, self.cpu_children = None, None
        self.is_user_annotation = False

    def add(self, other) -> FunctionEventAvg:
        if self.key is None:  # the first event's shapes and stack, as PyTorch's
            self.key, self.input_shapes, self.stack = other.key, other.input_shapes, other.stack
            self.cpu_parent, self.cpu_children = other.cpu_parent, other.cpu_children
            self.is_user_annotation = other.is_user_annotation
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        return self

    __iadd__ = add

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str}"
                f" cpu_time={self.cpu_time_total_str} count={self.count} "
                f"input_shapes={self.input_shapes}>")


class EventList(list):
    """A list of events (PyTorch's ``EventList``): ``key_averages()``, ``table()``,
    ``export_chrome_trace(path)``, ``total_average()``, ``self_cpu_time_total``."""

    def __init__(self, *args, use_device=None, profile_memory=False, with_flops=False,
                 base_ns: int = 0, metadata=None):
        super().__init__(*args)
        self._use_device, self._base_ns = use_device, base_ns
        self._metadata = dict(metadata or {})

    @property
    def self_cpu_time_total(self) -> float:
        return sum(event.self_cpu_time_total for event in self)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """One :class:`FunctionEventAvg` per name (and input shapes, and the innermost
        ``group_by_stack_n`` frames, when asked), in order of first appearance."""
        averages: dict = {}
        for event in self:
            key = [event.key, event.is_user_annotation]
            if group_by_input_shape:
                key.append(str(event.input_shapes))
            if group_by_stack_n > 0:
                key += list(event.stack[:group_by_stack_n])
            averages.setdefault(tuple(key), FunctionEventAvg()).add(event)
        for average in averages.values():  # what was not grouped by is not shown: PyTorch's
            average.stack = list(average.stack[:group_by_stack_n])
            if not group_by_input_shape:
                average.input_shapes = ""
        return EventList(averages.values(), base_ns=self._base_ns)

    def total_average(self) -> FunctionEventAvg:
        """Every event summed, under the key ``Total``."""
        total = FunctionEventAvg()
        for event in self:
            total.add(event)
        total.key = "Total"
        return total

    def table(self, sort_by=None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80,
              header=None, top_level_events_only: bool = False, time_unit=None) -> str:
        """PyTorch's table: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time
        avg, # of Calls (and Input Shapes, Source Location when recorded), the rows
        sorted by the attribute ``sort_by``, largest first (``"self_cpu_time_total"``,
        ``"cpu_time_total"``, ``"cpu_time"``, ``"count"``; a device time key such as
        ``"cuda_time_total"`` sorts by its host counterpart)."""
        if sort_by is not None and sort_by not in SORT_KEYS:
            memory = "memory" in str(sort_by)
            raise ValueError(f"table: sort_by={sort_by!r} is not a key fastnn's profiler "
                             f"records{' (it records no memory)' if memory else ''}; use one"
                             f" of {', '.join(SORT_KEYS[:4])} (or a device time key, "
                             f"which sorts by host time)")
        return build_table(self, DEVICE_KEYS.get(sort_by, sort_by), header, row_limit,
                           max_src_column_width, max_name_column_width,
                           max_shapes_column_width, top_level_events_only, time_unit)

    def __str__(self) -> str:
        return self.table()

    def export_chrome_trace(self, path) -> None:
        """Write the events as a Chrome trace (chrome://tracing, Perfetto): complete
        ("X") events with ``ts`` and ``dur`` in microseconds from the cycle's start
        (``baseTimeNanoseconds`` is that start, in ns since the epoch)."""
        pid = os.getpid()
        events = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "ts": 0,
                   "args": {"name": "python (fastnn)"}}]
        for event in self:
            if not isinstance(event, FunctionEvent):
                raise TypeError("export_chrome_trace: events only, not key averages")
            args = {"External id": event.id}
            if event.backend is not None:
                args["Backend"] = event.backend
            if event.input_shapes:
                args["Input Dims"] = event.input_shapes
                args["Input type"] = event.input_dtypes
            if event.stack:
                args["Call stack"] = ";".join(event.stack)
            events.append({"ph": "X", "cat": _CATEGORY.get(event.kind, "cpu_op"),
                           "name": event.trace_name, "pid": pid, "tid": event.thread,
                           "ts": event.time_range.start, "dur": event.cpu_time_total,
                           "args": args})
        trace = {"schemaVersion": 1, "displayTimeUnit": "ms", "deviceProperties": [],
                 "baseTimeNanoseconds": self._base_ns, **self._metadata,
                 "traceEvents": events, "traceName": str(path)}
        with open(path, "w", encoding="utf-8") as out:
            json.dump(trace, out)

    def export_stacks(self, path, metric: str = "self_cpu_time_total") -> None:
        """Write one line per event with a stack, ``outer;...;inner;name value`` (the
        folded form flamegraph.pl and speedscope read); needs with_stack=True."""
        metric = DEVICE_KEYS.get(metric, metric)
        with open(path, "w", encoding="utf-8") as out:
            for event in self:
                if event.stack:
                    frames = ";".join(reversed([*event.stack]))
                    out.write(f"{frames};{event.name} {int(getattr(event, metric))}\n")


_CATEGORY = {"user": "user_annotation", "backward": "cpu_op", "hook": "cpu_op"}


def stack_text(frames) -> list | None:
    """A recorded stack (``Recorder.source``: (code, instruction offset) pairs) as
    PyTorch's ``file(line): name`` lines."""
    if frames is None:
        return None
    return [f"{code.co_filename}({line_at(code, offset)}): {code.co_name}"
            for code, offset in frames]


def build_events(raw, start_ns: int, base_ns: int, metadata=None) -> EventList:
    """The cycle's :class:`Raw` records as an EventList, by start time, with each event's
    ``cpu_parent`` and ``cpu_children`` (a parent outside the cycle: none)."""
    events = [FunctionEvent(r.id, r.name, r.thread, (r.start - start_ns) / 1000.0,
                            (r.end - start_ns) / 1000.0, r.shapes, r.dtypes, stack_text(r.stack),
                            r.backend, r.kind) for r in raw]
    by_id = {event.id: event for event in events}
    for event, r in zip(events, raw):
        parent = by_id.get(r.parent)
        if parent is not None:
            event.cpu_parent = parent
            parent.cpu_children.append(event)
    events.sort(key=lambda e: (e.time_range.start, -e.time_range.end, e.id))
    for event in events:
        event.cpu_children.sort(key=lambda e: e.time_range.start)
    return EventList(events, base_ns=base_ns, metadata=metadata)
