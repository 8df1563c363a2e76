"""Hand-written ``reverse`` against the one derived from the tape, layer by layer.

``Module.reverse`` runs the layer's forward on a private tape and backward
through it; a layer keeps a hand-written reverse only where this benchmark
shows that it pays. Run with one thread:
``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_reverse.py``; each row is the
fastest of several alternating rounds, so both see the same machine.
"""

from __future__ import annotations

import argparse
import timeit
from functools import partial

import fastnn as fnn
from fastnn import nn


def layers():
    """(label, layer, input shape) for the layers whose reverse is compared."""
    return [
        ("Linear 512->512, batch 128", nn.Linear(512, 512), (128, 512)),
        ("Linear 64->10, batch 32", nn.Linear(64, 10), (32, 64)),
        ("Conv1d 16->32 k5, (32,16,256)", nn.Conv1d(16, 32, 5), (32, 16, 256)),
        ("Activation relu (128,512)", nn.Activation("relu"), (128, 512)),
        ("Activation gelu (128,512)", nn.Activation("gelu"), (128, 512)),
        ("LayerNorm 512, (128,512)", nn.LayerNorm(512), (128, 512)),
        ("RMSNorm 512, (128,512)", nn.RMSNorm(512), (128, 512)),
        ("Softmax (128,512)", nn.Softmax(), (128, 512)),
        ("Swish 512, (128,512)", nn.Swish(512), (128, 512)),
        ("Dense 512->512, batch 128", nn.Dense(512, 512), (128, 512)),
        ("Bias1d 512, (128,512)", nn.Bias1d(512), (128, 512)),
        ("Diag 512, (128,512)", nn.Diag(512), (128, 512)),
        ("ScalarScale (128,512)", nn.ScalarScale(), (128, 512)),
        ("RMSDiv (128,512)", nn.RMSDiv(), (128, 512)),
        ("Flatten (32,16,64)", nn.Flatten(), (32, 16, 64)),
        ("GlobalAvgPool1d (32,32,256)", nn.GlobalAvgPool1d(), (32, 32, 256)),
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"{'layer':<34}{'own us':>10}{'tape us':>10}{'own/tape':>10}")
    for label, layer, shape in layers():
        x = fnn.randn(shape, seed=0)
        g = fnn.randn(tuple(layer(x).shape), seed=1)
        own = type(layer).reverse
        if own is nn.Module.reverse:
            continue
        number = max(1, int(2000 / max(1, x.numel() // 4096)))
        mine, tape = [], []
        for _ in range(args.rounds):
            mine.append(timeit.timeit(partial(own, layer, x, g), number=number) / number)
            tape.append(timeit.timeit(partial(nn.Module.reverse, layer, x, g),
                                      number=number) / number)
        a, b = min(mine) * 1e6, min(tape) * 1e6
        print(f"{label:<34}{a:>10.1f}{b:>10.1f}{a / b:>10.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
