"""PyTorch's legacy ``torch.autograd.profiler`` names over fastnn's profiler: ``profile``
(one recording from entering the block to leaving it, no schedule), ``record_function``,
``EventList``, ``FunctionEvent`` and ``FunctionEventAvg``.

``fnn.autograd.profiler`` (and ``import fastnn.autograd.profiler``) reaches this module:
fastnn/__init__.py puts a stand-in at that name that loads it on first use, so the
autograd layer imports nothing of the profiler, which sits above it.
"""

from __future__ import annotations

import warnings

from fastnn.profiler.events import EventList, FunctionEvent, FunctionEventAvg, build_events
from fastnn.profiler.profiler import check_options, record_function
from fastnn.profiler.recorder import Recorder

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "profile", "record_function"]


class profile:
    """PyTorch's ``torch.autograd.profiler.profile``: ``with profile(record_shapes=True) as
    prof:`` records every backend hook call of the block (see
    :class:`fastnn.profiler.profile`, whose machinery this is); then ``prof.table()``,
    ``prof.key_averages()``, ``prof.function_events``, ``prof.export_chrome_trace(path)``.
    ``use_cuda``/``use_device`` are accepted: the timings are host times either way."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device=None,
                 record_shapes: bool = False, with_flops: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_modules: bool = False, use_kineto: bool = False, use_cpu: bool = True,
                 experimental_config=None, acc_events: bool = False,
                 custom_trace_id_callback=None, post_processing_timeout_s=None,
                 activity_filters=None):
        self.enabled = bool(enabled)
        self.entered = False
        self._function_events: EventList | None = None
        self.record_shapes, self.with_stack = bool(record_shapes), bool(with_stack)
        self.acc_events = bool(acc_events)
        if not self.enabled:
            return
        check_options("autograd.profiler.profile", profile_memory, with_flops, with_modules)
        if not use_cpu:
            raise NotImplementedError("autograd.profiler.profile: use_cpu=False is not "
                                      "supported: fastnn's profiler measures host time only")
        if use_cuda:
            warnings.warn("The attribute `use_cuda` will be deprecated soon, please use "
                          "``use_device = 'cuda'`` instead.", FutureWarning, stacklevel=2)
        self.use_device = "cuda" if use_cuda else use_device
        self._recorder = Recorder(self.record_shapes, self.with_stack,
                                  "autograd.profiler.profile")

    def __enter__(self) -> profile:
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self._recorder.attach()
        self.entered = True
        self._recorder.begin()
        return self

    def __exit__(self, kind, value, traceback) -> bool:
        if not self.enabled:
            return False
        rec = self._recorder
        try:
            start_ns, base_ns = rec.start_ns, rec.base_ns
            events = build_events(rec.end(), start_ns, base_ns)
        finally:
            rec.detach()
        if self.acc_events and self._function_events is not None:
            events = EventList([*self._function_events, *events],
                               base_ns=self._function_events._base_ns)
        self._function_events = events
        self.entered = False
        return False

    def _events(self) -> EventList:
        if self._function_events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self._function_events

    @property
    def function_events(self) -> EventList:
        """The recorded events (FunctionEvents, by start time)."""
        return self._events()

    def table(self, sort_by=None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80,
              header=None, top_level_events_only: bool = False) -> str:
        """The events' table (not averaged; see EventList.table)."""
        return self._events().table(sort_by, row_limit, max_src_column_width,
                                    max_name_column_width, max_shapes_column_width, header,
                                    top_level_events_only)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        return self._events().key_averages(group_by_input_shape, group_by_stack_n,
                                           group_by_overload_name)

    def total_average(self) -> FunctionEventAvg:
        return self._events().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        """The sum of every event's self time (us): the time the recorded calls took."""
        return self._events().self_cpu_time_total

    def export_chrome_trace(self, path) -> None:
        self._events().export_chrome_trace(path)

    def export_stacks(self, path, metric: str = "self_cpu_time_total") -> None:
        if not self.with_stack:
            raise RuntimeError("export_stacks() requires with_stack=True")
        self._events().export_stacks(path, metric)

    def __str__(self) -> str:
        if self._function_events is None:
            return "<unfinished torch.autograd.profile>"
        return str(self._function_events)

    def __repr__(self) -> str:
        if self._function_events is None:
            return "<unfinished torch.autograd.profile>"
        return repr(self._function_events)

