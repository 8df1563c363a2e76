"""Recording every backend hook call: the hook tables patched, each call timed.

A :class:`Recorder` replaces, on each loaded backend's hook table (and on each backend
loaded while it is attached), every hook by a wrapper that times the call with
``time.perf_counter_ns`` when the recorder is recording and passes it straight through
otherwise. As in shadow mode (:mod:`fastnn.shadowing.session`), the table is patched in
place, so whatever holds it is recorded too (the tape's nodes, the optimizers, the
core's composites, whose primitive calls become the composite's children), and the
parsed devices get a copy of the patched table, given back on exit. A device whose
table holds the same hooks as its backend's (the backend's own table, or the copy that a
running shadow session gave it) gets the copy: so the profiler and ``fnn.shadow`` nest
either way. The backward pass (``engine.run_backward``) is a ``backward`` range, and
each backward rule a range named as PyTorch names its node (``MatmulBackward0``).

Each thread keeps a stack of the calls and ranges open in it: a call's parent is the
innermost one open when it began, and only calls begun and ended in the same recording
cycle (``generation``) are kept.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import os
import sys
import threading
import time

import numpy as np

from fastnn.api import hookspec, registry
from fastnn.api.device import parsed_devices
from fastnn.autograd.node_names import default_name

_lock = threading.Lock()
_current: list = []  # the attached recorder, if any
_STACK_DEPTH = 16  # the user's frames kept per event under with_stack
_FASTNN = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_CONTEXTLIB = contextlib.__file__  # (a record_function decorator's frame)


class Raw:
    """One finished call or range, as recorded (turned into FunctionEvents later)."""

    __slots__ = ("id", "name", "start", "end", "thread", "parent", "shapes", "dtypes",
                 "stack", "backend", "kind")

    def __init__(self, id, name, start, end, thread, parent, shapes, dtypes, stack,
                 backend, kind):
        self.id, self.name, self.start, self.end = id, name, start, end
        self.thread, self.parent, self.shapes, self.dtypes = thread, parent, shapes, dtypes
        self.stack, self.backend, self.kind = stack, backend, kind


def current() -> Recorder | None:
    """The attached recorder, or None."""
    return _current[0] if _current else None


def recording() -> Recorder | None:
    """The attached recorder when it is recording now (record_function's question)."""
    rec = _current[0] if _current else None
    return rec if rec is not None and rec.recording else None


class Recorder:
    """The hook tables patched (:meth:`attach`, :meth:`detach`) and the calls recorded
    between :meth:`begin` and :meth:`end` (one cycle)."""

    def __init__(self, record_shapes: bool = False, with_stack: bool = False,
                 owner: str = "fastnn.profiler.profile"):
        self.record_shapes, self.with_stack, self.owner = record_shapes, with_stack, owner
        self.recording = False
        self.generation = 0
        self.raw: list = []
        self.start_ns = self.base_ns = 0  # the cycle's perf_counter_ns and time_ns at begin
        self._local = threading.local()
        self._ids = itertools.count()
        self._patched: dict = {}  # id(table) -> (table, originals, wrappers)
        self._swapped: list = []  # (device, its previous table, our copy)
        self._rules: list = []  # (rule dict, originals, wrappers)
        self._engine = None  # (the engine module, its run_backward, ours)
        self._forget = None
        self._skip = (_FASTNN, _CONTEXTLIB)  # paths that are not the user's code (with_stack)

    # ------------------------------------------------------------ attach and detach

    def attach(self) -> None:
        """Patch every loaded backend's hook table (and each backend loaded from now on)
        and the backward pass; one recorder at a time."""
        with _lock:
            if _current:
                raise RuntimeError(f"{self.owner}: another profiler is running "
                                   f"({_current[0].owner}); one profiler at a time: end "
                                   f"its block first")
            _current.append(self)
            try:
                self._forget = registry.on_load(self._patch)
                for backend in registry.loaded():
                    self._patch(backend)
                self._patch_backward()
            except BaseException:
                self._restore()
                raise

    def detach(self) -> None:
        """Stop recording and put back every table, device and rule as it was."""
        with _lock:
            self.recording = False
            self._restore()

    def _restore(self) -> None:
        if self._forget is not None:
            self._forget()
            self._forget = None
        for table, originals, wrappers in self._patched.values():
            for hook, wrapper in wrappers.items():
                if getattr(table, hook) is wrapper:  # else someone wrapped on top of ours:
                    setattr(table, hook, originals[hook])  # ours stays, passing calls through
        self._patched.clear()
        for dev, previous, view in reversed(self._swapped):
            if dev.ops is view:  # else someone installed another table since: theirs stays
                dev.ops = previous
        self._swapped.clear()
        for table, originals, wrappers in self._rules:
            for op, wrapper in wrappers.items():
                if table.get(op) is wrapper:
                    table[op] = originals[op]
        self._rules.clear()
        if self._engine is not None:
            engine, original, ours = self._engine
            if engine.run_backward is ours:
                engine.run_backward = original
            self._engine = None
        if _current and _current[0] is self:
            _current.clear()

    def _patch(self, backend) -> None:
        table = backend.ops
        if table is None or id(table) in self._patched:
            return
        originals = {hook: getattr(table, hook) for hook in hookspec.HOOKS}
        wrappers = {hook: self._wrap(backend.name, hook, fn) for hook, fn in originals.items()}
        for hook, wrapper in wrappers.items():
            setattr(table, hook, wrapper)
        self._patched[id(table)] = (table, originals, wrappers)
        # the devices get a copy: code that resolved hooks from a table once and keys its
        # cache on the table (a captured step's replay) resolves them again, recorded
        view = copy.copy(table)
        for dev in parsed_devices():
            if dev.backend is backend and (dev.ops is table or same_hooks(dev.ops, originals)):
                self._swapped.append((dev, dev.ops, view))
                dev.ops = view
        if backend.record.package_dir:
            self._skip += (os.path.join(backend.record.package_dir, ""),)

    def _wrap(self, backend: str, hook: str, fn):
        rec = self

        def call(*args, **kwargs):
            if not rec.recording:
                return fn(*args, **kwargs)
            return rec.run(hook, backend, fn, args, kwargs)

        call.__name__ = call.__qualname__ = hook
        call.__wrapped__ = fn
        return call

    def _patch_backward(self) -> None:
        from fastnn.autograd import engine, tensor_ops
        from fastnn.autograd.rules import RULES

        rec, original = self, engine.run_backward

        def run_backward(*args, **kwargs):
            if not rec.recording:
                return original(*args, **kwargs)
            return rec.run("backward", None, original, args, kwargs, "backward")

        engine.run_backward = run_backward
        self._engine = (engine, original, run_backward)
        for table in (RULES, tensor_ops.TENSOR_RULES):
            originals = dict(table)
            wrappers = {op: self._wrap_rule(op, fn) for op, fn in originals.items()}
            table.update(wrappers)
            self._rules.append((table, originals, wrappers))

    def _wrap_rule(self, op: str, fn):
        rec = self
        name = default_name(op)  # (a node's own name, before PyTorch's renames)

        def rule(*args, **kwargs):
            if not rec.recording:
                return fn(*args, **kwargs)
            return rec.run(name, None, fn, args, kwargs, "backward")

        rule.__name__ = rule.__qualname__ = getattr(fn, "__name__", op)
        rule.__wrapped__ = fn
        return rule

    # ------------------------------------------------------------ cycles

    def begin(self) -> None:
        """Start a recording cycle (what came before is forgotten)."""
        self.raw = []
        self.generation += 1
        self.base_ns, self.start_ns = time.time_ns(), time.perf_counter_ns()
        self.recording = True

    def end(self) -> list:
        """End the cycle; its finished calls and ranges, as :class:`Raw`."""
        self.recording = False
        raw, self.raw = self.raw, []
        return raw

    # ------------------------------------------------------------ one call or range

    def _stack(self) -> list:
        local = self._local
        try:
            return local.stack
        except AttributeError:
            local.stack, local.thread = [], threading.get_native_id()
            return local.stack

    def run(self, name, backend, fn, args, kwargs, kind="hook"):
        """Call ``fn`` and record the call as ``name`` (a hook's, or a range's: kind)."""
        stack = self._stack()
        shapes = dtypes = source = None
        if self.record_shapes and kind == "hook":
            shapes, dtypes = describe(args, kwargs)
        if self.with_stack:
            source = self.source()
        frame = (self.generation, next(self._ids))
        parent = stack[-1][1] if stack else -1
        stack.append(frame)
        start = time.perf_counter_ns()
        try:
            return fn(*args, **kwargs)
        finally:
            end = time.perf_counter_ns()
            stack.pop()
            if frame[0] == self.generation and self.recording:
                self.raw.append(Raw(frame[1], name, start, end, self._local.thread, parent,
                                    shapes, dtypes, source, backend, kind))

    def open(self, name: str, kind: str = "user"):
        """Open a range (record_function's); :meth:`close` ends it."""
        stack = self._stack()
        source = self.source() if self.with_stack else None
        frame = (self.generation, next(self._ids))
        parent = stack[-1][1] if stack else -1
        stack.append(frame)
        return (frame, name, parent, source, kind, time.perf_counter_ns())

    def close(self, token) -> None:
        end = time.perf_counter_ns()
        frame, name, parent, source, kind, start = token
        stack = self._stack()
        for i in range(len(stack) - 1, -1, -1):  # (ranges closed out of order too)
            if stack[i] is frame:
                del stack[i]
                break
        if frame[0] == self.generation and self.recording:
            self.raw.append(Raw(frame[1], name, start, end, self._local.thread, parent,
                                None, None, source, None, kind))

    def source(self) -> list:
        """The user's frames, innermost first (fastnn's and the backends' own frames left
        out), as (code, instruction offset): :func:`fastnn.profiler.events.stack_text`
        makes them PyTorch's ``file(line): name`` when the events are built (``f_lineno``
        at each op scanned the code's line table: :mod:`fastnn.api.frames`)."""
        frame, out, skip = sys._getframe(2), [], self._skip
        while frame is not None and len(out) < _STACK_DEPTH:
            code = frame.f_code
            if not code.co_filename.startswith(skip):
                out.append((code, frame.f_lasti))
            frame = frame.f_back
        return out


def same_hooks(table, originals) -> bool:
    """Whether ``table`` holds exactly the hooks ``originals`` (a copy of that table)."""
    return all(getattr(table, hook, None) is fn for hook, fn in originals.items())


_DTYPES: dict = {}


def _dtype(value) -> str:
    kind = value.dtype
    try:
        return _DTYPES[kind]
    except (KeyError, TypeError):
        pass
    try:
        name = np.dtype(kind).name
    except TypeError:
        name = str(kind)
    try:
        _DTYPES[kind] = name
    except TypeError:
        pass
    return name


def describe(args, kwargs) -> tuple:
    """PyTorch's ``input_shapes`` and ``Input type`` of a call: per argument, an array's
    shape and dtype, a list of arrays' shapes ("TensorList"), ``[]`` for anything else."""
    shapes, dtypes = [], []
    for value in itertools.chain(args, kwargs.values()) if kwargs else args:
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            shapes.append([int(d) for d in value.shape])
            dtypes.append(_dtype(value))
        elif isinstance(value, (list, tuple)) and any(hasattr(v, "shape") for v in value):
            shapes.append([[int(d) for d in v.shape] if hasattr(v, "shape") else []
                           for v in value])
            dtypes.append("TensorList")
        else:
            shapes.append([])
            dtypes.append("" if value is None else "ScalarList"
                          if isinstance(value, (list, tuple)) else "Scalar")
    return shapes, dtypes
