"""cpu's ``compile_program``: the core's replay, with NumPy writing into kept buffers.

A recorded program's elementwise ufunc calls and matmuls (:data:`DIRECT`) run as the
NumPy function itself with ``out=`` a buffer this program keeps across replays, instead
of the hook allocating a new array each time. The buffers are planned from liveness: a
buffer is busy from the call that fills it to the last call that reads its value or a
view of it, and then serves a later call of no more bytes. A call whose value (or a view
of it) leaves the step (an output: a parameter, a gradient, optimizer state, the result)
gets no buffer: it allocates as before, so nothing the caller keeps is overwritten by the
next replay. Values are those of the hooks bit for bit: the same ufunc and operands, the
same C-contiguous layout as recorded (other layouts are not planned).

A call runs through the device's ops table as the interpreter would wherever that
table is wrapped (shadow execution, a recording, a timing wrapper), and a replay that
starts while another replay of the same program is under way (another thread) runs the
plain interpreter. ``FASTNN_CPU_BUFFERS=0`` turns the buffers off (to compare);
``FASTNN_CPU_BUFFER_MIN`` sets :data:`MIN_BYTES` (0: every result, for tests).
"""

from __future__ import annotations

import os
import threading

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn.api.program import Seq, Slot, interpreter, last_uses, slots_in
from fastnn_cpu import mkl_gemm

ENABLED = os.environ.get("FASTNN_CPU_BUFFERS", "1") != "0"
"""Whether compiled programs on cpu write into kept buffers."""

DIRECT = {"add": (np.add, ()), "sub": (np.subtract, ()), "mul": (np.multiply, ()),
          "maximum": (np.maximum, ()), "minimum": (np.minimum, ()), "neg": (np.negative, ()),
          "exp": (np.exp, ()), "abs": (np.abs, ()), "tanh": (np.tanh, ()),
          "greater": (np.greater, ()), "less": (np.less, ()), "equal": (np.equal, ()),
          "matmul": (mkl_gemm.matmul, ())}
"""Hook -> (the NumPy function it calls, trailing arguments): the hook's value is
``fn(*args, *extra)`` (matmul's: :func:`fastnn_cpu.mkl_gemm.matmul`, NumPy's or MKL's);
relu's zero is added per dtype (:func:`_direct`)."""

def _min_bytes() -> int:
    text = os.environ.get("FASTNN_CPU_BUFFER_MIN", "")
    try:
        return int(text) if text else 128 * 1024
    except ValueError:
        raise ValueError(f"FASTNN_CPU_BUFFER_MIN must be a number of bytes, got {text!r}; "
                         "unset it for the default (131072)") from None


MIN_BYTES = _min_bytes()
"""Smaller results allocate as before. Measured (benchmarks/bench_models.py, cpu time):
a buffer pays where the allocator hands memory back to the system and takes it again,
page faults included (glibc does that above its mmap threshold, 128 KiB to start with;
a Transformer step took ~7,000 faults without buffers, ~2,000 with); below, malloc
reuses hot memory as fast as a buffer would, and a buffer would only hold memory."""


DONATE_MIN = 16 * 1024
"""Smaller elementwise results never reuse an operand's memory (the check that the
operand is free costs about what malloc does for them)."""


@hookimpl
def compile_program(program):
    if not ENABLED:
        return interpreter(program)
    special = plan(program)
    if not special:
        return interpreter(program)
    fast = interpreter(program, special)
    busy = threading.Lock()
    owners = {id(out.base) for _, _, out in special.values()
              if out is not None and type(out) is not Slot}
    plain = []  # the interpreter without buffers, made when a replay first needs it

    def run(env):
        if not busy.acquire(blocking=False):  # a concurrent replay: no shared buffers
            if not plain:
                plain.append(interpreter(program))
            return plain[0](env)
        try:
            outs = fast(env)
        finally:
            busy.release()
        for k, value in enumerate(outs):
            # NOTE: the plan keeps every value that leaves the step out of the buffers;
            # this makes sure of it (a hook that returned a view where the recording saw
            # a new array), at the cost of a copy that never happens otherwise
            if id(getattr(value, "base", None)) in owners:
                outs[k] = value.copy()
        return outs
    # for tests and benchmarks: {call index: (fn, extra, out)}, kept buffers and operands
    run.buffers = {n: v for n, v in special.items() if v[2] is not None and
                   type(v[2]) is not Slot}
    run.donations = {n: v for n, v in special.items() if type(v[2]) is Slot}
    return run


