"""Sequence benchmark (issue 14): attention and recurrent training steps, fastnn cpu vs
PyTorch CPU, one thread each, interleaved in one process:

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_seq.py [--json]

Steps (float32, Adam, cross-entropy on the mean over time of the last layer):

* MHA: self-attention (batch 32, seq 64, d 64, 4 heads), its output projected to classes;
* Transformer: a 2-layer TransformerEncoder (d 64, 4 heads, ff 128, batch-first, no
  dropout) on the same input;
* LSTM / GRU: one layer, hidden 64, input 16, batch 32, seq 64, batch-first.

Both frameworks start from the same weights (PyTorch's state_dict loaded into fastnn).
Reported: median step times and fastnn / torch.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from bench_core import median_time  # benchmarks/ is on sys.path when run as a script

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn, optim

BATCH, SEQ, D, HEADS, FF, IN, HIDDEN, CLASSES = 32, 64, 64, 4, 128, 16, 64, 10


def models(torch):
    """(name, fastnn body, torch body, input features, how to call each body)."""
    def mha_call(m, x):
        return m(x, x, x, need_weights=False)[0]

    def rnn_call(m, x):
        return m(x)[0]

    def plain(m, x):
        return m(x)

    return [
        ("MHA step", lambda: nn.MultiheadAttention(D, HEADS, batch_first=True),
         lambda: torch.nn.MultiheadAttention(D, HEADS, batch_first=True), D, mha_call),
        ("Transformer encoder step", lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(
            D, HEADS, FF, dropout=0.0, batch_first=True), 2),
         lambda: torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(
             D, HEADS, FF, dropout=0.0, batch_first=True), 2, enable_nested_tensor=False),
         D, plain),
        ("LSTM step", lambda: nn.LSTM(IN, HIDDEN, batch_first=True),
         lambda: torch.nn.LSTM(IN, HIDDEN, batch_first=True), IN, rnn_call),
        ("GRU step", lambda: nn.GRU(IN, HIDDEN, batch_first=True),
         lambda: torch.nn.GRU(IN, HIDDEN, batch_first=True), IN, rnn_call),
    ]


def _steps(torch, rng, make_ours, make_theirs, features, call):
    """One training step of each framework, from the same weights and batch."""
    width = HIDDEN if features == IN else D
    torch.manual_seed(0)
    theirs_body, theirs_head = make_theirs(), torch.nn.Linear(width, CLASSES)
    ours_body, ours_head = make_ours(), nn.Linear(width, CLASSES)
    for ours, theirs in ((ours_body, theirs_body), (ours_head, theirs_head)):
        ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = rng.standard_normal((BATCH, SEQ, features)).astype(np.float32)
    y = rng.integers(0, CLASSES, BATCH)
    fx, fy, tx, ty = fnn.tensor(x), fnn.tensor(y), torch.tensor(x), torch.tensor(y)
    f_opt = optim.Adam([*ours_body.parameters(), *ours_head.parameters()], lr=1e-3)
    t_opt = torch.optim.Adam(list(theirs_body.parameters()) + list(theirs_head.parameters()),
                             lr=1e-3)

    def ours_step():
        f_opt.zero_grad()
        F.cross_entropy(ours_head(call(ours_body, fx).mean(axis=1)), fy).backward()
        f_opt.step()

    def theirs_step():
        t_opt.zero_grad()
        logits = theirs_head(call(theirs_body, tx).mean(1))
        torch.nn.functional.cross_entropy(logits, ty).backward()
        t_opt.step()

    return ours_step, theirs_step


def run():
    import torch

    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    rows = {}
    for name, make_ours, make_theirs, features, call in models(torch):
        ours_step, theirs_step = _steps(torch, rng, make_ours, make_theirs, features, call)
        ours_t, theirs_t = [], []
        for _ in range(3):  # interleaved, so that load on the machine hits both alike
            ours_t.append(median_time(ours_step, repeat=7, number=3))
            theirs_t.append(median_time(theirs_step, repeat=7, number=3))
        f, t = float(np.median(ours_t)), float(np.median(theirs_t))
        rows[name] = {"fastnn_ms": f * 1e3, "torch_ms": t * 1e3, "ratio": f / t}
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    rows = run()
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'step (float32, 1 thread)':28s} {'fastnn ms':>10s} {'torch ms':>10s} "
          f"{'fastnn/torch':>13s}")
    for name, row in rows.items():
        print(f"{name:28s} {row['fastnn_ms']:10.2f} {row['torch_ms']:10.2f} "
              f"{row['ratio']:13.2f}")


if __name__ == "__main__":
    main()
