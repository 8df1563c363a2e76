"""``fnn.profiler.profile``: PyTorch's ``torch.profiler.profile`` over fastnn's hook calls,
with its ``schedule``, ``step()``, ``on_trace_ready`` and ``tensorboard_trace_handler``,
and ``record_function`` for the user's own ranges."""

from __future__ import annotations

import contextlib
import enum
import os
import socket
import time
import warnings
from functools import partial

from fastnn.profiler import recorder
from fastnn.profiler.events import EventList, build_events


class ProfilerActivity(enum.Enum):
    """What PyTorch's profiler can record. fastnn records host time of every backend's
    hook calls whichever is named: CUDA (or another device) gives the same host timings,
    the time to launch the work unless the backend waits for it."""

    CPU = 0
    XPU = 1
    CUDA = 2
    HPU = 3
    MTIA = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    """What a schedule asks of one step: nothing, warm up (not recorded), record, or
    record and hand the cycle to ``on_trace_ready`` at its end."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set:
    """The activities :class:`profile` accepts: all of them, all timed on the host."""
    return set(ProfilerActivity)


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0):
    """PyTorch's ``torch.profiler.schedule``: skip ``skip_first`` steps, then cycles of
    ``wait`` steps doing nothing, ``warmup`` steps warming up and ``active`` steps
    recording (the last one RECORD_AND_SAVE), ``repeat`` times (0: until the end);
    ``skip_first_wait`` leaves out the first cycle's wait."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError(f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), "
                         f"warmup={warmup} (need >= 0), active={active} (need > 0), "
                         f"repeat={repeat} (need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise ValueError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        cycle = wait + warmup + active
        if repeat > 0 and step / cycle >= repeat:
            return ProfilerAction.NONE
        at = step % cycle
        if at < wait:
            return ProfilerAction.NONE
        if at < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if at < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def _default_schedule(_: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False, use_python_export: bool = False):
    """An ``on_trace_ready`` that writes each cycle's Chrome trace into ``dir_name``, as
    ``{worker_name}.{time_ns}.pt.trace.json`` (worker_name: ``hostname_pid``)."""
    if use_gzip:
        raise NotImplementedError("tensorboard_trace_handler: use_gzip=True is not "
                                  "supported by fastnn's profiler; write plain JSON "
                                  "(use_gzip=False) and compress it afterwards")

    def handler_fn(prof) -> None:
        nonlocal worker_name
        try:
            os.makedirs(dir_name, exist_ok=True)
        except OSError as exc:
            raise RuntimeError("Can't create directory: " + dir_name) from exc
        worker_name = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        prof.export_chrome_trace(
            os.path.join(dir_name, f"{worker_name}.{time.time_ns()}.pt.trace.json"))

    return handler_fn


class record_function(contextlib.ContextDecorator):
    """A labelled range of the user's (PyTorch's ``record_function``): ``with
    record_function("forward"):`` or ``@record_function("step")``. While a profiler
    records, it is a row of its own, and the calls made inside it are its children
    (its self time is what they leave). Nothing is recorded when no profiler runs."""

    def __init__(self, name: str, args: str | None = None):
        self.name, self.args = name, args
        self._token = None

    def __enter__(self) -> record_function:
        rec = recorder.recording()
        if rec is not None:
            self._token = (rec, rec.open(self.name, "user"))
        return self

    def __exit__(self, *exc) -> bool:
        if self._token is not None:
            rec, token = self._token
            self._token = None
            rec.close(token)
        return False

    def _recreate_cm(self) -> record_function:  # a decorated function: one range per call
        return record_function(self.name, self.args)


def check_options(owner: str, profile_memory=False, with_flops=False, with_modules=False,
                  **ignored) -> None:
    """NotImplementedError for an option fastnn's profiler cannot honour."""
    if profile_memory:
        raise NotImplementedError(
            f"{owner}: profile_memory=True is not supported: fastnn's profiler times hook "
            f"calls and does not see the backends' allocations; pass profile_memory=False "
            f"(record_shapes=True shows each call's array sizes; Python's tracemalloc "
            f"measures host memory)")
    if with_flops:
        raise NotImplementedError(f"{owner}: with_flops=True is not supported: fastnn's "
                                  f"profiler counts no FLOPs; pass with_flops=False")
    if with_modules:
        raise NotImplementedError(f"{owner}: with_modules=True is not supported; wrap a "
                                  f"module's forward in record_function(name) instead")


