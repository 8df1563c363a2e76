"""Batches for training: :class:`TensorDataset` and :class:`DataLoader`, as PyTorch's.

A loader's order is a pure function of ``(seed, epoch)``: epoch ``e`` shuffles
with ``numpy.random.default_rng([seed, e]).permutation(n)``. So its whole state
is three integers (seed, epoch, batches already given in that epoch), which a
checkpoint holds (:meth:`DataLoader.state_dict`), and a loader restored from it
continues with the very batches an uninterrupted one would give.

``shard=(rank, world_size)`` splits the loader's own order of every epoch as
``torch.utils.data.DistributedSampler(..., drop_last=False)`` splits its order
(:func:`fastnn.data.distributed.shard_indices`): padded to a multiple of
``world_size`` by repeating its start, rank ``r`` taking positions ``r,
r + world_size, ...``; every rank gets ``ceil(n / world_size)`` samples. The
loader's ``drop_last`` then applies to the rank's own batches, as in PyTorch.
The shuffled order itself is the loader's (above), not torch's ``randperm``; for
PyTorch's very indices pass ``sampler=DistributedSampler(dataset, ...)``.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from fastnn.api.args import integer
from fastnn.api.device import get_device

# default_collate and get_worker_info: also here, as in torch.utils.data.dataloader, the
# module a PyTorch script imports them from (fastnn.utils.data.dataloader is this one)
from fastnn.data.collate import default_collate, default_convert, to_device  # noqa: F401
from fastnn.data.dataset import TensorDataset
from fastnn.data.distributed import shard_indices, shard_size
from fastnn.data.sampler import BatchSampler, LoaderOrder, SequentialSampler, batched
from fastnn.data.workers import fetch, get_worker_info  # noqa: F401
from fastnn.ops.tensor import host_rng


class DataLoader:
    """Batches of ``dataset`` on the current device (``fnn.get_device()``), as PyTorch's
    ``torch.utils.data.DataLoader``, with its arguments.

    ``dataset`` is map-style (any object with ``__len__`` and ``__getitem__``, a PyTorch
    dataset too) or an :class:`~fastnn.data.IterableDataset`. With the loader's own order
    (no ``sampler``), ``seed=None`` draws each epoch's order from ``generator`` (default:
    fastnn's host generator, ``fnn.manual_seed``) as that epoch starts, as PyTorch's
    RandomSampler does, and ``seed=`` fixes every epoch's order; each ``iter(loader)`` is a
    new epoch (``set_epoch`` sets which), ``shard=(rank, world_size)`` gives this rank its part, and
    :meth:`state_dict` resumes mid-epoch exactly. ``num_workers=N`` loads batches in N
    worker processes (:mod:`fastnn.data.workers`); ``pin_memory`` is accepted and does
    nothing (host arrays are already where every backend copies from).
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True, seed=None, shard=None):
        self.iterable = _is_iterable(dataset)
        if not self.iterable and not hasattr(dataset, "__getitem__"):
            raise TypeError(f"DataLoader: dataset must have __len__ and __getitem__ (e.g. a "
                            f"TensorDataset) or be an IterableDataset, got "
                            f"{type(dataset).__name__}")
        self.dataset = dataset
        for name, flag in (("shuffle", shuffle), ("drop_last", drop_last),
                           ("pin_memory", pin_memory), ("persistent_workers", persistent_workers)):
            if flag is not None and not isinstance(flag, (bool, np.bool_)):
                raise TypeError(f"DataLoader: {name} must be True or False, got {flag!r}")
        self.shuffle, self.drop_last = bool(shuffle), bool(drop_last)
        self.batch_size = (None if batch_size is None
                           else integer("DataLoader", "batch_size", batch_size, 1))
        _check_exclusive(self, sampler, batch_sampler, shard)
        self._sampler, self._batch_sampler = sampler, batch_sampler
        self.collate_fn, self.pin_memory = collate_fn, bool(pin_memory)
        self.pin_memory_device, self.in_order = pin_memory_device, in_order
        self.num_workers = integer("DataLoader", "num_workers", num_workers, 0)
        if self.num_workers == 0 and (prefetch_factor is not None or persistent_workers):
            raise ValueError("DataLoader: prefetch_factor and persistent_workers need "
                             "num_workers > 0 (they describe worker processes)")
        # None without workers, as PyTorch's (code that rebuilds a loader from its
        # attributes passes it back, and a number there needs workers)
        self.prefetch_factor = (None if self.num_workers == 0 else 2 if prefetch_factor is None
                                else integer("DataLoader", "prefetch_factor", prefetch_factor, 1))
        self.persistent_workers = bool(persistent_workers)
        if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real) or timeout < 0:
            raise ValueError(f"DataLoader: timeout must be a number of seconds >= 0, got "
                             f"{timeout!r}")
        self.timeout, self.worker_init_fn = float(timeout), worker_init_fn
        self.multiprocessing_context, self.generator = multiprocessing_context, generator
        self.rank, self.world_size = _check_shard(shard)
        # seed=None without a shard is PyTorch's rule: each epoch's order is drawn from
        # ``generator`` (fastnn's host generator by default) when the epoch starts, as
        # PyTorch's RandomSampler draws at each iter, so re-seeding it (torch.manual_seed,
        # g.manual_seed) before an epoch gives that epoch's order again. A shard's ranks
        # must agree on one order, so they keep one seed, drawn here.
        self._draws = seed is None and shard is None
        self._seed = (None if self._draws else self._draw_seed() if seed is None
                      else integer("DataLoader", "seed", seed, 0))
        self._seed_used = False
        self.epoch, self.position, self._resumed, self._pool = 0, 0, False, None

    def _draw_seed(self) -> int:
        return int(_rng_of(self.generator).integers(2**31))

    @property
    def seed(self) -> int:
        """The seed of the current epoch's order (with seed=None, drawn when first needed)."""
        if self._seed is None:
            self._seed = self._draw_seed()
        return self._seed

    @seed.setter
    def seed(self, value: int) -> None:
        self._seed, self._seed_used = integer("DataLoader", "seed", value, 0), False

    @property
    def sampler(self):
        """The ``sampler=`` given, else (as PyTorch's loader) one over the loader's own order:
        a RandomSampler when it shuffles, a SequentialSampler when not; None for an iterable
        dataset."""
        if self._sampler is not None or self.iterable:
            return self._sampler
        return self._kept("sampler", (self.shuffle, self.dataset), lambda: (
            LoaderOrder(self) if self.shuffle else SequentialSampler(self.dataset)))

    @property
    def batch_sampler(self):
        """The ``batch_sampler=`` given, else (as PyTorch's loader) a BatchSampler over
        :attr:`sampler`; None without batching (``batch_size=None``) or for an iterable
        dataset."""
        if self._batch_sampler is not None or self.batch_size is None or self.iterable:
            return self._batch_sampler
        sampler = self.sampler
        return self._kept("batch_sampler", (sampler, self.batch_size, self.drop_last),
                          lambda: BatchSampler(sampler, self.batch_size, self.drop_last))

    def _kept(self, name: str, settings: tuple, make):
        """The loader's own sampler ``name``, made once and kept while the settings it was
        made from stay (PyTorch's loader holds one object: ``loader.sampler is
        loader.sampler``, and what a script sets on it stays)."""
        kept = self.__dict__.setdefault("_made", {}).get(name)
        if kept is None or len(kept[0]) != len(settings) or any(
                a is not b and a != b for a, b in zip(kept[0], settings)):
            kept = self._made[name] = (settings, make())
        return kept[1]

    @property
    def shard(self):
        """``(rank, world_size)``, or None for an unsharded loader."""
        return None if self.world_size == 1 else (self.rank, self.world_size)

    def num_samples(self) -> int:
        """Samples this loader (this rank) gives per epoch."""
        if self._sampler is not None:
            return len(self._sampler)
        return shard_size(len(self.dataset), self.world_size)

    def __len__(self) -> int:
        if self._batch_sampler is not None:
            return len(self._batch_sampler)
        n = self.num_samples()
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)

    def indices(self, epoch: int | None = None) -> np.ndarray:
        """The sample indices of ``epoch`` (default: the current one) in the loader's own
        order (without a ``sampler``); with ``seed=None`` the current epoch's, whose seed
        alone decides it."""
        epoch = self.epoch if epoch is None else integer("DataLoader", "epoch", epoch, 0)
        n = len(self.dataset)
        if not self.shuffle:
            order = np.arange(n)
        else:
            key = self.seed if self._draws else [self.seed, epoch]
            order = np.random.default_rng(key).permutation(n)
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
        if self._draws and self._seed_used:
            self._seed = None  # a new epoch draws its seed when it first needs it
        self._resumed, self._seed_used = False, True
        return self._epoch()

    def _tasks(self):
        """This epoch's batches of dataset indices (lists; ints when batch_size is None),
        the ones already given skipped; None for an iterable dataset."""
        if self.iterable:
            return None
        if self._batch_sampler is not None:
            batches = iter(self._batch_sampler)
        else:
            order = (iter(self._sampler) if self._sampler is not None
                     else iter(self.indices().tolist()))
            if self.batch_size is None:
                batches = order
            else:
                batches = batched(order, self.batch_size, self.drop_last)
        for _ in range(self.position):
            next(batches, None)
        return batches

    def _epoch(self):
        device, tasks = get_device(), self._tasks()
        batches = (self._in_process(tasks, device) if self.num_workers == 0
                   else self._from_workers(tasks, device))
        for batch in batches:
            self.position += 1
            yield batch
        self.epoch, self.position = self.epoch + 1, 0

    def _spec(self) -> tuple:
        """What :func:`fastnn.data.workers.fetch` needs, in a worker or in this process."""
        return (self.dataset, self.batch_size, self.drop_last, self.collate_fn, self.iterable)

    def _finish(self, data, device):
        """A fetched batch as the loader yields it: the default collate's host arrays as
        tensors on ``device``; a ``collate_fn``'s result as it is."""
        if self.collate_fn is not None:
            return data
        if self.batch_size is None and self._batch_sampler is None:
            return default_convert(data, device)
        return to_device(data, device)

    def _in_process(self, tasks, device):
        spec = self._spec()
        if self.iterable:
            it = iter(self.dataset)
            while True:
                try:
                    data = fetch(spec, it, None)
                except StopIteration:
                    return
                yield self._finish(data, device)
        batched = not (self.batch_size is None and self._batch_sampler is None)
        # a TensorDataset gathers a batch on its device in one call (not a subclass with
        # samples of its own making)
        take = (batched and self.collate_fn is None and isinstance(self.dataset, TensorDataset)
                and type(self.dataset).__getitem__ is TensorDataset.__getitem__
                and not hasattr(self.dataset, "__getitems__"))
        for task in tasks:
            if take:
                yield self.dataset.take_batch(np.asarray(task, dtype=np.int64), device)
            else:
                yield self._finish(fetch(spec, None, task), device)

    def _from_workers(self, tasks, device):
        from fastnn.data.dataset import numpy_rng
        from fastnn.data.workers import WorkerPool

        pool = self._pool
        if pool is None or pool.closed:
            base_seed = int(numpy_rng("DataLoader", self.generator).integers(2**62))
            pool = WorkerPool(self._spec(), self.num_workers, base_seed, self.worker_init_fn,
                              self.multiprocessing_context)
            if self.persistent_workers:
                self._pool = pool
        try:
            for data in pool.epoch(tasks, self.prefetch_factor, self.timeout):
                yield self._finish(data, device)
        finally:
            if not self.persistent_workers:
                pool.shutdown()

    def __del__(self):
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown()

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
        workers = f", num_workers={self.num_workers}" if self.num_workers else ""
        size = "iterable" if self.iterable else f"{len(self.dataset)} samples"
        return (f"DataLoader({size}, batch_size={self.batch_size}, shuffle={self.shuffle}, "
                f"drop_last={self.drop_last}, seed={self.seed}{shard}{workers})")


