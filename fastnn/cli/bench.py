"""``fastnn bench``: a quick side-by-side timing of the installed backends (and PyTorch CPU).

Three cases: a square float32 matmul, a Conv1d forward, and one training step
of an MLP (batch 128, 784-512-512-10, ReLU, softmax cross-entropy, SGD).
Every contender runs with ONE thread by default: NumPy's and PyTorch's thread
pools fight over the cores when both are loaded, which makes whichever runs
second look slower than it is (see FACTS.md). Times are medians of a few
rounds; each round runs the case several times and waits for the device once
at the end, so queued devices are timed fairly.
"""

from __future__ import annotations

import contextlib
import statistics
import time

import numpy as np

from fastnn.cli import int_at_least
from fastnn.cli.info import table

CASES = ("matmul", "conv1d", "mlp_step")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "bench", help="time the installed backends (and PyTorch CPU) side by side"
    )
    parser.add_argument("--size", type=int, default=512,
                        help="matmul is SIZE x SIZE @ SIZE x SIZE (default 512)")
    parser.add_argument("--batch", type=int, default=128,
                        help="MLP batch size (default 128); conv1d uses batch/4")
    parser.add_argument("--hidden", type=int, default=512, help="MLP hidden width (default 512)")
    parser.add_argument("--cases", default=",".join(CASES),
                        help=f"comma-separated subset of {','.join(CASES)}")
    parser.add_argument("--backends", default=None,
                        help="comma-separated backends (default: every available one)")
    parser.add_argument("--no-torch", action="store_true", help="leave PyTorch out")
    parser.add_argument("--threads", type=int_at_least(1), default=1,
                        help="BLAS/PyTorch threads per contender (default 1: stable numbers; "
                             "more than 1 on a busy machine can be many times slower)")
    parser.add_argument("--seconds", type=float, default=0.3,
                        help="rough time budget per case and contender (default 0.3)")
    parser.set_defaults(func=run)


# ---------------------------------------------------------------- timing


def measure(step, sync, seconds: float, rounds: int = 5) -> float:
    """Median seconds per call of ``step()``; ``sync(result)`` waits for the device."""
    sync(step())  # warm-up: kernel builds, caches, allocations
    start = time.perf_counter()
    sync(step())
    once = max(time.perf_counter() - start, 1e-7)
    per_round = max(1, int(seconds / rounds / once))
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(per_round):
            out = step()
        sync(out)
        times.append((time.perf_counter() - start) / per_round)
    return statistics.median(times)


@contextlib.contextmanager
def thread_limit(threads: int):
    """Limit the host BLAS/OpenMP thread pools to ``threads`` (through threadpoolctl, if present).

    A no-op when threadpoolctl is missing or ``threads`` is 0 (keep the library default).
    """
    with contextlib.ExitStack() as stack:
        if threads <= 0:
            yield
            return
        try:
            from threadpoolctl import threadpool_limits

            stack.enter_context(threadpool_limits(limits=threads))
        except ImportError:
            pass
        yield


# ---------------------------------------------------------------- fastnn cases


def _fastnn_cases(device: str, args, host: dict) -> dict:
    import fastnn as fnn
    import fastnn.functional as F

    def sync(t):
        # reading a value back forces the device to finish everything queued before it
        return t.sum().item()

    def matmul():
        a = fnn.tensor(host["a"], device=device)
        b = fnn.tensor(host["b"], device=device)
        return lambda: F.matmul(a, b)

    def conv1d():
        x = fnn.tensor(host["conv_x"], device=device)
        w = fnn.tensor(host["conv_w"], device=device)
        return lambda: F.conv1d(x, w, padding=2)

    def mlp_step():
        nn, optim = fnn.nn, fnn.optim
        fnn.manual_seed(0)
        with fnn.use(device):
            model = nn.Sequential(
                nn.Linear(784, args.hidden), nn.Activation("relu"),
                nn.Linear(args.hidden, args.hidden), nn.Activation("relu"),
                nn.Linear(args.hidden, 10),
            )
        opt = optim.SGD(model.parameters(), lr=0.01)
        x = fnn.tensor(host["mlp_x"], device=device)
        y = fnn.tensor(host["mlp_y"], device=device)

        def step():
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        return step

    return {"matmul": matmul, "conv1d": conv1d, "mlp_step": mlp_step}, sync


# ---------------------------------------------------------------- PyTorch cases


