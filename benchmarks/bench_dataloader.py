"""DataLoader workers against in-process loading, feeding a training step.

The dataset "decodes" each sample in Python for about ``--decode-ms`` (1 ms by default,
a stand-in for JPEG decoding or tokenising); the step is an MLP's forward, backward and
SGD update. The two loaders alternate over ``--rounds`` rounds on one thread each (the
workers are separate processes), and the ratio of their times is printed: issue 21's
target is 2 workers at least 1.7x faster than 0. Needs at least 3 free cores to show
it (two workers and the training process).

    python benchmarks/bench_dataloader.py [--workers 2] [--batches 40] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import fastnn as fnn  # noqa: E402
from fastnn import nn, optim  # noqa: E402
from fastnn.data import DataLoader, Dataset  # noqa: E402


class Decoding(Dataset):
    """Samples that cost ``decode_s`` of Python work each, as a decoder would."""

    def __init__(self, n: int, decode_s: float):
        self.n, self.decode_s = n, decode_s
        self.raw = np.random.default_rng(0).standard_normal((n, 256)).astype(np.float32)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        end = time.perf_counter() + self.decode_s
        acc = 0
        while time.perf_counter() < end:  # busy Python work, holding the GIL
            acc += 1
        return self.raw[i], i % 10


def epoch_seconds(loader, model, opt, loss_fn) -> float:
    start = time.perf_counter()
    for xb, yb in loader:
        opt.zero_grad()
        loss_fn(model(xb), yb).backward()
        opt.step()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--decode-ms", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    fnn.manual_seed(0)
    data = Decoding(args.batches * args.batch_size, args.decode_ms / 1000)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10))
    opt, loss_fn = optim.SGD(model.parameters(), lr=0.01), nn.CrossEntropyLoss()
    loaders = {0: DataLoader(data, args.batch_size, shuffle=True),
               args.workers: DataLoader(data, args.batch_size, shuffle=True,
                                        num_workers=args.workers, persistent_workers=True)}
    times = {k: [] for k in loaders}
    epoch_seconds(loaders[args.workers], model, opt, loss_fn)  # start the workers
    for _ in range(args.rounds):
        for k, loader in loaders.items():
            times[k].append(epoch_seconds(loader, model, opt, loss_fn))
    best = {k: min(v) for k, v in times.items()}
    print(f"cores: {os.cpu_count()}, load: {os.getloadavg()[0]:.1f}, {args.batches} batches of "
          f"{args.batch_size}, {args.decode_ms} ms per sample")
    for k, t in best.items():
        print(f"num_workers={k}: {t * 1000 / args.batches:.1f} ms per step")
    print(f"speed-up of {args.workers} workers over 0: {best[0] / best[args.workers]:.2f}x")


if __name__ == "__main__":
    main()
