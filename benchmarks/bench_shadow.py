"""What shadow mode costs: a training step on a backend, on the reference, and shadowed.

Shadow mode (``fnn.shadow``) runs each hook call of a backend again on a reference
backend and compares; its budget is the two backends' own time plus 50%. This times a
training step (tape, Adam) of each model three ways in alternating rounds, keeping each
one's fastest, so all three see the same machine (and, steadier where the machine is
shared, the median over the rounds of each round's own ratio): an MLP at two sizes
(``small`` is ``fastnn train``'s on digits) and ``fastnn train``'s other models on
their data sets' shapes (``--models``):
``python benchmarks/bench_shadow.py [--backends opencl,clone]`` (one BLAS thread
unless ``OPENBLAS_NUM_THREADS`` says otherwise: NumPy's 2 threads on these tiny
products made the reference itself 15x slower).
``clone`` is the NumPy backend installed again under another name (a host backend
shadowed by cpu: no transfers, only the shadowing's own work). On a machine with an
NVIDIA GPU, ``benchmarks/gpu_check.sh`` runs ``--backends cuda``.

``--floor`` times a fourth way, a measurement aid and not a mode of shadowing: the
shadowed step with the checks themselves (the reference's calls and the comparisons)
replaced by nothing, so only the reads of the device's arrays and shadowing's per-call
bookkeeping are left: what checking may cost is the budget minus that.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before NumPy's import: one BLAS thread, as documented

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import fastnn as fnn  # noqa: E402
import fastnn.functional as F  # noqa: E402
from fastnn import nn  # noqa: E402
from fastnn.api import device, registry  # noqa: E402
from fastnn.shadowing.batch import Batching  # noqa: E402
from fastnn.shadowing.check import Checking  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from blas_info import describe as describe_blas  # noqa: E402

SIZES = {"small": (64, 128, 32), "large": (784, 512, 128)}  # features, width, batch
# ``fastnn train``'s other models on their data sets' shapes and batch sizes (the MLP on
# digits is ``small``): (input shape, classes, batch), random inputs of those shapes
TRAIN = {"conv1d": ((1, 275), 4, 10), "gru": ((1, 275), 4, 10), "lstm": ((1, 275), 4, 10),
         "transformer": ((1, 275), 4, 10), "cnn": ((64,), 10, 32)}
MODELS = tuple(SIZES) + tuple(TRAIN)


CLONE = "shadow_bench_clone"
_CLONE_SOURCE = """
import fastnn_cpu
from fastnn.api.registry import hook_namespace

globals().update({k: v for k, v in vars(hook_namespace(fastnn_cpu)).items()
                  if hasattr(v, "fastnn_impl")})
"""


def install_clone() -> str:
    """Install the NumPy backend again as ``shadow_bench_clone`` (a module and a
    .dist-info in a temporary folder put on sys.path); returns its name."""
    root = Path(tempfile.mkdtemp(prefix="fastnn-bench-shadow-"))
    (root / "shadow_bench_clone_mod.py").write_text(_CLONE_SOURCE)
    info = root / "fastnn_backend_shadow_bench_clone-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fastnn-backend-shadow-bench-"
                                   "clone\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[fastnn.backends]\n{CLONE} = "
                                           f"shadow_bench_clone_mod\n")
    sys.path.insert(0, str(root))
    registry.refresh()
    device.reset_default()
    return CLONE


def make_step(device: str, features: int, width: int, batch: int):
    """A closure running one training step on ``device``; ends with a sync (loss.item())."""
    fnn.manual_seed(0)
    rng = np.random.default_rng(0)
    with fnn.use(device):
        model = nn.Sequential(nn.Linear(features, width), nn.Activation("relu"),
                              nn.Linear(width, width), nn.Activation("relu"),
                              nn.Linear(width, 10))
        opt = fnn.optim.Adam(model.parameters(), lr=1e-3)
        x = fnn.tensor(rng.normal(size=(batch, features)).astype(np.float32))
        y = fnn.tensor(rng.integers(0, 10, batch))

    def step():
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    return step


def make_train_step(device: str, kind: str):
    """A closure running one step of ``fastnn train --model kind`` (Adam, the tape) on
    ``device``, on random inputs of its data set's shape; ends with a sync (the loss)."""
    from fastnn.cli.train import build_model, make_optimizer, tape_step

    shape, classes, batch = TRAIN[kind]
    fnn.manual_seed(0)
    rng = np.random.default_rng(0)
    with fnn.use(device):
        model = build_model(kind, shape, classes)
        opt = make_optimizer("adam", model.parameters(), 1e-3)
        x = fnn.tensor(rng.normal(size=(batch, *shape)).astype(np.float32))
        y = fnn.tensor(rng.integers(0, classes, batch))

    def step():
        return tape_step(model, opt, x, y)[1].item()

    return step