def _is_iterable(dataset) -> bool:
    from fastnn.data.dataset import IterableDataset

    if isinstance(dataset, IterableDataset):
        return True
    return any(c.__name__ == "IterableDataset" and c.__module__.startswith("torch")
               for c in type(dataset).__mro__)


def _check_exclusive(loader, sampler, batch_sampler, shard) -> None:
    """PyTorch's rules for which of shuffle, sampler, batch_sampler and drop_last go
    together (and fastnn's shard, which is the loader's own sampler)."""
    if loader.iterable:
        for name, value in (("shuffle", loader.shuffle or None), ("sampler", sampler),
                            ("batch_sampler", batch_sampler), ("shard", shard)):
            if value is not None:
                raise ValueError(f"DataLoader with an IterableDataset: expected unspecified "
                                 f"{name} option, but got {name}={value!r} (the dataset's "
                                 "__iter__ decides the order; split it with get_worker_info)")
        return
    if sampler is not None and loader.shuffle:
        raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle "
                         "(the sampler decides the order)")
    if batch_sampler is not None and (loader.batch_size != 1 or loader.shuffle
                                      or sampler is not None or loader.drop_last):
        raise ValueError("DataLoader: batch_sampler option is mutually exclusive with "
                         "batch_size, shuffle, sampler, and drop_last")
    if loader.batch_size is None and loader.drop_last:
        raise ValueError("DataLoader: batch_size=None option disables auto-batching and is "
                         "mutually exclusive with drop_last")
    if shard is not None and (sampler is not None or batch_sampler is not None):
        raise ValueError("DataLoader: shard= splits the loader's own order; with a sampler "
                         "or batch_sampler, shard inside the sampler instead")
    if not hasattr(loader.dataset, "__len__") and sampler is None and batch_sampler is None:
        raise TypeError(f"DataLoader: dataset must have __len__ and __getitem__ (e.g. a "
                        f"TensorDataset), got {type(loader.dataset).__name__}")

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


def _rng_of(generator):
    """fastnn's host generator, or ``generator``'s NumPy generator."""
    if generator is None:
        return host_rng()
    from fastnn.data.dataset import numpy_rng

    return numpy_rng("DataLoader", generator)
