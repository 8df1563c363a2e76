"""PyTorch's ``torch.utils.data.distributed``: :class:`DistributedSampler`, and the split of
an epoch's order over ranks that it shares with ``DataLoader(shard=...)``.

The split, as PyTorch's: an order of ``n`` indices is padded to a multiple of
``num_replicas`` by repeating it from its start (or, with ``drop_last``, cut to
one), and rank ``r`` takes positions ``r, r + num_replicas, ...``.

The shuffled order is PyTorch's bit for bit: ``torch.randperm(n, generator=g)``
with ``g.manual_seed(seed + epoch)`` is a Fisher-Yates shuffle driven by a
Mersenne Twister (MT19937) seeded with the low 32 bits of ``seed + epoch``,
which NumPy's ``MT19937`` reproduces.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from fastnn.api.args import integer
from fastnn.data.sampler import Sampler

# Set by fastnn.distributed (a layer above) when it is imported: a function giving its
# communicator, or None before fastnn.distributed.init(). Data never imports distributed.
_world_provider = None

# torch's randperm draws 32-bit numbers below this size, 64-bit ones (two draws) above it
_RANDOM64_FROM = (2**32 - 1) // 20


def register_world(provider) -> None:
    """Let :class:`DistributedSampler` default ``num_replicas`` and ``rank`` from
    ``provider()`` (an object with ``size`` and ``rank``, or None when there is none yet)."""
    global _world_provider
    _world_provider = provider


def shard_size(n: int, num_replicas: int, drop_last: bool = False) -> int:
    """How many of ``n`` indices each of ``num_replicas`` ranks gets (DistributedSampler's
    ``num_samples``): ``ceil(n / num_replicas)``, or with ``drop_last`` (and ``n`` not a
    multiple) ``ceil((n - num_replicas) / num_replicas)``."""
    if drop_last and n % num_replicas:
        return math.ceil((n - num_replicas) / num_replicas)
    return math.ceil(n / num_replicas)


def shard_indices(order: np.ndarray, rank: int, num_replicas: int,
                  drop_last: bool = False) -> np.ndarray:
    """Rank ``rank``'s part of ``order``: padded by wrapping (or cut, with ``drop_last``) to a
    multiple of ``num_replicas``, then every ``num_replicas``-th index from ``rank``."""
    total = shard_size(len(order), num_replicas, drop_last) * num_replicas
    if total > len(order):
        order = np.resize(order, total)  # repeats order from its start, as PyTorch's padding
    return order[rank:total:num_replicas]


def torch_randperm(n: int, seed: int) -> np.ndarray:
    """``torch.randperm(n, generator=torch.Generator().manual_seed(seed))`` (on cpu), as int64.

    PyTorch swaps ``r[i]`` with ``r[i + draw % (n - i)]`` for ``i = 0 .. n - 2``, a draw
    being one 32-bit MT19937 output (two, high word first, for very large ``n``).
    """
    bits = np.random.MT19937()
    bits._legacy_seeding(seed & 0xFFFFFFFF)  # MT19937's own seeding, as torch's generator
    steps = max(n - 1, 0)
    if n < _RANDOM64_FROM:
        draws = bits.random_raw(steps).astype(np.uint64)
    else:
        pairs = bits.random_raw(2 * steps).astype(np.uint64).reshape(-1, 2)
        draws = (pairs[:, 0] << np.uint64(32)) | pairs[:, 1]
    # NOTE: the swaps are sequential, so this is a Python loop: about 1 s of CPU per million
    # indices (torch's C loop: 0.035 s), once per epoch
    targets = (draws % (n - np.arange(steps, dtype=np.uint64))).astype(np.int64)
    targets += np.arange(steps, dtype=np.int64)
    order = list(range(n))
    for i, j in enumerate(targets.tolist()):  # sequential: each swap sees the ones before
        order[i], order[j] = order[j], order[i]
    return np.asarray(order, dtype=np.int64)


class DistributedSampler(Sampler):
    """A rank's part of a dataset's indices, as ``torch.utils.data.DistributedSampler``.

    Every epoch, the indices (shuffled with ``seed + epoch`` when ``shuffle``, in
    PyTorch's very order) are split over ``num_replicas`` ranks as described in the
    module's docstring; each rank gets ``len(sampler)`` of them. Call
    :meth:`set_epoch` before each epoch for a new order. ``num_replicas`` and ``rank``
    default to the size and rank of :func:`fastnn.distributed.init`'s communicator;
    before ``init()`` they must be given.
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None or rank is None:
            world = _world_provider() if _world_provider is not None else None
            if world is None:
                raise ValueError(
                    "DistributedSampler: num_replicas and rank default to fastnn.distributed's "
                    "communicator, which is not initialised; call fastnn.distributed.init() "
                    "first, or pass num_replicas= and rank=")
            num_replicas = world.size if num_replicas is None else num_replicas
            rank = world.rank if rank is None else rank
        self.num_replicas = integer("DistributedSampler", "num_replicas", num_replicas, 1)
        if isinstance(rank, bool) or not isinstance(rank, numbers.Integral):
            raise TypeError(f"DistributedSampler: rank must be an integer, got {rank!r}")
        if not 0 <= rank < self.num_replicas:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {self.num_replicas - 1}]")
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
            raise TypeError(f"DistributedSampler: seed must be an integer, got {seed!r}")
        self.dataset, self.rank, self.seed, self.epoch = dataset, int(rank), int(seed), 0
        self.shuffle, self.drop_last = bool(shuffle), bool(drop_last)
        self.num_samples = shard_size(len(dataset), self.num_replicas, self.drop_last)
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self):
        n = len(self.dataset)
        order = (torch_randperm(n, self.seed + self.epoch) if self.shuffle
                 else np.arange(n, dtype=np.int64))
        return iter(shard_indices(order, self.rank, self.num_replicas, self.drop_last).tolist())

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use ``epoch``'s order on the next ``iter`` (the same on every rank)."""
        if isinstance(epoch, bool) or not isinstance(epoch, numbers.Integral):
            raise TypeError(f"DistributedSampler.set_epoch: epoch must be an integer, got "
                            f"{epoch!r}")
        self.epoch = int(epoch)
