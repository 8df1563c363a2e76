"""Batches for training: :class:`TensorDataset` and :class:`DataLoader`, as PyTorch's.

A loader's order is a pure function of ``(seed, epoch)``: epoch ``e`` shuffles
with ``numpy.random.default_rng([seed, e]).permutation(n)``. So its whole state
is three integers (seed, epoch, batches already given in that epoch), which a
checkpoint holds (:meth:`DataLoader.state_dict`), and a loader restored from it
continues with the very batches an uninterrupted one would give.

``shard=(rank, world_size)`` gives a rank its part of every epoch exactly as
``torch.utils.data.DistributedSampler(dataset, world_size, rank, shuffle,
seed, drop_last=False)`` does: the epoch's order is padded to a multiple of
``world_size`` by repeating its start, and rank ``r`` takes positions ``r,
r + world_size, ...``; every rank gets ``ceil(n / world_size)`` samples. The
loader's ``drop_last`` then applies to the rank's own batches, as in PyTorch.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from fastnn.api.args import integer
from fastnn.api.device import get_device
from fastnn.ops.tensor import Tensor, host_rng, tensor


class TensorDataset:
    """Samples ``i`` of several tensors (or NumPy arrays) of equal first size: a tuple per item."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset: give at least one tensor, e.g. TensorDataset(x, y)")
        for position, t in enumerate(tensors):
            if not isinstance(t, (Tensor, np.ndarray)):
                raise TypeError(f"TensorDataset: argument {position} must be a fastnn Tensor or "
                                f"a NumPy array, got {type(t).__name__}; convert it with "
                                "fnn.tensor(...) or np.asarray(...)")
            if t.ndim == 0:
                raise ValueError(f"TensorDataset: argument {position} is 0-d; every tensor needs "
                                 "a first (sample) dimension")
        sizes = [t.shape[0] for t in tensors]
        if len(set(sizes)) != 1:
            raise ValueError(f"TensorDataset: the tensors' first dimensions differ {sizes}; "
                             "each must hold one row per sample")
        self.tensors = tuple(tensors)

    def __len__(self) -> int:
        return int(self.tensors[0].shape[0])

    def __getitem__(self, index):
        return tuple(t[index] for t in self._indexable())

    def _indexable(self) -> tuple:
        # NOTE: a Tensor without indexing (a core that lacks __getitem__) is read to the host
        # once and indexed there; with it, rows are gathered on the tensor's own device
        if not hasattr(self, "_cached"):
            self._cached = tuple(t if isinstance(t, np.ndarray) or hasattr(t, "__getitem__")
                                 else t.numpy() for t in self.tensors)
        return self._cached

    def take(self, indices: np.ndarray, device) -> tuple:
        """The samples at ``indices`` (int64) as one batch of tensors on ``device``."""
        out = []
        for t in self._indexable():
            if isinstance(t, np.ndarray):
                out.append(tensor(t[indices], device=device))
            else:
                rows = t.detach()[tensor(indices, device=t.device)]
                out.append(rows if rows.device == device else rows.to(device))
        return tuple(out)


def _collate(samples: list, device, indices) -> tuple:
    """A list of samples (tuples, arrays, tensors or numbers) as a tuple of batched tensors;
    ``indices`` are the samples' indices in the dataset (for the error message)."""
    first = samples[0]
    fields = len(first) if isinstance(first, tuple) else None
    columns = zip(*samples) if fields is not None else [samples]
    out = []
    for field, column in enumerate(columns):
        rows = [v.numpy() if isinstance(v, Tensor) else np.asarray(v) for v in column]
        odd = next((k for k, row in enumerate(rows) if row.shape != rows[0].shape), None)
        if odd is not None:  # as PyTorch's collate: which samples, which shapes
            where = f" (field {field} of each sample)" if fields is not None else ""
            raise RuntimeError(
                f"DataLoader: the samples of a batch must have one shape to be stacked, but "
                f"sample {int(indices[0])} has shape {rows[0].shape} and sample "
                f"{int(indices[odd])} has {rows[odd].shape}{where}; pad them to one shape "
                f"or use batch_size=1")
        out.append(tensor(np.stack(rows), device=device))
    return tuple(out)


def shard_indices(order: np.ndarray, rank: int, world_size: int) -> np.ndarray:
    """Rank ``rank``'s part of ``order``, padded by wrapping as DistributedSampler pads it."""
    per_rank = math.ceil(len(order) / world_size)
    total = per_rank * world_size
    if total > len(order):
        order = np.resize(order, total)  # repeats order from its start, as PyTorch's padding
    return order[rank:total:world_size]


