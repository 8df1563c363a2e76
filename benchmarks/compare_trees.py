"""Before/after: the same training steps timed under two fastnn source trees, side by side.

    OPENBLAS_NUM_THREADS=1 python benchmarks/compare_trees.py OLD_TREE NEW_TREE

Each tree is a checkout (``git worktree add /tmp/old HEAD~3``); its ``fastnn`` and
``backends/cpu_numpy`` go first on PYTHONPATH of a child process that times each step.
The children alternate (old, new, new, old, ...) so that both see the same machine, and
each row is new / old of the medians: below 1 the new tree is faster.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

STEPS = r'''
import json, sys, time
import numpy as np
import fastnn as fnn
import fastnn.functional as F
from fastnn import nn, optim

rng = np.random.default_rng(0)
fnn.manual_seed(0)

def mlp():
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10))
    opt = optim.SGD(model.parameters(), lr=0.01)
    x = fnn.tensor(rng.standard_normal((128, 784), dtype=np.float32))
    y = fnn.tensor(rng.integers(0, 10, 128))
    return model, opt, x, y, F.cross_entropy

def conv1d():
    model = nn.Sequential(nn.Conv1d(16, 32, 5, padding=2), nn.ReLU(),
                          nn.Conv1d(32, 32, 5, padding=2), nn.ReLU(), nn.AdaptiveAvgPool1d(1),
                          nn.Flatten(), nn.Linear(32, 10))
    opt = optim.SGD(model.parameters(), lr=0.01)
    x = fnn.tensor(rng.standard_normal((32, 16, 256), dtype=np.float32))
    y = fnn.tensor(rng.integers(0, 10, 32))
    return model, opt, x, y, F.cross_entropy

class LastStep(nn.Module):
    def __init__(self, rnn, head):
        super().__init__()
        self.rnn, self.head = rnn, head
    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])

def lstm():
    model = LastStep(nn.LSTM(16, 64, batch_first=True), nn.Linear(64, 10))
    opt = optim.Adam(model.parameters(), lr=1e-3)
    x = fnn.tensor(rng.standard_normal((32, 64, 16), dtype=np.float32))
    y = fnn.tensor(rng.integers(0, 10, 32))
    return model, opt, x, y, F.cross_entropy

class Pooled(nn.Module):
    def __init__(self, encoder, head):
        super().__init__()
        self.encoder, self.head = encoder, head
    def forward(self, x):
        return self.head(self.encoder(x).mean(dim=1))

def transformer():
    layer = nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, dropout=0.0,
                                       batch_first=True)
    model = Pooled(nn.TransformerEncoder(layer, 2), nn.Linear(64, 10))
    opt = optim.Adam(model.parameters(), lr=1e-3)
    x = fnn.tensor(rng.standard_normal((32, 32, 64), dtype=np.float32))
    y = fnn.tensor(rng.integers(0, 10, 32))
    return model, opt, x, y, F.cross_entropy

out = {}
for name in sys.argv[1].split(","):
    model, opt, x, y, loss_fn = globals()[name]()
    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    for _ in range(3):
        step()
    times = []
    for _ in range(int(sys.argv[2])):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    out[name] = min(times)
print(json.dumps(out))
'''


def run(tree: str, cases: str, steps: int) -> dict:
    paths = [tree, os.path.join(tree, "backends", "cpu_numpy")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
    done = subprocess.run([sys.executable, "-c", STEPS, cases, str(steps)], env=env,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--cases", default="mlp,conv1d,lstm,transformer")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args(argv)
    old, new = {}, {}
    pair = [(old, args.old), (new, args.new)]
    for turn in range(args.rounds):
        # The second child of a pair ran faster by up to 20% in some rounds here, so the
        # trees take turns at going first.
        for store, tree in (pair if turn % 2 == 0 else pair[::-1]):
            for name, seconds in run(tree, args.cases, args.steps).items():
                store.setdefault(name, []).append(seconds)
    print(f"{'step':<14}{'old ms':>9}{'new ms':>9}{'new/old':>9}")
    for name in old:
        a, b = statistics.median(old[name]), statistics.median(new[name])
        print(f"{name:<14}{a * 1e3:>9.2f}{b * 1e3:>9.2f}{b / a:>9.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
