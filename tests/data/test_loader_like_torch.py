"""DataLoader batches as PyTorch's: the batch's container type, datasets that are not
plain TensorDatasets, and StackDataset."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from fastnn.data import DataLoader, StackDataset, TensorDataset, default_collate

try:
    import torch
except ImportError:  # pragma: no cover - the assertions below hold without it
    torch = None


def test_tuple_samples_collate_to_a_list():
    """PyTorch's default_collate turns tuple samples into a list of batches (item
    assignment, ``isinstance(batch, list)``); a named tuple keeps its type."""
    batch = default_collate([(np.ones(2, np.float32), 1), (np.zeros(2, np.float32), 2)])
    assert type(batch) is list and len(batch) == 2
    np.testing.assert_array_equal(batch[0].numpy(), [[1, 1], [0, 0]])
    assert batch[1].tolist() == [1, 2]
    batch[0] = batch[0] * 2  # a list: assignable, as in PyTorch
    if torch is not None:
        ref = torch.utils.data.default_collate([(np.ones(2, np.float32), 1),
                                                (np.zeros(2, np.float32), 2)])
        assert type(ref) is type(batch)


def test_tensor_dataset_batches_are_lists():
    ds = TensorDataset(fnn.arange(10.0), fnn.arange(10))
    batches = list(DataLoader(ds, batch_size=4))
    assert [type(b) for b in batches] == [list] * 3
    assert batches[2][1].tolist() == [8, 9]
    assert batches[0][0].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_tensor_dataset_subclass_keeps_its_own_items():
    """A TensorDataset subclass with its own __getitem__ (an augmentation) is loaded through
    it, not through the plain dataset's one-gather fast path."""

    class Doubled(TensorDataset):
        def __getitem__(self, index):
            (x,) = super().__getitem__(index)
            return (x * 2,)

    got = [b[0].tolist() for b in DataLoader(Doubled(fnn.arange(4.0)), batch_size=2)]
    assert got == [[0.0, 2.0], [4.0, 6.0]]


def test_a_tensor_itself_as_the_dataset():
    """``DataLoader(tensor)`` indexes the tensor (a Tensor has a ``take`` method of its own,
    which the loader mistook for the TensorDataset's batch gather)."""
    g = fnn.Generator().manual_seed(0)
    batches = list(DataLoader(fnn.arange(6), batch_size=2, shuffle=True, generator=g))
    assert len(batches) == 3
    assert sorted(fnn.cat(batches).tolist()) == list(range(6))
    assert all(b.shape == (2,) for b in batches)


def test_stack_dataset():
    a, b = fnn.arange(3), fnn.arange(3) * 10
    s = StackDataset(a, b)
    assert len(s) == 3 and [int(v) for v in s[1]] == [1, 10]
    d = StackDataset(x=a, y=b)
    assert {k: int(v) for k, v in d[2].items()} == {"x": 2, "y": 20}
    batch = next(iter(DataLoader(d, batch_size=3)))
    assert batch["y"].tolist() == [0, 10, 20]
    with pytest.raises(ValueError, match="lengths differ"):
        StackDataset(a, fnn.arange(4))
    with pytest.raises(ValueError, match="not both"):
        StackDataset(a, y=b)
    if torch is not None:
        ref = torch.utils.data.StackDataset(x=torch.arange(3), y=torch.arange(3) * 10)
        assert len(ref) == len(d) and int(ref[2]["y"]) == int(d[2]["y"])


def _orders(loader_class, make_generator, reseed):
    """Two epochs of a shuffled loader, its generator re-seeded before each (the generator
    given to the loader, or the global one when make_generator gives None)."""
    g = make_generator()
    loader = loader_class(list(range(10)), batch_size=3, shuffle=True, generator=g)
    reseed(g)
    first = [b.tolist() for b in loader]
    reseed(g)
    return first, [b.tolist() for b in loader]


