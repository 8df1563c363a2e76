"""Host time of one opencl launch: raw pyopencl's enqueue of a kernel whose arguments are
already set, against the backend's hooks on 4x4 float32 arrays (issue 22: at most 3 us
above raw) and through the tensors' eager ops (the core's dispatch included), with the enqueue
itself stubbed out (what the backend and the core add to it, out of reach of PoCL's worker
threads, which made the other timings swing by microseconds), and against
one launch of a compiled step's replay (``fnn.compile``: the
launch list of ``compile_program``; issue 23: at most 3 us). Each is timed over many
calls, the queue drained at the end, best of 5:
``python benchmarks/opencl_launch.py [--cpu] [--no-replay]``."""

from __future__ import annotations

import sys
import time

import numpy as np
import pyopencl as cl
from fastnn_opencl import elementwise_plan, fast_launch

import fastnn as fnn
from fastnn.api import fusion
from fastnn.api.registry import get_backend

CHAIN = 64  # launches per compiled step


CLOCK = time.perf_counter  # --cpu: this thread's CPU time (steadier on a shared machine)


def per_call_us(fn, queue, n=20000) -> float:
    for _ in range(500):
        fn()
    queue.finish()
    best = float("inf")
    for _ in range(5):
        start = CLOCK()
        for _ in range(n):
            fn()
        stop = CLOCK()
        queue.finish()
        best = min(best, (stop - start) / n * 1e6)
    return best


def main() -> None:
    global CLOCK
    if "--cpu" in sys.argv:
        CLOCK = time.thread_time
    print("clock:", CLOCK.__name__)
    ops = get_backend("opencl").ops
    a = ops.from_numpy(np.ones((4, 4), np.float32), 0)
    b = ops.from_numpy(np.ones((4, 4), np.float32), 0)
    dev = a.dev
    defines = (("GROUP", 3), ("TO", "float"), ("NDIM", 0), ("T0", "float"), ("MODE0", 0),
               ("T1", "float"), ("MODE1", 0), ("IS_FLOAT", 1),
               ("CHUNK", fast_launch.CHUNK))
    kernel = cl.Kernel(dev.program(elementwise_plan.FILE, defines), "k_add")
    out = dev.empty((4, 4), "float32")
    kernel.set_args(out.data, np.int32(16), elementwise_plan.int8_vector(()), a.data, np.int32(0),
                    b.data, np.int32(0), np.float32(0))
    raw = per_call_us(lambda: cl.enqueue_nd_range_kernel(dev.queue, kernel,
                                                              fast_launch.flat_size(16), None),
                      dev.queue)
    print(f"raw pyopencl enqueue: {raw:.2f} us")
    c = ops.from_numpy(np.ones((4, 4), np.float32), 0)
    x = fnn.tensor(np.ones((4, 4), np.float32), device="opencl")
    y = fnn.tensor(np.ones((4, 4), np.float32), device="opencl")
    cases = (("add(a, b)", lambda: ops.add(a, b)), ("add(a, 2.0)", lambda: ops.add(a, 2.0)),
             ("mul(a, b)", lambda: ops.mul(a, b)), ("exp(a)", lambda: ops.exp(a)),
             ("relu(a)", lambda: ops.relu(a)), ("sum(a)", lambda: ops.sum(a, None, False)),
             ("sum(a, 1)", lambda: ops.sum(a, (1,), False)),
             ("matmul(a, b)", lambda: ops.matmul(a, b)),
             ("chain", lambda: ops.relu(ops.mul(ops.add(a, b), c))),
             ("x + y", lambda: x + y), ("x * y", lambda: x * y),
             ("x * 2.0", lambda: x * 2.0),
             ("x.exp()", lambda: x.exp()), ("x.relu()", lambda: x.relu()),
             ("x.sum()", lambda: x.sum()), ("x.sum(1)", lambda: x.sum(1)),
             ("x @ y", lambda: x @ y))
    for name, fn in cases:
        us = per_call_us(fn, dev.queue)
        print(f"{name:12s} {us:6.2f} us  ({us - raw:+.2f} us above raw)")
    around_enqueue(cases, dev.queue)
    if "--no-replay" in sys.argv:
        return
    print(f"replay, per launch ({CHAIN} adds, mul, relu, matmul on 4x4 a step), against "
          "raw pyopencl enqueueing the same launches:")
    for name, op in (("add", lambda x, y: x + y), ("mul", lambda x, y: x * y),
                     ("relu", lambda x, y: (x - y).relu()), ("matmul", lambda x, y: x @ y)):
        us, launches, same = replay_us(op, dev.queue)
        print(f"  {name:10s} {us:6.2f} us  (raw {same:.2f}: {us - same:+.2f} us above it, "
              f"{launches} launches)")


def around_enqueue(cases, queue) -> None:
    """The host time each case spends besides its enqueues, timed with the enqueue replaced
    by a stub that records the launch and returns: no kernel runs, so PoCL's worker
    threads (which share the 2 cores with this one) cannot disturb it, and what is left
    is exactly the cost above a raw enqueue. Every case must launch through
    ``fast_launch``'s enqueue (checked: a launch it cannot see would be timed for real)."""
    real = fast_launch._enqueue
    launches = [0]

    def stub(queue, kernel, size, local):
        launches[0] += 1

    print("host time besides the enqueue (enqueue stubbed: no kernel runs):")
    bare = per_call_us(lambda: stub(None, None, None, None), queue)
    fast_launch._enqueue = stub
    try:
        for name, fn in cases:
            launches[0] = 0
            fn()
            if not launches[0]:
                print(f"  {name:12s} (launches another way: not measured)")
                continue
            per_call = launches[0]
            us = per_call_us(fn, queue) - per_call * bare
            print(f"  {name:12s} {us / per_call:+6.2f} us a launch ({per_call} a call)")
    finally:
        fast_launch._enqueue = real


def replay_us(op, queue) -> tuple[float, int]:
    """Host time per launch of a compiled step of CHAIN ``op`` calls (fusion off, so each
    call is its own launch)."""
    x = fnn.tensor(np.ones((4, 4), np.float32), device="opencl")
    y = fnn.tensor(np.full((4, 4), 0.5, np.float32), device="opencl")

    def chain(a, b):
        for _ in range(CHAIN):
            a = op(a, b)
        return a

    fusion.ENABLED = False
    try:
        step = fnn.compile(chain)
        for _ in range(3):
            step(x, y)
        runner = step._last.program.runner()
        fast = runner.__self__.fast
        launches = fast.source.count("    E(")
        us = per_call_us(lambda: step(x, y), queue, n=400)
        scope = fast.__wrapped__.__globals__
        enqueue, seen = scope["E"], []
        scope["E"] = lambda *launch: (seen.append(launch), enqueue(*launch))[1]
        try:
            step(x, y)
        finally:
            scope["E"] = enqueue

        def raw_replay():
            for launch in seen:
                enqueue(*launch)
            queue.flush()
        same = per_call_us(raw_replay, queue, n=400)
    finally:
        fusion.ENABLED = True
    return us / launches, launches, same / launches


if __name__ == "__main__":
    main()
