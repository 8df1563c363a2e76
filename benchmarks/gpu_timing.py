"""Timing helpers of the GPU benchmarks (gpu_bench.py and its sections): a time budget,
device synchronisation, PyTorch with TF32 off, medians of alternating runs, and the split
of a step's time into host and device time."""

from __future__ import annotations

import statistics
import time


class Budget:
    def __init__(self, seconds):
        self.end = time.perf_counter() + seconds

    def left(self):
        return self.end - time.perf_counter()


def make_sync(device):
    if device.startswith("cuda"):
        import cupy

        return lambda: cupy.cuda.get_current_stream().synchronize()
    return lambda: None


def torch_env(device):
    try:
        import torch
    except ImportError as exc:
        return None, f"torch not importable: {exc}"
    if device.startswith("cuda") and not torch.cuda.is_available():
        return None, "torch has no CUDA device"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch, ""


def timed(step, sync, iters, repeats):
    """Median seconds per call of ``step`` (after one warm-up round)."""
    for _ in range(max(2, iters // 5)):
        step()
    sync()
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(iters):
            step()
        sync()
        runs.append((time.perf_counter() - start) / iters)
    return statistics.median(runs)


def timed_pair(step_a, sync_a, step_b, sync_b, iters, repeats):
    """Median seconds per call of two steps measured in alternation (a, b, a, b, ...),
    so that a machine that speeds up or slows down during the run affects both."""
    for step, sync in ((step_a, sync_a), (step_b, sync_b)):
        for _ in range(max(2, iters // 5)):
            step()
        sync()
    runs_a, runs_b = [], []
    for _ in range(repeats):
        for step, sync, runs in ((step_a, sync_a, runs_a), (step_b, sync_b, runs_b)):
            start = time.perf_counter()
            for _ in range(iters):
                step()
            sync()
            runs.append((time.perf_counter() - start) / iters)
    return statistics.median(runs_a), statistics.median(runs_b)


def host_device_split(step, n_repeat=20):
    """Mean host and device milliseconds of one step (cupyx.profiler: events on the
    current stream, which torch shares as the legacy default stream)."""
    from cupyx.profiler import benchmark

    res = benchmark(step, n_repeat=n_repeat, n_warmup=3)
    return float(res.cpu_times.mean() * 1e3), float(res.gpu_times.mean() * 1e3)


def profile_step(step, path, n=20):
    """Where the host time of a step goes (cProfile, top functions by own time)."""
    import cProfile
    import io
    import pstats

    step()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(n):
        step()
    profiler.disable()
    buf = io.StringIO()
    stats = pstats.Stats(profiler, stream=buf).sort_stats("tottime")
    stats.print_stats(45)
    stats.sort_stats("cumulative").print_stats(30)
    with open(path, "w") as f:
        f.write(f"# {n} steps\n" + buf.getvalue())