def plan(program) -> dict:
    """``{call index: (fn, extra, out buffer)}`` for the calls that write into kept
    buffers (see the module)."""
    import fastnn_cpu

    calls, outputs = program.calls, set(program.outputs)
    layouts = getattr(program, "layouts", None) or {}
    candidates, small = {}, {}
    for n, call in enumerate(calls):
        found = _direct(call, program, layouts, fastnn_cpu)
        if found is not None:
            (candidates if found[4] >= MIN_BYTES else small)[n] = found[:4]
    if not candidates and not small:
        return _views_kept(calls, program, _readers(calls), outputs, {}, fastnn_cpu)
    readers = _readers(calls)
    drops = last_uses(calls, outputs)
    last = {i: n for n, dropped in enumerate(drops) for i in dropped}
    special, free = {}, []  # free: [(end, nbytes, flat buffer)]
    busy: list = []  # (end, nbytes, flat)
    for n, call in enumerate(calls):
        still = []
        for item in busy:
            (free if item[0] < n else still).append(item)
        busy = still
        found = candidates.get(n)
        if found is None:
            continue
        fn, extra, dtype, shape = found
        end = _busy_until(call.out.i, calls, readers, last, candidates, outputs,
                          getattr(program, "aliases", None))
        if end is None:  # the value, or a view of it, leaves the step
            continue
        need = int(np.prod(shape)) * dtype.itemsize
        fit = [k for k, f in enumerate(free) if need <= f[1] <= 2 * need]
        if fit:
            flat = free.pop(fit[-1])[2]  # the latest freed: the likeliest still in cache
        else:
            flat = np.empty(need, np.uint8)
        busy.append((end, flat.nbytes, flat))
        special[n] = (fn, extra, flat[:need].view(dtype).reshape(shape))
    special = _within_peak(special, calls, readers, outputs, program)
    special.update(_donations(calls, program, layouts, {**small, **candidates}, special,
                              drops))
    special.update(_views_kept(calls, program, readers, outputs, special, fastnn_cpu))
    return special


def _readers(calls) -> dict:
    """slot -> the calls that read it, in order."""
    readers: dict[int, list[int]] = {}
    for n, call in enumerate(calls):
        for i in slots_in(call.args) + slots_in(call.kwargs):
            readers.setdefault(i, []).append(n)
    return readers


STRIDED = {"gru_layer_backward": (6,), "lstm_layer_backward": (8,)}
"""Hook -> the arguments it only reads, element by element, whatever their layout (the
recurrent backward passes add ``grad_out[t]`` per step)."""


def _same(x):
    return x


def _views_kept(calls, program, readers, outputs, special, fastnn_cpu) -> dict:
    """``{call index: (identity, (), None)}`` for the ``contiguous`` calls whose copy only
    a :data:`STRIDED` argument reads: it gets the view itself (a recurrent step's
    gradient, a broadcast of (N, 1, H), then was copied to (T, N, H) for nothing). Not
    where the view's memory is, or may be, a kept buffer's (reused while it is read)."""
    from fastnn_cpu import recurrent, recurrent_gru

    ours = {"gru_layer_backward": recurrent_gru.gru_layer_backward,
            "lstm_layer_backward": recurrent.lstm_layer_backward}  # STRIDED's hooks
    found = {}
    aliases = getattr(program, "aliases", None)
    if aliases is None:
        return found
    buffered = {calls[n].out.i for n, v in special.items()
                if v[2] is not None and type(v[2]) is not Slot}
    for n, call in enumerate(calls):
        if call.name != "contiguous" or type(call.out) is not Slot or call.kwargs or \
                len(call.args) != 1 or type(call.args[0]) is not Slot or \
                call.out.i in outputs or \
                getattr(call.device.ops, "contiguous", None) is not fastnn_cpu.contiguous:
            continue
        users = readers.get(call.out.i, [])
        if not users or not all(
                calls[u].name in STRIDED and call.device.ops is calls[u].device.ops and
                getattr(call.device.ops, calls[u].name) is ours[calls[u].name]
                and all(k in STRIDED[calls[u].name] for k, a in enumerate(calls[u].args)
                        if type(a) is Slot and a.i == call.out.i) and
                not any(type(v) is Slot and v.i == call.out.i
                        for v in calls[u].kwargs.values())
                for u in users):
            continue
        seen, todo, safe = set(), [call.args[0].i], True
        while todo and safe:  # the view's memory: the values it views, transitively
            i = todo.pop()
            if i in seen:
                continue
            seen.add(i)
            safe = i not in buffered
            todo.extend(aliases.get(i, ()))
        if safe:
            found[n] = (_same, (), None)
    return found


def _donations(calls, program, layouts, candidates, special, drops) -> dict:
    """``{call index: (fn, extra, Slot)}`` for the elementwise calls that may write their
    result into an operand whose last use they are: of the result's dtype, shape and
    C-contiguous layout, made inside the step (never an input). Whether the array is
    free is decided at each replay (:func:`fastnn.api.program.donated`: nothing else
    holds it), so a hook that returned a view or a cached array is never written into.
    A step then holds one array fewer at that call than eager, whose tape keeps both."""
    found = {}
    inputs, outputs = set(program.inputs), set(program.outputs)
    for n, (fn, extra, dtype, shape) in candidates.items():
        if n in special or fn is mkl_gemm.matmul:
            continue
        want = program.describe.get(calls[n].out.i)
        strides = _c_strides(shape, dtype.itemsize)
        for a in calls[n].args:
            if type(a) is Slot and a.i in drops[n] and a.i not in inputs and \
                    a.i not in outputs and program.describe.get(a.i) == want and \
                    layouts.get(a.i) == strides:
                found[n] = (fn, extra, Slot(a.i))
                break
    return found


