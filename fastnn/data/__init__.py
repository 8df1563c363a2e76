"""Small real data sets for examples and tests, loaded as NumPy arrays.

``load(name)`` returns a :class:`ClassificationData`: float32 inputs, int64 class labels
in ``0 .. num_classes - 1``, a fixed train/held-out split, and inputs
standardised with statistics of the training part only (so nothing about the
held-out part leaks into training).

The rest is PyTorch's ``torch.utils.data``: the :class:`Dataset` and
:class:`IterableDataset` base classes, ``TensorDataset``, ``Subset``, ``ConcatDataset``,
``StackDataset``, ``random_split``, the samplers
(``DistributedSampler`` too), ``default_collate`` and ``DataLoader`` (with worker
processes); ``fastnn.utils.data`` is the same module under PyTorch's name.
"""

from __future__ import annotations

# PyTorch's name for the loader's module, torch.utils.data.dataloader
from fastnn.data import loader as dataloader  # noqa: F401
from fastnn.data.base import ClassificationData, MissingDataError
from fastnn.data.collate import default_collate, default_convert
from fastnn.data.dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from fastnn.data.digits import load_digits
from fastnn.data.distributed import DistributedSampler
from fastnn.data.loader import DataLoader
from fastnn.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from fastnn.data.trace import load_trace
from fastnn.data.workers import WorkerInfo, get_worker_info

LOADERS = {"digits": load_digits, "trace": load_trace}
"""Data-set name -> loader function, the names that :func:`load` accepts."""


def load(name: str, **kwargs) -> ClassificationData:
    """The data set called ``name`` (one of ``LOADERS``)."""
    try:
        loader = LOADERS[name]
    except KeyError:
        raise ValueError(
            f"unknown data set {name!r}; choose one of {', '.join(sorted(LOADERS))}"
        ) from None
    return loader(**kwargs)


__all__ = ["BatchSampler", "ChainDataset", "ClassificationData", "ConcatDataset", "DataLoader",
           "Dataset", "DistributedSampler", "IterableDataset", "LOADERS", "MissingDataError",
           "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset",
           "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "WorkerInfo",
           "default_collate", "default_convert", "get_worker_info", "load", "load_digits",
           "load_trace", "random_split"]
