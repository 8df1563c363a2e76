"""Thread safety: several threads, each with its own tensors, get what one thread gets.

What every backend must guarantee (docs/backend_authors.md): hooks may be
called from several threads at once, each thread with its own arrays, and each
call's result is exactly what the same call gives alone. State a backend
shares between calls (compiled kernels, kernel-argument objects, caches,
scratch buffers, queues) must be safe for that: per thread, read-only once
built, or behind a lock.

Each workload below is a small deterministic computation through the public
API, seeded so that every thread works on different values (a backend that
hands one thread's arguments to another's launch gives wrong numbers, not just
the same numbers twice). :func:`check` runs it once per seed in one thread,
then with every seed in its own thread at once, and demands identical results.
"""

from __future__ import annotations

import sys
import threading

import numpy as np

import fastnn as fnn
import fastnn.functional as F
from fastnn.conformance.compare import Mismatch

THREADS = 4
ROUNDS = 3  # threaded runs per check: a race shows up in some runs, not in every one
TIMEOUT_S = 300.0
# NOTE: CPython hands the GIL over every 5 ms by default, so a race between two steps
# of one hook (set a kernel's arguments, then enqueue it) is rarely hit in a short
# test; switching every 10 us makes such a window show up within a few hundred ops.
SWITCH_INTERVAL_S = 1e-5


def add_loop(device, seed: int) -> list:
    """Many tiny launches: x + 1, 1000 times, as in a training loop's bookkeeping."""
    x = fnn.full((16,), float(seed), dtype=fnn.float32, device=device)
    one = fnn.ones((16,), dtype=fnn.float32, device=device)
    for _ in range(1000):
        x = x + one
    return [x.numpy()]


def op_mix(device, seed: int) -> list:
    """Matmul, activations, softmax and reductions on each thread's own values."""
    rng = np.random.default_rng(seed)
    a = fnn.tensor(rng.standard_normal((16, 32)).astype(np.float32), device=device)
    b = fnn.tensor(rng.standard_normal((32, 8)).astype(np.float32), device=device)
    out = []
    for _ in range(30):
        h = F.relu(a @ b)
        s = F.softmax(h, -1)
        a = F.tanh(a + F.mean(s, 1, keepdims=True))
        out = [h.numpy(), s.numpy(), F.sum(h, 0).numpy(), F.argmax(s, -1).numpy()]
    return out + [a.numpy()]


def conv1d_grads(device, seed: int) -> list:
    """conv1d forward and both gradients (backends keep work arrays for these)."""
    rng = np.random.default_rng(seed)
    w = fnn.tensor(rng.standard_normal((16, 8, 5)).astype(np.float32), device=device,
                   requires_grad=True)
    out = []
    for _ in range(5):
        x = fnn.tensor(rng.standard_normal((8, 8, 128)).astype(np.float32), device=device,
                       requires_grad=True)
        y = F.conv1d(x, w, padding=1)
        F.sum(y * y).backward()
        out += [y.numpy(), x.grad.numpy()]
    return out + [w.grad.numpy()]


def mlp_sgd(device, seed: int, widths=(16, 32, 4), batch: int = 32, steps: int = 30) -> list:
    """An MLP (ReLU between Linear layers of ``widths``) trained with SGD (momentum) on one
    batch: the losses and the final weights."""
    from fastnn import nn, optim  # lazily, as layers.py does

    rng = np.random.default_rng(seed)
    layers = [nn.Linear(widths[0], widths[1])]
    for n_in, n_out in zip(widths[1:], widths[2:]):
        layers += [nn.Activation("relu"), nn.Linear(n_in, n_out)]
    model = nn.Sequential(*layers)
    model.load_state_dict({name: (rng.standard_normal(p.shape) * 0.3).astype(np.float32)
                           for name, p in model.named_parameters()})
    model.to(device)
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x = fnn.tensor(rng.standard_normal((batch, widths[0])).astype(np.float32), device=device)
    y = fnn.tensor(rng.integers(0, widths[-1], batch), device=device)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.numpy())
    return [np.array(losses)] + [p.numpy() for p in model.parameters()]


WORKLOADS = {"add_loop": add_loop, "op_mix": op_mix, "conv1d_grads": conv1d_grads,
             "mlp_sgd": mlp_sgd}


def run_threads(work, device, seeds, timeout: float = TIMEOUT_S) -> list:
    """``work(device, seed)`` for every seed, each in its own thread, started together."""
    results: dict = {}
    errors: dict = {}
    start = threading.Barrier(len(seeds))

    def body(seed):
        try:
            start.wait(timeout)
            results[seed] = work(device, seed)
        except BaseException as exc:  # reported below, with the thread it came from
            errors[seed] = exc

    threads = [threading.Thread(target=body, args=(s,), daemon=True) for s in seeds]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout)
    finally:
        sys.setswitchinterval(interval)
    hung = [s for s, t in zip(seeds, threads) if t.is_alive()]
    if hung:
        raise Mismatch(f"{work.__name__}: threads {hung} still running after {timeout:g} s "
                       f"(a deadlock?)")
    for seed, exc in errors.items():
        raise Mismatch(f"{work.__name__}: thread {seed} raised {type(exc).__name__}: {exc} "
                       f"(it ran alone without error)") from exc
    return [results[s] for s in seeds]


def check(name: str, device, n_threads: int = THREADS, rounds: int = ROUNDS,
          timeout: float = TIMEOUT_S) -> None:
    """Workload ``name`` from ``n_threads`` threads at once equals it run in one thread."""
    work = WORKLOADS[name]
    seeds = list(range(n_threads))
    alone = [work(device, s) for s in seeds]
    for _ in range(rounds):
        compare_results(name, device, alone, run_threads(work, device, seeds, timeout))


def compare_results(name, device, alone, together) -> None:
    """Raise Mismatch unless every thread's outputs equal its one-thread outputs exactly."""
    n_threads = len(alone)
    for seed, (want, got) in enumerate(zip(alone, together)):
        for k, (w, g) in enumerate(zip(want, got)):
            if g.dtype != w.dtype or g.shape != w.shape or not np.array_equal(
                    g, w, equal_nan=w.dtype.kind == "f"):
                diff = (np.abs(g.astype(np.float64) - w.astype(np.float64)).max()
                        if g.shape == w.shape else "shape")
                raise Mismatch(
                    f"{name} on {device} from {n_threads} threads: thread {seed}, output {k} "
                    f"differs from the one-thread result (max abs difference {diff}); a backend "
                    f"shares mutable state between threads (kernel arguments, caches, scratch)")