def _within_peak(special, calls, readers, outputs, program) -> dict:
    """``special`` less the buffers that would raise the step's peak memory: the kept
    buffers all exist at every moment, so their total and what else is live at a moment
    (estimated from the recorded shapes, views counting nothing) stay within the most the
    calls hold at once without buffers; a buffer serving the fewest calls goes first."""
    aliases = getattr(program, "aliases", None) or {}
    steps = len(calls)
    live = np.zeros(steps + 1, np.int64)  # bytes live after each call, without buffers
    pooled = {}  # id(flat) -> [its bytes, [(start, end, bytes) of the values it holds]]
    for n, call in enumerate(calls):
        for j in slots_in(call.out):
            size = 0 if aliases.get(j) else _nbytes(program.describe.get(j))
            end = steps if j in outputs else max(readers.get(j, [n]))
            live[n:end + 1] += size
            if n in special:
                flat = special[n][2].base
                entry = pooled.setdefault(id(flat), [flat.nbytes, []])
                entry[1].append((n, end, size))
    peak = int(live.max()) if steps else 0
    rest = live.copy()  # bytes live outside buffers
    for _, values in pooled.values():
        for start, end, size in values:
            rest[start:end + 1] -= size
    kept = sorted(pooled.items(), key=lambda kv: (len(kv[1][1]), kv[1][0]))
    total = sum(v[0] for _, v in kept)
    while kept and total + int(rest.max()) > peak:
        _, (nbytes, values) = kept.pop(0)
        total -= nbytes
        for start, end, size in values:
            rest[start:end + 1] += size
    ids = {k for k, _ in kept}
    return {n: v for n, v in special.items() if id(v[2].base) in ids}



def _nbytes(text) -> int:
    if text is None:
        return 0
    dtype_name, _, dims = text.partition("[")
    count = 1
    for d in dims.rstrip("]").split(","):
        if d.strip():
            count *= int(d)
    return count * np.dtype(dtype_name).itemsize


def _direct(call, program, layouts, fastnn_cpu):
    """(fn, extra, dtype, shape, bytes) when ``call`` may write into a buffer or an
    operand, else None."""
    name = call.name
    if name == "relu":
        fn, extra = _relu, None
    elif name in DIRECT:
        fn, extra = DIRECT[name]
    else:
        return None
    hook = getattr(fastnn_cpu, name, None)
    if hook is None or getattr(call.device.ops, name, None) is not hook or call.kwargs or \
            type(call.out) is not Slot:
        return None  # a wrapped table (shadow, timing) sees every call
    if any(type(a) is Seq or not (type(a) is Slot or type(a) in (int, float))
           for a in call.args):
        return None
    text = program.describe.get(call.out.i)
    strides = layouts.get(call.out.i)
    if text is None or strides is None:
        return None
    dtype_name, _, dims = text.partition("[")
    if dtype_name == "bfloat16":  # computed in float32 by the hook (fastnn_cpu.bfloat16)
        return None
    shape = tuple(int(d) for d in dims.rstrip("]").split(",") if d.strip())
    dtype = np.dtype(dtype_name)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    if not shape or nbytes < min(DONATE_MIN, MIN_BYTES) or \
            strides != _c_strides(shape, dtype.itemsize):
        return None
    if extra is None:  # relu(x) = np.maximum(a zero of x's dtype, x), as the hook
        extra = (dtype.type(0),)
    return fn, extra, dtype, shape, nbytes


def _relu(x, zero, out=None):
    """The relu hook's maximum, zero first (relu(-0.0) = -0.0), into ``out``."""
    return np.maximum(zero, x, out=out)


def _c_strides(shape, itemsize) -> tuple:
    out, step = [], itemsize
    for d in reversed(shape):
        out.append(step)
        step *= d
    return tuple(reversed(out))


def _busy_until(slot, calls, readers, last, candidates, outputs, aliases):
    """The last call that reads ``slot``'s value or a view of it (a call whose result
    shared memory with an argument when recorded, ``aliases``; every call but a ufunc
    when that is unknown); None when one of them is an output."""
    end, todo, seen = -1, [slot], {slot}
    while todo:
        i = todo.pop()
        if i in outputs:
            return None
        end = max(end, last.get(i, -1))
        for n in readers.get(i, ()):
            end = max(end, n)
            if n in candidates:
                continue  # a fresh array, never a view of its operands
            for j in slots_in(calls[n].out):
                if aliases is not None and i not in aliases.get(j, ()):
                    continue
                if j not in seen:
                    seen.add(j)
                    todo.append(j)
    return end