class profile:
    """PyTorch's ``torch.profiler.profile`` over fastnn's backend hook calls.

    ``with fnn.profiler.profile() as prof:`` records every hook call made in the block,
    on every backend (its name, start and end; the shapes and dtypes of its arguments
    with ``record_shapes``; the user's frames with ``with_stack``), the backward pass and
    each backward rule as ranges, and :class:`record_function` ranges; then
    ``prof.key_averages().table(sort_by="self_cpu_time_total")`` tells where the time
    went. ``schedule`` and ``step()`` record only the active steps, calling
    ``on_trace_ready(prof)`` at the end of each cycle. Times are host wall times: on a
    device backend a call's time is its launch, unless the backend waits for the device.
    One profiler at a time; it nests with ``fnn.shadow`` either way.
    """

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None,
                 record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config=None,
                 execution_trace_observer=None, acc_events: bool = False, use_cuda=None,
                 custom_trace_id_callback=None, post_processing_timeout_s=None):
        check_options("profile", profile_memory, with_flops, with_modules)
        if execution_trace_observer is not None:
            raise NotImplementedError("profile: execution_trace_observer is not supported "
                                      "by fastnn's profiler; export_chrome_trace() writes "
                                      "the recorded calls")
        self.activities = _activities(activities, use_cuda)
        self.record_shapes, self.with_stack = bool(record_shapes), bool(with_stack)
        self.profile_memory = self.with_flops = self.with_modules = False
        self.acc_events = bool(acc_events)
        self.custom_trace_id_callback = custom_trace_id_callback
        self.record_steps = schedule is not None
        self.schedule = schedule or _default_schedule
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self.step_rec_fn = None
        self._recorder = recorder.Recorder(self.record_shapes, self.with_stack, "profile")
        self._events: EventList | None = None
        self._metadata: dict = {}
        self._running = False
        action = ProfilerAction
        start, stop, ready, warn = (self.start_trace, self.stop_trace, self._trace_ready,
                                    partial(warnings.warn, stacklevel=3))
        self.action_map = {  # (previous action, next action) -> what runs: PyTorch's
            (action.NONE, action.NONE): [],
            (action.NONE, action.WARMUP): [self.prepare_trace],
            (action.NONE, action.RECORD): [self.prepare_trace, start],
            (action.NONE, action.RECORD_AND_SAVE): [self.prepare_trace, start],
            (action.WARMUP, action.NONE): [
                partial(warn, "Incorrect schedule: WARMUP followed by NONE"), start, stop],
            (action.WARMUP, action.WARMUP): [],
            (action.WARMUP, action.RECORD): [start],
            (action.WARMUP, action.RECORD_AND_SAVE): [start],
            (action.RECORD, action.NONE): [
                partial(warn, "Incorrect schedule: RECORD followed by NONE"), stop],
            (action.RECORD, action.WARMUP): [
                partial(warn, "Incorrect schedule: RECORD followed by WARMUP"), stop],
            (action.RECORD, action.RECORD): [],
            (action.RECORD, action.RECORD_AND_SAVE): [],
            (action.RECORD_AND_SAVE, action.NONE): [stop, ready],
            (action.RECORD_AND_SAVE, action.WARMUP): [stop, ready, self.prepare_trace],
            (action.RECORD_AND_SAVE, action.RECORD): [stop, ready, self.prepare_trace, start],
            (action.RECORD_AND_SAVE, action.RECORD_AND_SAVE): [
                stop, ready, self.prepare_trace, start],
            (action.WARMUP, None): [start, stop],
            (action.RECORD, None): [stop, ready],
            (action.RECORD_AND_SAVE, None): [stop, ready],
            (action.NONE, None): [],
        }

    # ------------------------------------------------------------ the block

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, kind, value, traceback) -> None:
        self.stop()

    def start(self) -> None:
        """Patch the hook tables and act on step 0's action (what entering does)."""
        if self._running:
            raise RuntimeError("profile: already started; one start() per stop()")
        self._recorder.attach()
        self._running = True
        try:
            self._transit(ProfilerAction.NONE, self.current_action)
            if self.record_steps:
                self._open_step()
        except BaseException:
            self._detach()
            raise

    def stop(self) -> None:
        """End the last cycle (``on_trace_ready`` if it was recording) and put every hook
        table back as it was (what leaving the block does, also on an exception)."""
        if not self._running:
            return
        try:
            self._close_step()
            self._transit(self.current_action, None)
        finally:
            self._detach()

    def step(self) -> None:
        """Signal that the next step starts: the schedule's next action is taken."""
        self._close_step()
        previous = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(previous, self.current_action)
        if self.record_steps and self._running:
            self._open_step()

    def _detach(self) -> None:
        self._running = False
        self.step_rec_fn = None
        self._recorder.detach()

    def _open_step(self) -> None:
        self.step_rec_fn = record_function(f"ProfilerStep#{self.step_num}")
        self.step_rec_fn.__enter__()

    def _close_step(self) -> None:
        if self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None

    def _transit(self, previous, current) -> None:
        for action in self.action_map.get((previous, current), ()):
            action()

    # ------------------------------------------------------------ cycles

    def prepare_trace(self) -> None:
        """(PyTorch's warm-up of its tracer: nothing to prepare here.)"""

    def start_trace(self) -> None:
        """Start recording a cycle."""
        self._recorder.begin()

    def stop_trace(self) -> None:
        """End the cycle: its events become :meth:`events`."""
        rec = self._recorder
        start_ns, base_ns = rec.start_ns, rec.base_ns
        events = build_events(rec.end(), start_ns, base_ns, self._metadata)
        if self.acc_events and self._events is not None:
            events = EventList([*self._events, *events], base_ns=self._events._base_ns,
                               metadata=self._metadata)
        self._events = events

    def _trace_ready(self) -> None:
        if self.on_trace_ready:
            self.on_trace_ready(self)

    # ------------------------------------------------------------ results

    def events(self) -> EventList:
        """The last finished cycle's events (FunctionEvents, by start time)."""
        if self._events is None:
            raise RuntimeError("profile: no events yet: a cycle ends when the block ends (or "
                               "at the end of a schedule's active steps, in on_trace_ready)")
        return self._events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """The events averaged per name (and input shapes, and innermost stack frames)."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n,
                                          group_by_overload_name)

    def export_chrome_trace(self, path) -> None:
        """The last cycle's events as a Chrome trace JSON file."""
        self.events().export_chrome_trace(path)

    def export_stacks(self, path, metric: str = "self_cpu_time_total") -> None:
        """The events' stacks in the folded form of flame graphs (needs with_stack)."""
        if not self.with_stack:
            raise RuntimeError("export_stacks() requires with_stack=True")
        self.events().export_stacks(path, metric)

    def add_metadata(self, key: str, value: str) -> None:
        """A key and string value written into the Chrome trace."""
        self._metadata[key] = value

    def add_metadata_json(self, key: str, value: str) -> None:
        """A key and JSON value written into the Chrome trace."""
        import json

        self._metadata[key] = json.loads(value)

    def get_trace_id(self):
        return self.custom_trace_id_callback() if self.custom_trace_id_callback else None


def _activities(activities, use_cuda) -> set:
    if activities is None:
        chosen = {ProfilerActivity.CPU}
    else:
        chosen = set()
        for item in activities:
            items = item.keys() if isinstance(item, dict) else [item]
            for one in items:
                if not isinstance(one, ProfilerActivity):
                    raise TypeError(f"profile: activities holds {one!r}; use "
                                    f"fnn.profiler.ProfilerActivity.CPU or .CUDA")
                chosen.add(one)
    if use_cuda is not None:
        warnings.warn("`use_cuda` is deprecated, use `activities` argument instead",
                      FutureWarning, stacklevel=3)
        (chosen.add if use_cuda else chosen.discard)(ProfilerActivity.CUDA)
    if not chosen:
        raise ValueError("No valid profiler activities found")
    return chosen