@pytest.mark.parametrize("own_generator", [True, False])
def test_reseeding_before_an_epoch_gives_its_order_again(own_generator):
    """As PyTorch's RandomSampler, a shuffled loader draws each epoch's order from its
    generator as the epoch starts: re-seeding the generator (or torch.manual_seed) after the
    loader was built repeats the order (the seed was once drawn when the loader was built)."""
    for lib, loader_class in ((fnn, DataLoader),
                              (torch, torch and torch.utils.data.DataLoader)):
        if lib is None:
            continue
        if own_generator:
            make, reseed = lib.Generator, lambda g: g.manual_seed(7)
        else:
            make, reseed = (lambda: None), (lambda g, lib=lib: lib.manual_seed(7))
        first, again = _orders(loader_class, make, reseed)
        assert first == again and sorted(sum(first, [])) == list(range(10))


STRING_BATCHES = [[(1, "a"), (2, "b")], ["a", "b"], [{"s": "a"}, {"s": "b"}], [[1, "a"], [2, "b"]]]


@pytest.mark.parametrize("samples", STRING_BATCHES)
def test_strings_collate_as_torchs(samples):
    """PyTorch's default_collate leaves strings as they came: a field of tuple samples is a
    tuple of strings, the top level or a dict field a list."""
    ours = default_collate(samples)
    if torch is not None:
        theirs = torch.utils.data.default_collate(samples)
        for mine, want in zip(ours if isinstance(ours, list) else [ours],
                              theirs if isinstance(theirs, list) else [theirs]):
            if isinstance(want, (tuple, list, str, dict)):
                assert type(mine) is type(want) and mine == want


NUMBER_BATCHES = [[1, 2.5], [2.5, 1], [1, 2], [True, False], [True, 2], [1.5, 2.5],
                  [np.int32(1), np.int32(2)], [np.float32(1), np.float32(2)], [1, np.float64(2.5)]]


@pytest.mark.parametrize("samples", NUMBER_BATCHES)
def test_numbers_collate_to_torchs_dtypes(samples):
    """PyTorch collates Python ints with ``torch.tensor(batch)`` (a float among them gives
    float32), Python floats as float64, NumPy scalars by their own dtype."""
    want = {"[1, 2.5]": "float32", "[2.5, 1]": "float64", "[1, 2]": "int64",
            "[True, False]": "bool", "[True, 2]": "int64", "[1.5, 2.5]": "float64",
            "[np.int32(1), np.int32(2)]": "int32", "[np.float32(1.0), np.float32(2.0)]":
            "float32", "[1, np.float64(2.5)]": "float64"}
    ours = default_collate(samples)
    assert ours.dtype == want[repr(samples)]
    if torch is not None:
        theirs = torch.utils.data.default_collate(samples)
        assert str(theirs.dtype) == "torch." + want[repr(samples)]
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


class _Batched:
    """A map-style dataset with a batched read whose samples differ from __getitem__'s,
    so that the test sees which one the loader called."""

    def __len__(self):
        return 7

    def __getitem__(self, i):
        return np.array([float(i)], np.float32)

    def __getitems__(self, indices):
        assert type(indices) is list
        return [np.array([10.0 * i], np.float32) for i in indices]


def _batched_datasets(data):
    base = _Batched()
    return {"plain": base, "subset": data.Subset(base, [6, 0, 2, 5]),
            "stack": data.StackDataset(base, base), "stack_dict": data.StackDataset(x=base)}


@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("which", ["plain", "subset", "stack", "stack_dict"])
def test_a_dataset_with_getitems_is_fetched_a_batch_at_a_time(which, num_workers):
    """PyTorch's loader fetches a batch with ``dataset.__getitems__(indices)`` when the
    dataset has it (Hugging Face datasets do); Subset and StackDataset pass it on."""
    import fastnn.data as data

    def flat(batch):
        if isinstance(batch, dict):
            return {k: flat(v) for k, v in batch.items()}
        if isinstance(batch, list):
            return [flat(v) for v in batch]
        return batch.numpy().tolist()

    ours = [flat(b) for b in DataLoader(_batched_datasets(data)[which], batch_size=3,
                                        num_workers=num_workers)]
    assert ours[0] in ([[0.0], [10.0], [20.0]], [[60.0], [0.0], [20.0]],
                       [[[0.0], [10.0], [20.0]]] * 2, {"x": [[0.0], [10.0], [20.0]]})
    if torch is not None:
        import torch.utils.data as theirs

        want = [flat(b) for b in theirs.DataLoader(_batched_datasets(theirs)[which],
                                                   batch_size=3)]
        assert ours == want


