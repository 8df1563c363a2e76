"""Datasets as PyTorch's ``torch.utils.data`` has them: the base classes, TensorDataset,
Subset, ConcatDataset, ChainDataset, StackDataset and random_split.

A *map-style* dataset is any object with ``__len__`` and ``__getitem__`` (a subclass of
:class:`Dataset` or not, a PyTorch dataset too); an *iterable* one subclasses
:class:`IterableDataset` and defines ``__iter__``. A map-style dataset may also define
``__getitems__(indices)``, a batch's samples in one call: the DataLoader then fetches each
batch with it, as PyTorch's does (Subset and StackDataset pass it on).
"""

from __future__ import annotations

import bisect
import math
import numbers

import numpy as np

from fastnn.ops.tensor import Tensor, host_rng, tensor


class Dataset:
    """Base class of map-style datasets: a subclass defines ``__getitem__`` (and
    ``__len__``, which samplers need). ``a + b`` concatenates, as in PyTorch."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} is a Dataset without __getitem__; "
                                  "define __getitem__(self, index) (and __len__)")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """Base class of iterable datasets: a subclass defines ``__iter__``. With worker
    processes every worker iterates its own copy; split the stream with
    :func:`fastnn.data.get_worker_info` as in PyTorch."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} is an IterableDataset without "
                                  "__iter__; define __iter__(self)")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
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
        return tuple(t[index] for t in self.tensors)

    def take_batch(self, indices: np.ndarray, device) -> list:
        """The samples at ``indices`` (int64) as one batch of tensors on ``device``: what
        the default collate makes of them (a list, as PyTorch's), in one gather each."""
        out = []
        for t in self.tensors:
            if isinstance(t, np.ndarray):
                out.append(tensor(t[indices], device=device))
            else:
                rows = t.detach()[tensor(indices, device=t.device)]
                out.append(rows if rows.device == device else rows.to(device))
        return out


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = [_index("Subset", i) for i in np.asarray(indices).reshape(-1).tolist()]

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, index):
        if isinstance(index, list):
            return [self.dataset[self.indices[i]] for i in index]
        return self.dataset[self.indices[index]]

    def __getitems__(self, indices: list) -> list:
        """A batch's samples, through the dataset's own ``__getitems__`` when it has one."""
        return get_items(self.dataset, [self.indices[i] for i in indices])


class ConcatDataset(Dataset):
    """Map-style datasets one after another; negative indices count from the end."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: give at least one dataset")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset: an IterableDataset cannot be indexed; "
                                "concatenate iterable datasets with ChainDataset")
        self.cumulative_sizes = np.cumsum([len(d) for d in self.datasets]).tolist()

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        index = _index("ConcatDataset", index)
        if index < 0:
            if -index > len(self):
                raise IndexError(f"ConcatDataset: index {index} is out of range for "
                                 f"{len(self)} samples")
            index += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, index)
        if which == len(self.datasets):
            raise IndexError(f"ConcatDataset: index {index} is out of range for "
                             f"{len(self)} samples")
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


class ChainDataset(IterableDataset):
    """Iterable datasets one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)

    def __iter__(self):
        for d in self.datasets:
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)


class StackDataset(Dataset):
    """Datasets of one length side by side, as PyTorch's: ``StackDataset(a, b)[i]`` is
    ``(a[i], b[i])``; ``StackDataset(x=a, y=b)[i]`` is ``{"x": a[i], "y": b[i]}``."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("StackDataset: give the datasets as positional arguments (tuple "
                             "samples) or as keyword arguments (dict samples), not both")
        if not args and not kwargs:
            raise ValueError("StackDataset: give at least one dataset")
        self.datasets = args if args else kwargs
        parts = args if args else tuple(kwargs.values())
        sizes = [len(d) for d in parts]
        if len(set(sizes)) != 1:
            raise ValueError(f"StackDataset: the datasets' lengths differ {sizes}; each must "
                             "hold one item per sample")
        self._length = sizes[0]

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {key: d[index] for key, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list) -> list:
        """A batch's samples, each part through its dataset's ``__getitems__`` if any."""
        if isinstance(self.datasets, dict):
            parts = {key: _items_of(key, d, indices) for key, d in self.datasets.items()}
            return [{key: part[k] for key, part in parts.items()} for k in range(len(indices))]
        parts = [_items_of(n, d, indices) for n, d in enumerate(self.datasets)]
        return [tuple(part[k] for part in parts) for k in range(len(indices))]


def get_items(dataset, indices: list) -> list:
    """The samples of a map-style ``dataset`` at ``indices``, as PyTorch's DataLoader fetches
    a batch: one ``dataset.__getitems__(indices)`` call when the dataset has that method
    (a batched read, as Hugging Face datasets have), else ``dataset[i]`` for each."""
    many = getattr(dataset, "__getitems__", None)
    if callable(many):
        return many(indices)
    return [dataset[i] for i in indices]


def _items_of(name, dataset, indices: list) -> list:
    items = get_items(dataset, indices)
    if len(items) != len(indices):
        raise ValueError(f"StackDataset: dataset {name!r}.__getitems__ returned {len(items)} "
                         f"samples for {len(indices)} indices; it must return one per index")
    return items


def numpy_rng(op: str, generator) -> np.random.Generator:
    """The NumPy generator behind ``generator=``: None is fastnn's (``fnn.manual_seed``)."""
    if generator is None:
        return host_rng()
    if isinstance(generator, np.random.Generator):
        return generator
    inner = getattr(generator, "rng", None)  # an fnn.Generator (torch.Generator's spelling)
    if isinstance(inner, np.random.Generator):
        return inner
    raise TypeError(f"{op}: generator must be None (fastnn's generator, seeded by "
                    f"fnn.manual_seed), an fnn.Generator or a numpy.random.Generator, got "
                    f"{type(generator).__name__}")


def random_split(dataset, lengths, generator=None) -> list:
    """``dataset`` split at random into :class:`Subset` s of ``lengths``: counts that sum to
    ``len(dataset)``, or fractions that sum to 1 (the remainder handed out round-robin, as
    PyTorch)."""
    n = len(dataset)
    lengths = list(lengths)
    if not lengths:
        raise ValueError("random_split: lengths is empty; give counts or fractions")
    if math.isclose(sum(lengths), 1.0) and sum(lengths) <= 1 and not all(
            isinstance(x, numbers.Integral) for x in lengths):
        for i, frac in enumerate(lengths):
            if not 0 <= frac <= 1:
                raise ValueError(f"random_split: fraction at index {i} is {frac}, not in [0, 1]")
        counts = [int(math.floor(n * frac)) for frac in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    for i, length in enumerate(lengths):
        if isinstance(length, bool) or not isinstance(length, numbers.Integral) or length < 0:
            raise ValueError(f"random_split: length at index {i} is {length!r}; give "
                             "non-negative integers or fractions that sum to 1")
    if sum(lengths) != n:
        raise ValueError(f"random_split: the lengths sum to {sum(lengths)}, but the dataset "
                         f"has {n} samples")
    order = numpy_rng("random_split", generator).permutation(n).tolist()
    out, start = [], 0
    for length in lengths:
        out.append(Subset(dataset, order[start:start + length]))
        start += length
    return out


def _index(op: str, index) -> int:
    if isinstance(index, bool) or not isinstance(index, numbers.Integral):
        raise TypeError(f"{op}: indices must be integers, got {index!r}")
    return int(index)