def _torch_cases(args, host: dict):
    import torch

    def sync(t):
        return float(t.sum())

    def matmul():
        a, b = torch.from_numpy(host["a"]), torch.from_numpy(host["b"])
        return lambda: a @ b

    def conv1d():
        x, w = torch.from_numpy(host["conv_x"]), torch.from_numpy(host["conv_w"])
        return lambda: torch.nn.functional.conv1d(x, w, padding=2)

    def mlp_step():
        torch.manual_seed(0)
        h = args.hidden
        model = torch.nn.Sequential(
            torch.nn.Linear(784, h), torch.nn.ReLU(), torch.nn.Linear(h, h), torch.nn.ReLU(),
            torch.nn.Linear(h, 10),
        )
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        x, y = torch.from_numpy(host["mlp_x"]), torch.from_numpy(host["mlp_y"])
        loss_fn = torch.nn.functional.cross_entropy

        def step():
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            return loss.detach()

        return step

    return {"matmul": matmul, "conv1d": conv1d, "mlp_step": mlp_step}, sync


# ---------------------------------------------------------------- the command


def host_inputs(args) -> dict:
    """The same float32 inputs for every contender."""
    rng = np.random.default_rng(0)
    n, batch = args.size, args.batch
    return {
        "a": rng.standard_normal((n, n)).astype(np.float32),
        "b": rng.standard_normal((n, n)).astype(np.float32),
        "conv_x": rng.standard_normal((max(batch // 4, 1), 8, 256)).astype(np.float32),
        "conv_w": (rng.standard_normal((16, 8, 5)) * 0.1).astype(np.float32),
        "mlp_x": rng.standard_normal((batch, 784)).astype(np.float32),
        "mlp_y": rng.integers(0, 10, size=batch).astype(np.int64),
    }


def contenders(args) -> list[tuple[str, object]]:
    """(label, builder) for each backend to time, then PyTorch when importable."""
    import fastnn as fnn

    wanted = None if args.backends is None else set(args.backends.split(","))
    records = fnn.backends()
    if wanted:
        installed = sorted(r.name for r in records)
        unknown = sorted(wanted - set(installed))
        if unknown:
            raise SystemExit(f"fastnn bench: unknown backend{'s' if len(unknown) > 1 else ''} "
                             f"{', '.join(map(repr, unknown))}; installed: {', '.join(installed)}")
    found = []
    for record in records:
        if wanted is not None and record.name not in wanted:
            continue
        if not record.available:
            print(f"skipping backend {record.name!r}: {record.reason}")
            continue
        found.append((f"fastnn:{record.name}", lambda h, name=record.name:
                      _fastnn_cases(name, args, h)))
    if wanted:
        unknown = wanted - {label.split(":", 1)[1] for label, _ in found}
        if unknown:
            raise SystemExit(f"fastnn bench: backends {sorted(unknown)} are not available; "
                             f"see `fastnn info`")
    if not args.no_torch:
        try:
            import torch  # noqa: F401
        except ImportError:
            print("PyTorch not installed: comparing fastnn backends only")
        else:
            found.append(("torch-cpu", lambda h: _torch_cases(args, h)))
    return found


def run(args) -> int:
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    bad = [c for c in cases if c not in CASES]
    if bad:
        raise SystemExit(f"fastnn bench: unknown cases {bad}; choose from {', '.join(CASES)}")
    host = host_inputs(args)
    results: dict[str, dict[str, float]] = {}
    with thread_limit(args.threads):
        for label, build in contenders(args):
            if label == "torch-cpu":
                import torch

                torch.set_num_threads(args.threads)
            builders, sync = build(host)
            results[label] = {}
            for case in cases:
                try:
                    results[label][case] = measure(builders[case](), sync, args.seconds)
                except Exception as exc:  # one broken case must not hide the others
                    first_line = (str(exc).strip().splitlines() or [""])[0]
                    print(f"{label} {case}: failed ({type(exc).__name__}: {first_line})")
    print(report(results, cases, args))
    return 0


def report(results: dict, cases: list[str], args) -> str:
    """One row per contender: time per case and its ratio to the first contender."""
    labels = list(results)
    if not labels:
        return "nothing to time: no backend is available (see `fastnn info`)"
    base = labels[0]
    header = ["contender"]
    for case in cases:
        header += [f"{case} ms", f"x {base}"]
    rows = []
    for label in labels:
        row = [label]
        for case in cases:
            t, ref = results[label].get(case), results[base].get(case)
            row.append("-" if t is None else f"{t * 1e3:.4g}")
            row.append("-" if t is None or ref is None else f"{t / ref:.2f}")
        rows.append(row)
    size = (f"matmul {args.size}x{args.size}x{args.size}; conv1d ({max(args.batch // 4, 1)}, 8, "
            f"256) * (16, 8, 5); MLP step batch {args.batch}, 784-{args.hidden}-{args.hidden}-10; "
            f"{args.threads} thread(s); ratio = time / time of {base} (lower is faster)")
    return table(rows, tuple(header)) + "\n" + size