def maker(model: str):
    """``device -> step`` for ``model``: an MLP size of SIZES or a model of TRAIN."""
    if model in SIZES:
        return lambda device: make_step(device, *SIZES[model])
    if model in TRAIN:
        return lambda device: make_train_step(device, model)
    raise ValueError(f"bench_shadow: unknown model {model!r}; known: {', '.join(MODELS)}")


def _time(step, steps: int, session=None) -> tuple:
    """(wall, CPU) seconds per step; CPU time counts every thread of the process (PoCL's
    workers too) and is steadier than wall time on a machine shared with other work.
    ``session``: a shadow session whose checks still waiting are run inside the timing
    (a device's checks lag behind its calls: the last step's would run untimed, at the
    session's end, and the ratio would be a fifth of a step's checks too low)."""
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        step()
    if session is not None:
        session.report()  # (runs the checks still waiting)
    return (time.perf_counter() - start) / steps, (time.process_time() - cpu) / steps


@contextlib.contextmanager
def unchecked(reference: str):
    """Shadowing against ``reference`` with no checks: every call is wrapped, deferred and
    read as usual, but neither the reference's calls nor the comparisons run (``--floor``)."""
    saved = Batching._settle_batch, Checking._check, Checking._check_plain
    Batching._settle_batch = lambda self, *args, **kwargs: None
    Checking._check = Checking._check_plain = lambda self, *args, **kwargs: []
    try:
        with fnn.shadow(reference) as session:
            yield session
    finally:
        Batching._settle_batch, Checking._check, Checking._check_plain = saved


@contextlib.contextmanager
def with_worker(reference: str):
    """Shadowing against ``reference`` with its checks on a worker thread
    (``FASTNN_SHADOW_WORKER=1``, :mod:`fastnn.shadowing.worker`; ``--worker``)."""
    from fastnn.shadowing import worker

    saved = os.environ.get(worker.VARIABLE)
    os.environ[worker.VARIABLE] = "1"
    try:
        with fnn.shadow(reference) as session:
            yield session
    finally:
        if saved is None:
            del os.environ[worker.VARIABLE]
        else:
            os.environ[worker.VARIABLE] = saved


def measure(backend: str, reference: str = "cpu", size: str = "small", rounds: int = 5,
            steps: int = 5, floor: bool = False, threaded: bool = False) -> dict:
    """Fastest seconds per step of: the backend, the reference, the shadowed backend, in
    wall time (``backend`` ...) and CPU time (``backend_cpu`` ...), with their ratios;
    ``floor``: the shadowed backend without checks too (``unchecked`` ...); ``threaded``:
    shadowed with its checks on a worker thread too (``worker`` ...)."""
    make = maker(size)
    own, ref = make(backend), make(reference)
    # the shadowed ways: name -> (how it shadows, its own model's step, its ratios' key)
    shadowed = {name: (shadowing, make(backend), key) for name, shadowing, key, wanted in (
        ("shadowed", fnn.shadow, "round", True), ("unchecked", unchecked, "floor", floor),
        ("worker", with_worker, "worker", threaded)) if wanted}
    for step in (own, ref):
        step()
    for shadowing, step, _ in shadowed.values():
        with shadowing(reference):
            step()  # warm: kernels compiled, tolerances loaded
    ways = ("backend", "reference", *shadowed)
    best = {f"{way}{kind}": float("inf") for way in ways for kind in ("", "_cpu")}

    def keep(way, times):
        best[way] = min(best[way], times[0])
        best[f"{way}_cpu"] = min(best[f"{way}_cpu"], times[1])
        return times

    # (wall ratio, CPU ratio) of each round: each shadowed way's over the round's own two
    per_round: dict = {way: [] for way in shadowed}
    for _ in range(rounds):
        a = keep("backend", _time(own, steps))
        b = keep("reference", _time(ref, steps))
        for way, (shadowing, step, _) in shadowed.items():
            with shadowing(reference) as session:
                c = keep(way, _time(step, steps, session))
            per_round[way].append((c[0] / (a[0] + b[0]), c[1] / (a[1] + b[1])))
    best["ratio"] = best["shadowed"] / (best["backend"] + best["reference"])
    best["ratio_cpu"] = best["shadowed_cpu"] / (best["backend_cpu"] + best["reference_cpu"])
    # on a machine shared with other work the fastest of each way may come from rounds
    # under different load; the median of the rounds' own ratios is steadier
    for way, (_, _, key) in shadowed.items():
        best[f"{key}_ratio"] = statistics.median(r[0] for r in per_round[way])
        best[f"{key}_ratio_cpu"] = statistics.median(r[1] for r in per_round[way])
    return best


