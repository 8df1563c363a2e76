"""Samplers as PyTorch's: which dataset indices a :class:`~fastnn.data.DataLoader` takes,
and in which order (``sampler=``), or in which batches (``batch_sampler=``)."""

from __future__ import annotations

import numpy as np

from fastnn.api.args import integer
from fastnn.data.dataset import numpy_rng


class Sampler:
    """Base class: a subclass defines ``__iter__`` over dataset indices (and ``__len__``)."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} is a Sampler without __iter__")


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation of the indices, or ``num_samples`` draws with ``replacement``;
    each ``iter`` draws anew from ``generator`` (default: fastnn's, ``fnn.manual_seed``)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        if not isinstance(replacement, bool):
            raise TypeError(f"RandomSampler: replacement must be True or False, got "
                            f"{replacement!r}")
        self.data_source, self.replacement, self.generator = data_source, replacement, generator
        self._num_samples = (None if num_samples is None
                             else integer("RandomSampler", "num_samples", num_samples, 1))

    @property
    def num_samples(self) -> int:
        """How many indices an epoch gives."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n, rng = len(self.data_source), numpy_rng("RandomSampler", self.generator)
        return _draws(rng, n, self.num_samples, self.replacement)

    def __len__(self) -> int:
        return self.num_samples


class LoaderOrder(RandomSampler):
    """A DataLoader's own shuffled order as its ``sampler`` attribute, where PyTorch's loader
    holds a RandomSampler: the length, and the indices of the loader's current epoch."""

    def __init__(self, loader):
        super().__init__(loader.dataset, generator=loader.generator)
        self.loader = loader

    def __iter__(self):
        return iter(self.loader.indices().tolist())

    def __len__(self) -> int:
        return self.loader.num_samples()


def _draws(rng, n: int, num_samples: int, replacement: bool):
    """``num_samples`` indices below ``n``, drawn lazily a chunk at a time, as PyTorch's
    sampler draws them: an epoch of ``num_samples=int(1e10)`` (minGPT's trainer) never
    holds more than one chunk."""
    left = num_samples
    while left > 0 and n > 0:
        chunk = rng.integers(0, n, min(left, 32)) if replacement else rng.permutation(n)[:left]
        left -= len(chunk)
        yield from chunk.tolist()


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in a random order, drawn anew each epoch."""

    def __init__(self, indices, generator=None):
        self.indices, self.generator = list(indices), generator

    def __iter__(self):
        order = numpy_rng("SubsetRandomSampler", self.generator).permutation(len(self.indices))
        return iter([self.indices[i] for i in order])

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        w = np.asarray(weights, dtype=np.float64).reshape(-1)
        if w.size == 0 or (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
            raise ValueError("WeightedRandomSampler: weights must be finite, non-negative and "
                             "not all zero")
        self.weights, self.replacement, self.generator = w, bool(replacement), generator
        self.num_samples = integer("WeightedRandomSampler", "num_samples", num_samples, 1)
        if not replacement and self.num_samples > int((w > 0).sum()):
            raise ValueError(f"WeightedRandomSampler: cannot draw {self.num_samples} samples "
                             f"without replacement from {int((w > 0).sum())} non-zero weights")

    def __iter__(self):
        rng = numpy_rng("WeightedRandomSampler", self.generator)
        drawn = rng.choice(len(self.weights), self.num_samples, replace=self.replacement,
                           p=self.weights / self.weights.sum())
        return iter(drawn.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler``; the last one shorter unless
    ``drop_last``."""

    def __init__(self, sampler, batch_size, drop_last):
        self.sampler = sampler
        self.batch_size = integer("BatchSampler", "batch_size", batch_size, 1)
        if not isinstance(drop_last, bool):
            raise TypeError(f"BatchSampler: drop_last must be True or False, got {drop_last!r}")
        self.drop_last = drop_last

    def __iter__(self):
        return batched(self.sampler, self.batch_size, self.drop_last)

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


def batched(indices, batch_size: int, drop_last: bool):
    """Lists of ``batch_size`` consecutive items of ``indices``; the last one shorter
    unless ``drop_last``."""
    batch = []
    for index in indices:
        batch.append(index)
        if len(batch) == batch_size:
            yield batch
            batch = []
    if batch and not drop_last:
        yield batch
