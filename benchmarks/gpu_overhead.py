"""Host cost of one call, per primitive, on the CUDA backend: fastnn vs cupy vs PyTorch.

    python benchmarks/gpu_overhead.py [--out DIR]

Small operands (a few microseconds of GPU work), so that issuing the call, not
running it, is what a loop of calls measures: the time per call of ``--calls``
calls back to back, synchronised once at the end, best of ``--repeats``. On a
GPU most training steps of small and medium models are bound by this cost, so
it tells where a step's time goes:

- ``fastnn``: the public op on Tensors (argument checks, dtype/device
  alignment, the tape node when grad is on);
- ``ops``: the backend's hook called directly (the backend's own cost);
- ``cupy``: the cupy call the hook makes; ``torch``: PyTorch eager's equivalent.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

import fastnn as fnn
from fastnn import functional as F


def per_call(fn, sync, calls, repeats):
    for _ in range(5):
        fn()
    sync()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def reads(cp, rng, repeats):
    """Shadow mode's read of a step's arrays: ``to_numpy_many`` (async copies into a
    page-locked buffer, one wait) against one non-blocking ``cupy.asnumpy`` each into
    pageable memory (each waits for its copy), in microseconds a read."""
    from fastnn_cuda import transfer

    mlp = [(128, 784), (512, 784), (512,), (128, 512), (512, 512), (10, 512), (10,),
           (128, 10)] * 6  # the 784-512-512-10 MLP's arrays, about a step's worth
    attention = [(10, 64, 32)] * 300  # a small transformer's many small arrays
    rows = []
    for name, shapes in (("MLP step", mlp), ("transformer step", attention)):
        arrays = [cp.asarray(rng.standard_normal(s, dtype=np.float32)) for s in shapes]
        arrays = [a.T if i % 3 == 2 else a for i, a in enumerate(arrays)]  # some views
        stream = cp.cuda.get_current_stream()

        def each(arrays=arrays, stream=stream):
            hosts = [cp.asnumpy(a, stream=stream, blocking=False) for a in arrays]
            stream.synchronize()
            return hosts

        same = all(np.array_equal(a, b) for a, b in zip(each(), transfer.to_numpy_many(arrays)))
        row = {"op": f"read {len(arrays)} arrays ({name}, "
                     f"{sum(a.nbytes for a in arrays) / 2**20:.1f} MiB)", "agree": same}
        for label, fn in (("to_numpy_many", lambda a=arrays: transfer.to_numpy_many(a)),
                          ("asnumpy_each", each)):
            row[f"{label}_us"] = round(per_call(fn, stream.synchronize, 3, repeats), 1)
        rows.append(row)
        print(row, flush=True)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=None)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    import cupy as cp
    from fastnn_cuda import gemm

    sync = cp.cuda.get_current_stream().synchronize
    dev = fnn.Device(args.device) if hasattr(fnn, "Device") else args.device
    rng = np.random.default_rng(0)
    host = rng.standard_normal((256, 512)).astype(np.float32)
    hw = rng.standard_normal((512, 512)).astype(np.float32)
    hb = rng.standard_normal(512).astype(np.float32)
    a = fnn.tensor(host, device=dev)
    w = fnn.tensor(hw, device=dev)
    b = fnn.tensor(hb, device=dev)
    ag = fnn.tensor(host, device=dev, requires_grad=True)
    ops = a._device.ops
    cond = a > 0.0
    ca, cw, cb = a._data, w._data, b._data
    try:
        import torch

        torch.backends.cuda.matmul.allow_tf32 = False
        ta, tw, tb = (torch.from_numpy(v).cuda() for v in (host, hw, hb))
        tag = ta.clone().requires_grad_(True)
        tcond = ta > 0
        tsync = torch.cuda.synchronize
    except Exception:  # no torch, or torch without CUDA
        torch = None

    def zero():
        return 0.0

    cases = {
        # name: (fastnn, ops, cupy, torch)
        "add": (lambda: a + a, lambda: ops.add(ca, ca), lambda: cp.add(ca, ca),
                lambda: ta + ta),
        "mul scalar": (lambda: a * 0.5, lambda: ops.mul(ca, 0.5), lambda: cp.multiply(ca, 0.5),
                       lambda: ta * 0.5),
        "greater 0": (lambda: a > 0.0, lambda: ops.greater(ca, 0.0),
                      lambda: cp.greater(ca, 0.0), lambda: ta > 0.0),
        "where": (lambda: F.where(cond, a, 0.0), lambda: ops.where(cond._data, ca, 0.0),
                  lambda: cp.where(cond._data, ca, 0.0), lambda: torch.where(tcond, ta, 0.0)),
        "relu": (lambda: F.relu(a), lambda: ops.relu(ca), lambda: cp.maximum(ca, 0.0),
                 lambda: torch.relu(ta)),
        "sum axis 0": (lambda: a.sum(axis=0), lambda: ops.sum(ca, (0,), False),
                       lambda: cp.sum(ca, axis=0), lambda: ta.sum(dim=0)),
        "mean all": (lambda: a.mean(), lambda: ops.mean(ca, (0, 1), False),
                     lambda: cp.mean(ca), lambda: ta.mean()),
        "matmul 256x512x512": (lambda: F.matmul(a, w), lambda: ops.matmul(ca, cw),
                               lambda: cp.matmul(ca, cw), lambda: ta @ tw),
        "bias_act relu": (lambda: F.bias_act(a, b, "relu"),
                          lambda: ops.bias_act(ca, cb, "relu", 0.0),
                          lambda: cp.maximum(ca + cb, 0.0),
                          lambda: torch.relu(ta + tb)),
        "full": (lambda: fnn.zeros((256, 512), device=dev),
                 lambda: ops.full((256, 512), 0.0, "float32", dev.index),
                 lambda: cp.zeros((256, 512), cp.float32),
                 lambda: torch.zeros((256, 512), device="cuda")),
        "add (grad on)": (lambda: ag + ag, zero, zero, lambda: tag + tag),
    }
    # other ways to issue the same GEMM (cupy column): which costs least host time
    wt = cw.T
    cases["matmul via cupy.dot"] = (zero, zero, lambda: cp.dot(ca, cw), None)
    cases["matmul x @ W.T via cupy.matmul"] = (zero, zero, lambda: cp.matmul(ca, wt), None)
    cases["matmul x @ W.T via cupy.dot"] = (zero, zero, lambda: cp.dot(ca, wt), None)
    cases["matmul via fastnn_cuda.gemm (direct cuBLAS)"] = (
        zero, zero, lambda: gemm.matmul2d(cp, ca, cw), None)
    cases["matmul x @ W.T via fastnn_cuda.gemm"] = (
        zero, zero, lambda: gemm.matmul2d(cp, ca, wt), None)
    same = np.allclose(cp.asnumpy(gemm.matmul2d(cp, ca, wt)), cp.asnumpy(cp.matmul(ca, wt)),
                       rtol=1e-4, atol=1e-4)
    print(f"direct cuBLAS path agrees with cupy.matmul: {same}", flush=True)
    rows = []
    for name, (f_fnn, f_ops, f_cp, f_torch) in cases.items():
        row = {"op": name}
        for label, fn, s in (("fastnn", f_fnn, sync), ("ops", f_ops, sync), ("cupy", f_cp, sync),
                             ("torch", f_torch, tsync if torch else None)):
            if s is None or fn is zero or fn is None:
                continue
            try:
                row[f"{label}_us"] = round(per_call(fn, s, args.calls, args.repeats), 2)
            except Exception as exc:
                row[f"{label}_us"] = f"{type(exc).__name__}: {exc}"[:80]
        rows.append(row)
        print(row, flush=True)
    rows += reads(cp, rng, args.repeats)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "gpu_overhead.json"), "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