def profile(backend: str, reference: str, size: str, path: str, steps: int = 20) -> None:
    """Append where ``steps`` shadowed steps of ``size`` spend their time to ``path``."""
    import cProfile
    import io
    import pstats

    step = maker(size)(backend)
    with fnn.shadow(reference) as session:
        for _ in range(3):
            step()
        session.report()
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(steps):
            step()
        session.report()
        profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(30)
    with open(path, "a") as f:
        f.write(f"==== {backend} {size}: {steps} shadowed steps, by own time\n")
        f.write(text.getvalue())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="opencl,clone",
                        help="comma-separated; 'clone' is the NumPy backend under another name")
    parser.add_argument("--reference", default="cpu")
    parser.add_argument("--models", default=",".join(MODELS),
                        help=f"comma-separated, of {', '.join(MODELS)} (default all): the "
                             f"MLP small (fastnn train's on digits) and large, and fastnn "
                             f"train's other models")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--floor", action="store_true",
                        help="also time the shadowed step without its checks (reads and "
                             "per-call bookkeeping only): the rounds' median ratios")
    parser.add_argument("--worker", action="store_true",
                        help="also time the shadowed step with its checks on a worker "
                             "thread (FASTNN_SHADOW_WORKER=1): the rounds' median ratios")
    parser.add_argument("--json", metavar="PATH",
                        help="also write every measurement there (a list, one row a model)")
    parser.add_argument("--profile", metavar="PATH",
                        help="also profile 20 shadowed steps of each model (cProfile, the "
                             "30 costliest functions by own time), appended there")
    args = parser.parse_args(argv)
    print(describe_blas())
    rows = []
    models = args.models.split(",")
    for model in models:
        maker(model)  # (an unknown name fails before any timing)
    print(f"{'backend':<8}{'model':<12}{'backend ms':>12}{args.reference + ' ms':>10}"
          f"{'shadowed ms':>13}{'shadowed/(both)':>17}{'in CPU time':>13}"
          f"{'rounds median':>15}{'in CPU time':>13}"
          + (f"{'unchecked':>11}{'in CPU time':>13}" if args.floor else "")
          + (f"{'worker':>9}{'in CPU time':>13}" if args.worker else ""))
    for backend in args.backends.split(","):
        name = install_clone() if backend == "clone" else backend
        for size in models:
            r = measure(name, args.reference, size, args.rounds, floor=args.floor,
                        threaded=args.worker)
            print(f"{backend:<8}{size:<12}{r['backend'] * 1e3:>12.2f}"
                  f"{r['reference'] * 1e3:>10.2f}{r['shadowed'] * 1e3:>13.2f}"
                  f"{r['ratio']:>17.2f}{r['ratio_cpu']:>13.2f}"
                  f"{r['round_ratio']:>15.2f}{r['round_ratio_cpu']:>13.2f}"
                  + (f"{r['floor_ratio']:>11.2f}{r['floor_ratio_cpu']:>13.2f}"
                     if args.floor else "")
                  + (f"{r['worker_ratio']:>9.2f}{r['worker_ratio_cpu']:>13.2f}"
                     if args.worker else ""), flush=True)
            # ("backend" in r is the backend's seconds a step: the name goes as "device")
            rows.append({"device": backend, "model": size, **r})
            if args.profile:
                profile(name, args.reference, size, args.profile)
            if args.json:  # (rewritten after each row: a run stopped early keeps its rows)
                Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
