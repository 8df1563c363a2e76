"""What thread safety costs the OpenCL backend: three ways to hand out kernel objects.

    OPENBLAS_NUM_THREADS=1 python benchmarks/opencl_kernel_sharing.py [--rounds N]

- ``shared``: one pyopencl.Kernel per (program, name) for every thread (the
  code before the fix; not thread-safe: set_args and the enqueue are two steps);
- ``lock``: the shared kernel, with set-args-and-enqueue behind one lock;
- ``per-thread``: a Kernel object per thread from the shared program (what
  ``DeviceState.kernel`` does now).

Each case reports the median host time of the launching thread
(``time.thread_time``: what the variants change, and far steadier than wall
time on a busy machine) and the median wall time, queue drained, with the
variants interleaved in random order each round. Ratios are variant / shared.
"""

from __future__ import annotations

import argparse
import random
import statistics
import threading
import time

import numpy as np

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn, optim


def variants(runtime):
    per_thread = runtime.DeviceState.kernel
    shared: dict = {}
    locked: dict = {}
    lock = threading.Lock()

    def shared_kernel(self, filename, name, defines, arg_dtypes):
        key = (filename, name, defines)
        found = shared.get(key)
        if found is None:
            found = runtime.cl().Kernel(self.program(filename, defines), name)
            found.set_scalar_arg_dtypes(arg_dtypes)
            shared[key] = found
        return found

    class Locked:
        __slots__ = ("kernel",)

        def __init__(self, kernel):
            self.kernel = kernel

        def __call__(self, *args, **kwargs):
            with lock:
                return self.kernel(*args, **kwargs)

    def locked_kernel(self, filename, name, defines, arg_dtypes):
        key = (filename, name, defines)
        found = locked.get(key)
        if found is None:
            found = locked[key] = Locked(shared_kernel(self, filename, name, defines,
                                                       arg_dtypes))
        return found

    return {"shared": shared_kernel, "lock": locked_kernel, "per-thread": per_thread}


def cases(runtime):
    dev = runtime.state(0)
    out = dev.empty((64,), "float32")

    def launches(n=300):
        for _ in range(n):
            kernel = dev.kernel("misc.cl", "k_fill", (("T", "float"),),
                                [None, np.int32, np.float32])
            kernel(dev.queue, (64,), None, out.data, 64, 1.0)

    def adds(n=100):
        x, one = fnn.zeros((64,), device="opencl"), fnn.ones((64,), device="opencl")
        for _ in range(n):
            x = x + one

    fnn.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 512), nn.Activation("relu"), nn.Linear(512, 512),
                          nn.Activation("relu"), nn.Linear(512, 10)).to("opencl")
    opt = optim.SGD(model.parameters(), lr=0.01)
    rng = np.random.default_rng(1)
    xb = fnn.tensor(rng.standard_normal((128, 784)).astype(np.float32), device="opencl")
    yb = fnn.tensor(rng.integers(0, 10, 128), device="opencl")

    def mlp_step():
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()

    return dev, {"300 bare launches": launches, "100 adds of 64 floats": adds,
                 "MLP step 784-512-512-10, batch 128": mlp_step}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=25)
    args = parser.parse_args(argv)
    from fastnn_opencl import runtime

    impls = variants(runtime)
    dev, benches = cases(runtime)
    host = {(b, v): [] for b in benches for v in impls}
    wall = {(b, v): [] for b in benches for v in impls}
    for rnd in range(args.rounds + 1):
        for b, fn in benches.items():
            order = list(impls.items())
            random.shuffle(order)
            for v, impl in order:
                runtime.DeviceState.kernel = impl
                dev.queue.finish()
                w0, t0 = time.perf_counter(), time.thread_time()
                fn()
                t1 = time.thread_time()
                dev.queue.finish()
                w1 = time.perf_counter()
                if rnd:  # round 0 compiles and warms up
                    host[(b, v)].append(t1 - t0)
                    wall[(b, v)].append(w1 - w0)
    runtime.DeviceState.kernel = impls["per-thread"]
    for b in benches:
        for label, table in (("host", host), ("wall", wall)):
            base = statistics.median(table[(b, "shared")])
            line = f"{b}, {label} time: shared {base * 1e3:.3f} ms"
            for v in ("lock", "per-thread"):
                m = statistics.median(table[(b, v)])
                line += f"; {v} {m * 1e3:.3f} ms (x{m / base:.3f})"
            print(line)


if __name__ == "__main__":
    main()
