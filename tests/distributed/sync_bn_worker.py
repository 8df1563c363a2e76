"""Run under ``mpiexec -n 2 python -m tests.distributed.sync_bn_worker OUT_DIR BACKEND``:
SyncBatchNorm on two ranks, each on its shard of a global batch, on BACKEND's device.
Each rank writes ``OUT_DIR/sync-<rank>.npz``; test_sync_batchnorm_mpi.py compares them with
one process's BatchNorm on the whole batch, built from the helpers below.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import fastnn as fnn
import fastnn.distributed as dist
import fastnn.functional as F
from fastnn import nn, optim
from fastnn.nn.parallel import DistributedDataParallel as DDP

SHAPE = (7, 3, 2, 3)  # the layer test's global batch: rank 0 takes 4 samples, rank 1 takes 3
SPLIT = 4
DDP_BATCH, STEPS = 8, 3  # the DDP test: halves of 4


def layer_data():
    """x (SHAPE), the gradient of the output g, weight and bias: float64."""
    rng = np.random.default_rng(5)
    x = rng.normal(2.0, 3.0, SHAPE)  # far from zero mean: the statistics must be global
    return x, rng.normal(size=SHAPE), rng.normal(size=SHAPE[1]), rng.normal(size=SHAPE[1])


def shard(rank: int, a: np.ndarray) -> np.ndarray:
    return a[:SPLIT] if rank == 0 else a[SPLIT:]


def layer(cls):
    """A batch-norm layer (cls: BatchNorm2d or SyncBatchNorm) with layer_data's affine."""
    _, _, weight, bias = layer_data()
    bn = cls(SHAPE[1], momentum=0.3, dtype=fnn.float64)
    bn.load_state_dict({"weight": fnn.tensor(weight), "bias": fnn.tensor(bias),
                        "running_mean": fnn.tensor(np.full(SHAPE[1], 0.5)),
                        "running_var": fnn.tensor(np.full(SHAPE[1], 2.0)),
                        "num_batches_tracked": fnn.tensor(np.array(0, dtype=np.int64))})
    return bn


def run_layer(bn, x: np.ndarray, g: np.ndarray) -> dict:
    """Two training steps of ``bn`` on x (gradient g, then 2 g), then eval: what to compare."""
    out = {}
    for step in range(2):
        xt = fnn.tensor(x, requires_grad=True)
        y = bn(xt)
        (y * fnn.tensor(g * (step + 1))).sum().backward()
        out[f"y/{step}"] = y.detach().numpy()
        out[f"x.grad/{step}"] = xt.grad.numpy()
        for name in ("weight", "bias"):
            param = getattr(bn, name)
            out[f"{name}.grad/{step}"] = param.grad.numpy().copy()
            param.grad = None
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            out[f"{name}/{step}"] = getattr(bn, name).numpy().copy()
    bn.eval()
    out["eval"] = bn(fnn.tensor(x)).numpy()
    return out


def empty_shard_data():
    """(3, 3, 3) float64: rank 0 takes it all, rank 1 an empty (0, 3, 3) shard."""
    x, g, _, _ = layer_data()
    return x[:3, :, 0], g[:3, :, 0]


def offset_data() -> np.ndarray:
    """float32 far from zero mean: E[x^2] - E[x]^2 would lose the variance here."""
    return (1000.0 + np.random.default_rng(9).normal(size=(8, 3, 4))).astype(np.float32)


def half_data() -> np.ndarray:
    """(16, 2, 64, 64): 65536 values per channel, past float16's largest, 65504."""
    return np.random.default_rng(11).normal(3.0, 2.0, (16, 2, 64, 64))


def ddp_data(step: int):
    rng = np.random.default_rng(20 + step)
    return rng.normal(1.0, 2.0, (DDP_BATCH, 2, 3, 3)), rng.integers(0, 3, DDP_BATCH)


def ddp_model():
    """A conv net with BatchNorm2d, float64, the same weights in every process."""
    fnn.manual_seed(3)
    return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1, dtype=fnn.float64),
                         nn.BatchNorm2d(4, dtype=fnn.float64), nn.ReLU(), nn.Flatten(),
                         nn.Linear(4 * 9, 3, dtype=fnn.float64))


def train(model, rank: int, size: int, compiled: bool = False) -> dict:
    """STEPS of SGD with momentum; each rank on its half of each batch (one process: the
    whole batch when size == 1), the step through fnn.compile when ``compiled`` (recorded
    once, replayed after). The parameters and buffers after training."""
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    half = DDP_BATCH // size

    def train_step(x, y):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    train_step = fnn.compile(train_step) if compiled else train_step
    for step in range(STEPS):
        x, y = ddp_data(step)
        x, y = x[rank * half:(rank + 1) * half], y[rank * half:(rank + 1) * half]
        train_step(fnn.tensor(x), fnn.tensor(y))
    inner = model.module if isinstance(model, DDP) else model
    prefix = "compiled/" if compiled else "ddp/"
    return {prefix + k: np.array(v) for k, v in inner.state_dict().items()}


def run_half(rank: int) -> dict:
    """float16 on each rank's half of half_data (nothing where the device lacks float16)."""
    supported = fnn.get_device().backend.record.dtypes
    if supported and "float16" not in supported:
        return {}
    half = nn.SyncBatchNorm(2, dtype=fnn.float16)
    xh = fnn.tensor(half_data()[rank * 8:(rank + 1) * 8], dtype=fnn.float16, requires_grad=True)
    yh = half(xh)
    yh.float().square().sum().backward()
    return {"half/y": yh.float().numpy(), "half/x.grad": xh.grad.float().numpy(),
            "half/running_var": half.running_var.float().numpy()}


def main(argv) -> None:
    out_dir, backend = argv
    fnn.use(backend)
    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    x, g, _, _ = layer_data()
    results = {"layer/" + k: v for k, v in
               run_layer(layer(nn.SyncBatchNorm), shard(rank, x), shard(rank, g)).items()}
    x, g = empty_shard_data()
    part = slice(0, 3) if rank == 0 else slice(3, 3)
    results.update({"empty/" + k: v for k, v in
                    run_layer(layer(nn.SyncBatchNorm), x[part], g[part]).items()})
    x = offset_data()
    results["offset"] = nn.SyncBatchNorm(3)(fnn.tensor(x[rank * 4:(rank + 1) * 4])).numpy()
    results.update(run_half(rank))
    model = nn.SyncBatchNorm.convert_sync_batchnorm(ddp_model())
    results["ddp/converted"] = np.array(type(model[1]).__name__)
    results.update(train(DDP(model), rank, size))
    model = nn.SyncBatchNorm.convert_sync_batchnorm(ddp_model())
    results.update(train(DDP(model), rank, size, compiled=True))
    try:  # ranks with different channel counts: each its own clear error before any collective
        nn.SyncBatchNorm(3, dtype=fnn.float64)(fnn.tensor(np.ones((2, 4))))
    except ValueError as exc:
        results["error/channels"] = np.array(str(exc))
    dist.destroy_process_group()
    np.savez(Path(out_dir) / f"sync-{rank}.npz", **results)


if __name__ == "__main__":
    main(sys.argv[1:])
