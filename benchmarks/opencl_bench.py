"""OpenCL backend benchmark: matmul GFLOP/s, conv1d and the MLP step against the NumPy backend.

    python benchmarks/opencl_bench.py [--json PATH] [--quick] [--repeat N] [--matmul-only]

Both sides use the same threads: PoCL runs one thread per compute unit, and NumPy's
BLAS is pinned to that many (threadpoolctl) for the matmul rows. The matmul rows take
1024^3, 512^3 and the GEMMs of the model steps (MLP, LSTM, nanoGPT: forward products
with a transposed weight, input gradients, weight gradients with a transposed first
operand, laid out as the backward passes them), each timed as at least CALLS products
and one wait for the queue, as a model step queues its launches (one product and a wait
took 30-60 us more than queued ones on PoCL 3.1, whose worker threads sleep between
commands: a latency of the wait, not of the GEMM); each row's ratio is the median of
interleaved pairs of timings, "best" that of the fastest of each. Each OpenCL timing
starts SETTLE seconds after the NumPy one before it: OpenBLAS's worker threads keep
polling (``sched_yield``) for 2**28 TSC cycles (about 0.1 s) after a product, and in
that time one of them shares a core with one of PoCL's two threads (1024^3 measured
186-204 GFLOP/s without NumPy calls before it, 92-165 straight after one). Reports
medians, and ratios opencl / numpy (GFLOP/s: higher is better for opencl;
step time: lower is better for opencl). OpenCL timings include the launch
cost and end with the queue drained (``loss.item()`` or ``queue.finish()``).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import fastnn as fnn
import fastnn.functional as F

MATMUL_SIZES = [(128, 784, 512), (512, 512, 512), (1024, 1024, 1024)]  # (m, k, n)
MODEL_GEMMS = [  # (m, k, n, layout) as the model steps call them: "nt" = A @ B.T (a
    # linear's forward), "tn" = A.T @ B (its weight gradient), "nn" = plain
    (128, 784, 512, "nt"), (128, 512, 512, "nt"), (128, 512, 10, "nt"),  # MLP forward
    (128, 10, 512, "nn"), (128, 512, 512, "nn"),  # MLP input gradients
    (10, 128, 512, "tn"), (512, 128, 512, "tn"), (512, 128, 784, "tn"),  # weight gradients
    (2048, 16, 256, "nt"), (32, 64, 256, "nn"), (2048, 256, 16, "nn"),  # LSTM
    (256, 2048, 16, "tn"), (256, 2048, 64, "tn"),
    (1024, 64, 192, "nt"), (1024, 64, 256, "nt"), (1024, 256, 64, "nt"),  # nanoGPT
    (1024, 64, 64, "nt"), (1024, 192, 64, "nn"), (192, 1024, 64, "tn"),
    (64, 1024, 256, "tn")]
SETTLE = 0.15  # s: past OpenBLAS's worker threads' polling (2**28 cycles at 2.6 GHz)
CALLS = 5  # products per timing at least, then one wait for the queue
BATCH, LAYERS = 128, (784, 512, 512, 10)
CONV_X, CONV_W = (32, 8, 256), (16, 8, 5)  # padding 2, as in `fastnn bench`


def median_time(fn, sync, repeat=7, number=5):
    fn()
    sync()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        sync()
        times.append((time.perf_counter() - start) / number)
    return float(np.median(times))


def _queue_finish():
    from fastnn_opencl.runtime import state

    state(fnn.get_device().index).queue.finish()


def _operands(rng, m, k, n, layout):
    """NumPy A and B of ``A @ B`` (m x k @ k x n), transposed views as ``layout`` says."""
    a = rng.standard_normal((k, m) if layout[0] == "t" else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if layout[1] == "t" else (k, n)).astype(np.float32)
    return (a.T if layout[0] == "t" else a), (b.T if layout[1] == "t" else b)


def _device_view(x):
    """x as an opencl tensor, a transposed view where x is one (as the backward passes)."""
    import fastnn as fnn

    if x.flags.c_contiguous:
        return fnn.tensor(x, device="opencl")
    return fnn.tensor(np.ascontiguousarray(x.T), device="opencl").T


def matmul_rows(repeat, shapes=None):
    from fastnn_opencl.runtime import state
    from threadpoolctl import threadpool_limits

    threads = state(fnn.get_device().index).compute_units
    rng = np.random.default_rng(0)
    rows = []
    if shapes is None:
        shapes = [s + ("nn",) for s in MATMUL_SIZES] + MODEL_GEMMS
    with threadpool_limits(threads):
        warm = np.ones((512, 512), np.float32)
        start = time.perf_counter()
        while time.perf_counter() - start < 0.5:  # OpenBLAS's first products ran at 5-40
            warm @ warm  # GFLOP/s (its threads starting, the clock ramping up)
    for m, k, n, layout in shapes:
        a_np, b_np = _operands(rng, m, k, n, layout)
        a, b = _device_view(a_np), _device_view(b_np)
        flops = 2.0 * m * n * k
        number = max(CALLS, int(1e8 / flops))
        t_ocl, t_np = [], []
        with threadpool_limits(threads):
            for _ in range(repeat):  # interleaved: a busy machine slows both alike
                time.sleep(SETTLE)
                t_ocl.append(median_time(lambda a=a, b=b: F.matmul(a, b), _queue_finish, 1,
                                         number))
                t_np.append(median_time(lambda a=a_np, b=b_np: a @ b, lambda: None, 1, number))
        ratio = float(np.median(np.array(t_np) / np.array(t_ocl)))
        name = f"{m}x{k} @ {k}x{n}" + ("" if layout == "nn" else f" {layout}")
        rows.append({"shape": name, "blas_threads": threads,
                     "opencl_gflops": flops / np.median(t_ocl) / 1e9,
                     "numpy_gflops": flops / np.median(t_np) / 1e9, "ratio": ratio,
                     "best_ratio": min(t_np) / min(t_ocl)})
    return rows


def mlp_step_fn(device):
    rng = np.random.default_rng(1)
    x = fnn.tensor(rng.standard_normal((BATCH, LAYERS[0])).astype(np.float32), device=device)
    y = fnn.tensor(rng.integers(0, LAYERS[-1], BATCH), device=device)
    params = []
    for fan_in, fan_out in zip(LAYERS[:-1], LAYERS[1:]):
        bound = 1 / np.sqrt(fan_in)
        w = rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32)
        params += [fnn.tensor(w, device=device, requires_grad=True),
                   fnn.zeros((fan_out,), device=device, requires_grad=True)]
    from fastnn.optim import SGD

    opt = SGD(params, lr=0.01)
    holder = {}

    def step():
        h = x
        for i in range(0, len(params) - 2, 2):
            h = F.linear(h, params[i], params[i + 1], "relu")
        loss = F.cross_entropy(F.linear(h, params[-2], params[-1]), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        holder["loss"] = loss

    return step, lambda: holder["loss"].item()


def conv1d_times(repeat):
    """Seconds per conv1d forward and per forward + backward, for opencl and cpu."""
    rng = np.random.default_rng(2)
    x_np = rng.standard_normal(CONV_X).astype(np.float32)
    w_np = (rng.standard_normal(CONV_W) * 0.1).astype(np.float32)
    times = {}
    for device in ("opencl", "cpu"):
        x = fnn.tensor(x_np, device=device, requires_grad=True)
        w = fnn.tensor(w_np, device=device, requires_grad=True)
        holder = {}

        def forward(x=x, w=w, holder=holder):
            holder["out"] = F.conv1d(x, w, padding=2)

        def train(x=x, w=w, holder=holder):
            out = F.conv1d(x, w, padding=2)
            out.sum().backward()
            holder["out"] = w.grad

        def sync(holder=holder):
            holder["out"].sum().item()

        times[device] = (median_time(forward, sync, repeat, 5), median_time(train, sync, repeat, 5))
    return times


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the results to this JSON file")
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--repeat", type=int, help="interleaved pairs per matmul row")
    parser.add_argument("--matmul-only", action="store_true", help="only the matmul rows")
    args = parser.parse_args(argv)
    repeat = 3 if args.quick else 7
    record = next(r for r in fnn.backends() if r.name == "opencl")
    if not record.available:
        raise SystemExit(f"opencl backend unavailable: {record.reason}")
    print(f"opencl device: {record.devices[0]}")
    results = {"device": record.devices[0], "matmul": matmul_rows(args.repeat or 3 * repeat)}
    print(f"{'matmul float32':27} {'opencl GFLOP/s':>15} {'numpy GFLOP/s':>14} {'ratio':>7}"
          f" {'best':>6}  (OpenBLAS on {results['matmul'][0]['blas_threads']} threads, as "
          "PoCL; ratio: median of interleaved pairs, best: of the fastest runs)")
    for row in results["matmul"]:
        print(f"{row['shape']:27} {row['opencl_gflops']:15.1f} {row['numpy_gflops']:14.1f} "
              f"{row['ratio']:7.2f} {row['best_ratio']:6.2f}")
    if args.matmul_only:
        _write(args.json, results)
        return results
    times = {}
    for device in ("opencl", "cpu"):
        step, sync = mlp_step_fn(device)
        times[device] = median_time(step, sync, repeat, 5)
    results["mlp_step_ms"] = {k: v * 1e3 for k, v in times.items()}
    results["mlp_step_ratio"] = times["opencl"] / times["cpu"]
    print(f"MLP step (batch {BATCH}, {'-'.join(map(str, LAYERS))}, SGD): "
          f"opencl {times['opencl'] * 1e3:.2f} ms, numpy backend {times['cpu'] * 1e3:.2f} ms, "
          f"opencl / numpy = {results['mlp_step_ratio']:.2f}x the time")
    conv = conv1d_times(repeat)
    results["conv1d_ms"] = {k: [t * 1e3 for t in v] for k, v in conv.items()}
    for i, what in enumerate(("forward", "forward + backward")):
        ratio = conv["opencl"][i] / conv["cpu"][i]
        results[f"conv1d_{'fwd' if i == 0 else 'train'}_ratio"] = ratio
        print(f"conv1d {what} {CONV_X} * {CONV_W}: opencl {conv['opencl'][i] * 1e3:.2f} ms, "
              f"numpy backend {conv['cpu'][i] * 1e3:.2f} ms, opencl / numpy = {ratio:.2f}x "
              "the time")
    _write(args.json, results)
    return results


def _write(path, results):
    if path:
        with open(path, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
