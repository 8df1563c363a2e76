"""``compile_program``: a recorded step (``fnn.compile``) replayed as a launch list.

The first run of a program is a trace: each call runs through its hook on copies of the
inputs while every kernel launch it makes is noted (pyopencl's ``Kernel.__call__`` is
wrapped for that run only, and the eager fast paths all launch through
:func:`fastnn_opencl.fast_launch.launch`, which reports to the trace) and the launched
kernel is cloned with the arguments it was given (``clCloneKernel``). A call whose work
was only such launches, on arrays, joins the launch list; a call that did anything else
(read to the host, took a number that changes between replays: a seed) stays a hook
call, except an optimizer update (SGD, Adam: :data:`fastnn_opencl.optim.REPLAYS`), whose
learning rates and step count are read at each replay to set its launches' scalars. The list is
then turned once into straight-line Python (:mod:`fastnn_opencl.launch_code`) whose
replay is ``enqueue_nd_range_kernel(queue, kernel, global, local)`` per launch, a
``set_arg`` only where a buffer changes between replays, and one flush at the end; that
same first run then replays it on the real inputs (so the core's first-replay check
compares the launch list, not the hooks, with the eager step).

Buffers: the arrays a step makes in between live in buffers allocated by the trace and
kept (the same ones every replay); a buffer that leaves the step (an output: a gradient,
a new optimizer state, the loss) is allocated afresh at each replay, so tensors returned
by earlier replays stay valid. An input whose offset or sharing of buffers differs from
the trace's, a program on a wrapped ops table (shadow execution, timing) or a call from
another thread replays through the core's interpreter instead.
"""

from __future__ import annotations

import os
import threading

from fastnn.api.hookspec import hookimpl
from fastnn.api.program import Seq, Slot, interpreter, slots_in
from fastnn_opencl import fast_launch, optim, runtime
from fastnn_opencl.launch_copy import device_copy
from fastnn_opencl.runtime import CLArray

ENABLED = os.environ.get("FASTNN_OPENCL_LAUNCH_LIST", "1") != "0"
"""Whether compiled programs replay as launch lists (``FASTNN_OPENCL_LAUNCH_LIST=0``: through
the core's interpreter, e.g. to compare)."""


@hookimpl
def compile_program(program):
    calls = program.calls
    if not calls or not ENABLED:
        return interpreter(program)
    device = calls[0].device
    if device.ops is not device.backend.ops:  # shadow execution or a timing wrapper
        return interpreter(program)
    return LaunchList(program).run


class LaunchList:
    """A program's replay: traced and built at its first run (see the module)."""

    def __init__(self, program):
        self.program = program
        self.slow = interpreter(program)
        self.fast = None
        self.owner = threading.get_ident()

    def run(self, env):
        fast = self.fast
        if fast is None:
            return self._first(env)
        return fast(env)

    def _first(self, env):
        from fastnn_opencl import launch_code

        if threading.get_ident() != self.owner:
            return self.slow(env)
        trace = trace_program(self.program, env)
        if trace is None:  # nothing to gain: every call stays a hook call
            self.fast = self.slow
        else:
            self.fast = launch_code.build(self.program, trace, self.slow, self.owner)
        return self.fast(env)


# ---------------------------------------------------------------- the trace


class Traced:
    """One call of the trace: its launches (clone, queue, global, local, args), whether
    it did anything a launch list cannot repeat, and its arguments and result."""

    __slots__ = ("launches", "other", "args", "kwargs", "result", "allocated", "scalars")

    def __init__(self):
        self.launches, self.other, self.allocated, self.scalars = [], None, [], None


