"""A small training run shared by the MPI worker and the single-process reference.

``train(backend, path, optimizer)`` takes steps on fixed batches of uneven
sizes (7 splits 4 + 3 over two ranks; 1 leaves a rank empty) with a float64
MLP. Without ``comm`` it is one process on each full batch; with ``comm`` each
rank takes its part (samples rank, rank + size, ...) through fastnn.distributed,
starting from weights that differ per rank until broadcast_parameters. Paths:
tape (backward, step), reverse (reverse, apply), clip (backward, synchronize,
clip_grad_norm, step).
"""

from __future__ import annotations

import numpy as np

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn, optim

BATCHES = (7, 7, 1, 4)
FEATURES, CLASSES = 6, 3


def data(seed: int = 3):
    rng = np.random.default_rng(seed)
    n = sum(BATCHES)
    return rng.normal(size=(n, FEATURES)), rng.integers(0, CLASSES, n)


def model(seed: int, device):
    fnn.manual_seed(seed)
    return nn.Sequential(nn.Linear(FEATURES, 8, dtype=fnn.float64, device=device),
                         nn.Activation("tanh"),
                         nn.Linear(8, CLASSES, dtype=fnn.float64, device=device))


def make_optimizer(name: str, params):
    if name == "sgd":
        return optim.SGD(params, lr=0.1, momentum=0.9)
    return optim.Adam(params, lr=0.01)


def train(backend: str, path: str, optimizer: str, comm=None) -> dict:
    """The final weights (name -> float64 array) after the steps of BATCHES."""
    from fastnn import distributed as dist

    device = backend
    rank, size = (0, 1) if comm is None else (comm.rank, comm.size)
    net = model(100 + rank, device)  # other ranks start elsewhere: the broadcast must fix it
    opt = make_optimizer(optimizer, net.parameters())
    if comm is not None:
        dist.broadcast_parameters(net, comm)
        opt = dist.DistributedOptimizer(opt, comm)
    x_all, y_all = data()
    start = 0
    for batch in BATCHES:
        idx = np.arange(start, start + batch)[rank::size]
        start += batch
        if comm is not None:
            opt.samples = len(idx)
        x = fnn.tensor(x_all[idx], device=device)
        y = fnn.tensor(y_all[idx], device=device)
        opt.zero_grad()
        if not len(idx):  # an empty shard takes part in the collective with weight 0
            if path == "clip":
                opt.synchronize()
                optim.clip_grad_norm(net.parameters(), 0.5)
            opt.step()
        elif path == "tape":
            F.cross_entropy(net(x), y).backward()
            opt.step()
        elif path == "clip":  # clipping must see the averaged gradients
            F.cross_entropy(net(x), y).backward()
            if comm is not None:
                opt.synchronize()
            optim.clip_grad_norm(net.parameters(), 0.5)
            opt.step()
        else:
            with fnn.no_grad():
                logits = net(x)
                grad = (F.softmax(logits, dim=1) - F.one_hot(y, CLASSES)) * (1.0 / len(idx))
                _, grads = net.reverse(x, grad)
                net.apply(opt, grads)
    return {name: np.asarray(value, dtype=np.float64) for name, value in net.state_dict().items()}