def test_batch_size_none_converts_as_torch():
    """Without batching, a loader converts each sample as PyTorch's default_convert: a tuple
    gives a list, NumPy scalars become 0-d tensors, strings stay."""
    ds = TensorDataset(fnn.arange(3.0), fnn.arange(3))
    sample = next(iter(DataLoader(ds, batch_size=None)))
    assert type(sample) is list and sample[1].tolist() == 0
    from fastnn.data import default_convert

    converted = default_convert((np.float32(2.0), [np.int64(3), "x"]))
    assert type(converted) is list and converted[0].shape == () and converted[1][1] == "x"
    assert converted[1][0].dtype == fnn.int64
    if torch is not None:
        theirs = torch.utils.data.default_convert((np.float32(2.0), [np.int64(3), "x"]))
        assert type(theirs) is list and theirs[0].shape == () and theirs[1][1] == "x"
        assert type(next(iter(torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(torch.arange(3.0)), batch_size=None)))) is list


@pytest.mark.parametrize("shuffle", [False, True])
def test_a_loader_has_torchs_sampler_and_batch_sampler(shuffle):
    """``loader.sampler`` and ``loader.batch_sampler`` exist without being given, as
    PyTorch's (``len(loader.sampler)`` is the samples of an epoch), and follow the order."""
    from fastnn.data import BatchSampler, RandomSampler, SequentialSampler

    loader = DataLoader(TensorDataset(fnn.arange(10)), batch_size=3, shuffle=shuffle,
                        drop_last=True)
    kind = RandomSampler if shuffle else SequentialSampler
    assert isinstance(loader.sampler, kind) and len(loader.sampler) == 10
    assert isinstance(loader.batch_sampler, BatchSampler) and len(loader.batch_sampler) == 3
    assert list(loader.batch_sampler) == [b[0].tolist() for b in loader]
    assert DataLoader(TensorDataset(fnn.arange(4)), batch_size=None).batch_sampler is None
    if torch is not None:
        ref = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.arange(10)),
                                          batch_size=3, shuffle=shuffle, drop_last=True)
        theirs = torch.utils.data.RandomSampler if shuffle else torch.utils.data.SequentialSampler
        assert isinstance(ref.sampler, theirs) and len(ref.sampler) == 10
        assert len(ref.batch_sampler) == 3


@pytest.mark.parametrize("shuffle", [False, True])
def test_a_loaders_own_samplers_are_one_object_each(shuffle):
    """PyTorch's loader holds one sampler and one batch_sampler: ``loader.sampler is
    loader.sampler``, and an attribute a script sets on it (or a hook that keys on its
    identity) stays; fastnn made a new one at each access."""
    loader = DataLoader(TensorDataset(fnn.arange(10)), batch_size=3, shuffle=shuffle)
    assert loader.sampler is loader.sampler
    assert loader.batch_sampler is loader.batch_sampler
    assert loader.batch_sampler.sampler is loader.sampler
    loader.sampler.note = "kept"
    assert loader.sampler.note == "kept"
    if torch is not None:
        ref = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.arange(10)),
                                          batch_size=3, shuffle=shuffle)
        assert ref.sampler is ref.sampler and ref.batch_sampler is ref.batch_sampler
        assert ref.batch_sampler.sampler is ref.sampler


@pytest.mark.parametrize("num_workers, prefetch_factor, want", [(0, None, None), (2, None, 2),
                                                                 (2, 3, 3)])
def test_prefetch_factor_attribute_as_torchs(num_workers, prefetch_factor, want):
    """PyTorch's loader keeps prefetch_factor None without workers, so that a loader rebuilt
    from its attributes (as training frameworks do) is accepted again."""
    data = TensorDataset(fnn.arange(4.0))
    loader = DataLoader(data, num_workers=num_workers, prefetch_factor=prefetch_factor)
    assert loader.prefetch_factor == want
    again = DataLoader(data, num_workers=loader.num_workers,
                       prefetch_factor=loader.prefetch_factor)
    assert again.prefetch_factor == want
    if torch is not None:
        ref = torch.utils.data.DataLoader(torch.arange(4.0), num_workers=num_workers,
                                          prefetch_factor=prefetch_factor)
        assert ref.prefetch_factor == want