class _Tracing:
    """While active (on this thread): launches are noted into ``self.now``, those through
    pyopencl's ``Kernel.__call__`` and those of the eager fast paths, which all enqueue
    through :func:`fastnn_opencl.fast_launch.launch`; anything else that reaches the device
    (a copy to or from the host, a wait, an enqueue of pyopencl's the trace cannot see)
    marks the call as other work."""

    def __init__(self):
        self.now = Traced()
        self.thread = threading.get_ident()

    def note(self, kernel, queue, global_size, local_size, args) -> None:
        """A launch of ``kernel`` with ``args`` (its buffers at their positions)."""
        if threading.get_ident() != self.thread:
            return
        now = self.now
        try:
            clone = kernel.clone()  # with the arguments just set
        except Exception:  # noqa: BLE001  (no clCloneKernel: a hook call)
            now.other = "a kernel that cannot be cloned"
        else:
            now.launches.append((clone, queue, global_size, local_size, args))

    def __enter__(self):
        cl = runtime.cl()
        import pyopencl.tools as cltools

        self.saved = (cl.Kernel.__call__, cl.enqueue_copy, cl.enqueue_nd_range_kernel,
                      cl.CommandQueue.finish, cltools.MemoryPool.allocate)
        kernel_call, enqueue_copy, enqueue, finish, allocate = self.saved
        tracing = self

        def call(kernel, queue, global_size, local_size, *args, **kwargs):
            event = kernel_call(kernel, queue, global_size, local_size, *args, **kwargs)
            if kwargs and threading.get_ident() == tracing.thread:
                tracing.now.other = "a launch with keyword arguments"
            elif not kwargs:
                tracing.note(kernel, queue, global_size, local_size, args)
            return event

        def flag(what, original):
            def wrapped(*args, **kwargs):
                if threading.get_ident() == tracing.thread:
                    tracing.now.other = what
                return original(*args, **kwargs)
            return wrapped

        def pooled(pool, nbytes):  # what a call allocates: its buffers (shared later)
            buf = allocate(pool, nbytes)
            if threading.get_ident() == tracing.thread:
                tracing.now.allocated.append(buf)
            return buf

        def copy(queue, dest, src, **kwargs):
            if threading.get_ident() == tracing.thread:
                launched = device_copy(queue, dest, src, kwargs, enqueue)
                if launched is not None:
                    kernel, size, event = launched
                    tracing.note(kernel, queue, size, None, [dest, None, src])
                    return event
                tracing.now.other = "a copy to or from the host"
            return enqueue_copy(queue, dest, src, **kwargs)

        cl.Kernel.__call__ = call
        cltools.MemoryPool.allocate = pooled
        cl.enqueue_copy = copy
        cl.enqueue_nd_range_kernel = flag("an enqueue the trace cannot see", enqueue)
        cl.CommandQueue.finish = flag("a wait for the device", finish)
        self.saved_tracer, fast_launch.TRACER[0] = fast_launch.TRACER[0], self.note
        return self

    def __exit__(self, *exc):
        import pyopencl.tools as cltools

        cl = runtime.cl()
        (cl.Kernel.__call__, cl.enqueue_copy, cl.enqueue_nd_range_kernel,
         cl.CommandQueue.finish, cltools.MemoryPool.allocate) = self.saved
        fast_launch.TRACER[0] = self.saved_tracer


def _copies(env) -> list:
    """The inputs with each array's buffer copied on the device (views of one buffer stay
    views of one copy), so the trace writes nothing the step reads."""
    cl, copied, out = runtime.cl(), {}, []
    for value in env:
        if type(value) is not CLArray:
            out.append(value)
            continue
        buf = copied.get(id(value.data))
        if buf is None:
            dev = value.dev
            buf = dev.pool.allocate(value.data.size)
            cl.enqueue_copy(dev.queue, buf, value.data)
            copied[id(value.data)] = buf
        out.append(CLArray(buf, value.shape, value.strides, value.offset, value.dtype,
                           value.dev))
    return out


def _fill(template, values):
    if type(template) is Slot:
        return values[template.i]
    if type(template) is Seq:
        return template.kind(_fill(item, values) for item in template.items)
    return template


def _store(template, result, values) -> None:
    if type(template) is Slot:
        values[template.i] = result
    elif type(template) is Seq:
        for item, part in zip(template.items, result):
            _store(item, part, values)


_TRACE_LOCK = threading.Lock()


def trace_program(program, env):
    """Run the program's hooks on copies of ``env``, noting each call's launches: (the
    slot values, [Traced] per call), or None when no call launched anything."""
    values = dict(zip(program.inputs, _copies(env)))
    traced = []
    with _TRACE_LOCK, _Tracing() as tracing:  # one trace at a time: it patches classes
        for call in program.calls:
            now = tracing.now = Traced()
            now.args = [_fill(a, values) for a in call.args]
            now.kwargs = {k: _fill(v, values) for k, v in call.kwargs.items()}
            now.result = getattr(call.device.ops, call.name)(*now.args, **now.kwargs)
            _store(call.out, now.result, values)
            replay = optim.REPLAYS.get(call.name)
            if replay is not None and not call.kwargs and now.other is None:
                _replayable(now, replay)  # an optimizer update: numbers set at each replay
            else:
                _arrays_only(call, values, now)
            traced.append(now)
    if not any(t.launches and t.other is None for t in traced):
        return None
    return values, traced


def _arrays_only(call, values, now) -> None:
    """Mark ``now`` as other work where the call takes or makes anything but arrays."""
    for i in slots_in(call.args) + slots_in(call.kwargs):
        if type(values[i]) is not CLArray:
            now.other = f"a number that may change between replays (%{i})"
    for i in slots_in(call.out):
        if type(values[i]) is not CLArray:
            now.other = "a result that is not an array"


def _replayable(now, replay) -> None:
    """An optimizer hook of :data:`fastnn_opencl.optim.REPLAYS`: its launches join the list
    with their scalar arguments recomputed from the call's numbers at each replay."""
    found = replay(now.args)
    if found is None:
        now.other = "an optimizer update that sets up its state"
        return
    name, start, scalars = found
    if len(scalars(*now.args)) != len(now.launches) or any(
            launch[0].function_name != name for launch in now.launches):
        now.other = "an optimizer update whose launches differ from its replay's"
        return
    now.scalars = (start, scalars)