class DataLoader:
    """Batches of ``dataset`` as tuples of tensors on the current device (``fnn.get_device()``).

    ``seed=None`` draws a seed from fastnn's host generator (``fnn.manual_seed``
    reproduces it). Each ``iter(loader)`` is a new epoch (``set_epoch`` sets
    which); ``len(loader)`` is the number of batches per epoch, as PyTorch's.
    """

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, seed=None,
                 shard=None):
        if not (hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__")):
            raise TypeError(f"DataLoader: dataset must have __len__ and __getitem__ (e.g. a "
                            f"TensorDataset), got {type(dataset).__name__}")
        self.dataset = dataset
        self.batch_size = integer("DataLoader", "batch_size", batch_size, 1)
        for name, flag in (("shuffle", shuffle), ("drop_last", drop_last)):
            if not isinstance(flag, (bool, np.bool_)):
                raise TypeError(f"DataLoader: {name} must be True or False, got {flag!r}")
        self.shuffle, self.drop_last = bool(shuffle), bool(drop_last)
        self.seed = (int(host_rng().integers(2**31)) if seed is None
                     else integer("DataLoader", "seed", seed, 0))
        self.rank, self.world_size = _check_shard(shard)
        self.epoch, self.position, self._resumed = 0, 0, False

    @property
    def shard(self):
        """``(rank, world_size)``, or None for an unsharded loader."""
        return None if self.world_size == 1 else (self.rank, self.world_size)

    def num_samples(self) -> int:
        """Samples this loader (this rank) gives per epoch."""
        return math.ceil(len(self.dataset) / self.world_size)

    def __len__(self) -> int:
        n = self.num_samples()
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)

    def indices(self, epoch: int | None = None) -> np.ndarray:
        """The sample indices of ``epoch`` (default: the current one), in the order given."""
        epoch = self.epoch if epoch is None else integer("DataLoader", "epoch", epoch, 0)
        n = len(self.dataset)
        order = (np.random.default_rng([self.seed, epoch]).permutation(n) if self.shuffle
                 else np.arange(n))
        if self.world_size > 1:
            order = shard_indices(order, self.rank, self.world_size)
        return order.astype(np.int64)

    def set_epoch(self, epoch: int) -> None:
        """Start epoch ``epoch`` at its first batch on the next ``iter`` (DistributedSampler's)."""
        self.epoch, self.position = integer("DataLoader", "epoch", epoch, 0), 0
        self._resumed = True

    def __iter__(self):
        if self.position and not self._resumed:  # the last epoch was broken off: a new one
            self.epoch, self.position = self.epoch + 1, 0
        self._resumed = False
        return self._batches()

    def _batches(self):
        order, device = self.indices(), get_device()
        stop = len(self) * self.batch_size
        for start in range(self.position * self.batch_size, stop, self.batch_size):
            batch = order[start:start + self.batch_size]
            if hasattr(self.dataset, "take"):
                out = self.dataset.take(batch, device)
            else:
                out = _collate([self.dataset[int(i)] for i in batch], device, batch)
            self.position += 1
            yield out
        self.epoch, self.position = self.epoch + 1, 0

    def state_dict(self) -> dict:
        """``{"seed", "epoch", "position"}``: where the loader stands, as integers."""
        return {"seed": self.seed, "epoch": self.epoch, "position": self.position}

    def load_state_dict(self, state) -> None:
        """Continue from ``state`` (from :meth:`state_dict`) at the next ``iter``."""
        if not isinstance(state, dict) or {"seed", "epoch", "position"} - set(state):
            raise ValueError(f"DataLoader.load_state_dict: expected a dict with seed, epoch and "
                             f"position (from DataLoader.state_dict()), got {state!r}")
        values = {k: np.asarray(state[k]).item() if isinstance(state[k], np.ndarray) else state[k]
                  for k in ("seed", "epoch", "position")}
        seed = integer("DataLoader.load_state_dict", "seed", values["seed"], 0)
        epoch = integer("DataLoader.load_state_dict", "epoch", values["epoch"], 0)
        position = integer("DataLoader.load_state_dict", "position", values["position"], 0)
        if position > len(self):
            raise ValueError(f"DataLoader.load_state_dict: position {position} is past the "
                             f"{len(self)} batches of an epoch; the state is from another loader")
        self.seed, self.epoch, self.position, self._resumed = seed, epoch, position, True

    def __repr__(self) -> str:
        shard = "" if self.world_size == 1 else f", shard={self.shard}"
        return (f"DataLoader({len(self.dataset)} samples, batch_size={self.batch_size}, "
                f"shuffle={self.shuffle}, drop_last={self.drop_last}, seed={self.seed}{shard})")


def _check_shard(shard) -> tuple[int, int]:
    if shard is None:
        return 0, 1
    try:
        rank, world_size = shard
    except (TypeError, ValueError):
        raise TypeError(f"DataLoader: shard must be a pair (rank, world_size), got {shard!r}"
                        ) from None
    for name, value in (("rank", rank), ("world_size", world_size)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"DataLoader: shard {name} must be an integer, got {value!r}")
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"DataLoader: shard=(rank, world_size) needs world_size >= 1 and "
                         f"0 <= rank < world_size, got {shard!r}")
    return int(rank), int(world_size)
