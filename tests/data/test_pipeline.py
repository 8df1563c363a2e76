"""Datasets, samplers, collation and the DataLoader's arguments, against PyTorch's
``torch.utils.data`` where it is installed (worker processes: test_workers.py)."""

from collections import namedtuple

import numpy as np
import pytest

import fastnn as fnn
from fastnn import data
from fastnn.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    WeightedRandomSampler,
    default_collate,
    random_split,
)


class Squares(Dataset):
    def __init__(self, n=10):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return np.full(2, i, np.float32), i * i


class Count(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


def _host(batch):
    """A batch (nested tuples/lists/dicts of tensors) with NumPy arrays for tensors."""
    if isinstance(batch, dict):
        return {k: _host(v) for k, v in batch.items()}
    if isinstance(batch, (tuple, list)):
        return [_host(v) for v in batch]
    return batch.numpy() if hasattr(batch, "numpy") else batch


def test_a_subclassed_dataset_batches_and_concatenates():
    ds = Squares(5) + Squares(3)
    assert isinstance(ds, ConcatDataset) and len(ds) == 8
    assert ds[6][1] == 1 and ds[-1][1] == 4 and ds[-8][1] == 0
    with pytest.raises(IndexError, match="out of range for 8 samples"):
        ds[8]
    with pytest.raises(IndexError, match="out of range"):
        ds[-9]
    xb, yb = list(DataLoader(ds, batch_size=8))[0]
    np.testing.assert_array_equal(yb.numpy(), [0, 1, 4, 9, 16, 0, 1, 4])
    assert xb.dtype == fnn.float32 and yb.dtype == fnn.int64
    with pytest.raises(NotImplementedError, match="without __getitem__"):
        Dataset()[0]


def test_subset_and_random_split_cover_every_sample_once():
    ds = Squares(10)
    parts = random_split(ds, [3, 7], generator=np.random.default_rng(0))
    assert [len(p) for p in parts] == [3, 7]
    seen = sorted(i for p in parts for i in p.indices)
    assert seen == list(range(10))
    sub = Subset(ds, [4, 2])
    assert sub[0][1] == 16 and sub[1][1] == 4 and len(sub) == 2
    again = random_split(ds, [3, 7], generator=np.random.default_rng(0))
    assert again[0].indices == parts[0].indices
    with pytest.raises(ValueError, match="sum to 11, but the dataset has 10"):
        random_split(ds, [4, 7])


def test_random_split_fractions_give_pytorchs_lengths():
    torch = pytest.importorskip("torch")
    for n in (10, 11, 7, 1):
        for fracs in ([0.5, 0.5], [0.3, 0.3, 0.4], [0.1, 0.9], [1.0]):
            ours = [len(p) for p in random_split(Squares(n), fracs)]
            theirs = [len(p) for p in torch.utils.data.random_split(range(n), fracs)]
            assert ours == theirs, (n, fracs)


Pair = namedtuple("Pair", "a b")


@pytest.mark.parametrize("samples", [
    [(1, 2.5), (3, 4.0)],
    [{"x": np.ones(2, np.float32), "y": 1}, {"x": np.zeros(2, np.float32), "y": 0}],
    [[np.arange(3), True], [np.arange(3) + 1, False]],
    [np.float32(1.5), np.float32(2.0)],
    [Pair(np.ones((2, 2)), 7), Pair(np.zeros((2, 2)), 8)],
    [{"name": "a", "v": 1.0}, {"name": "b", "v": 2.0}],
])
def test_default_collate_is_pytorchs(samples):
    torch = pytest.importorskip("torch")
    from torch.utils.data import default_collate as torch_collate

    ours, theirs = default_collate(samples), torch_collate(samples)

    def compare(a, b):
        if isinstance(b, dict):
            assert isinstance(a, dict) and set(a) == set(b)
            for k in b:
                compare(a[k], b[k])
        elif isinstance(b, (list, tuple)):
            assert isinstance(a, (list, tuple)) and len(a) == len(b)
            assert not hasattr(b, "_fields") or type(a) is type(b)  # named tuples kept
            for x, y in zip(a, b):
                compare(x, y)
        elif isinstance(b, torch.Tensor):
            assert isinstance(a, fnn.Tensor)
            assert a.dtype.name == str(b.dtype).removeprefix("torch."), (a.dtype, b.dtype)
            np.testing.assert_array_equal(a.numpy(), b.numpy())
        else:
            assert a == b

    compare(ours, theirs)


def test_default_collate_refuses_what_it_cannot_batch():
    with pytest.raises(TypeError, match="cannot batch samples of type object"):
        default_collate([object(), object()])
    with pytest.raises(RuntimeError, match="same number of fields"):
        default_collate([(1, 2), (1,)])


def test_samplers_batch_as_pytorchs():
    pytest.importorskip("torch")
    import torch.utils.data as tud

    ds = Squares(10)
    for bs in (1, 3, 4, 10):
        for drop_last in (False, True):
            ours = list(BatchSampler(SequentialSampler(ds), bs, drop_last))
            theirs = list(tud.BatchSampler(tud.SequentialSampler(range(10)), bs, drop_last))
            assert ours == theirs
            assert len(BatchSampler(range(10), bs, drop_last)) == len(theirs)
    order = list(RandomSampler(ds, generator=np.random.default_rng(1)))
    assert sorted(order) == list(range(10)) and order != list(range(10))
    assert len(list(RandomSampler(ds, replacement=True, num_samples=25))) == 25
    assert len(list(RandomSampler(ds, num_samples=25))) == 25  # more than one permutation
    # minGPT's trainer: an "endless" epoch, drawn lazily as PyTorch's (not 80 GB up front)
    endless = iter(RandomSampler(ds, replacement=True, num_samples=int(1e10)))
    drawn = [next(endless) for _ in range(100)]
    assert all(0 <= i < 10 for i in drawn) and len(set(drawn)) > 1
    assert len(RandomSampler(ds, replacement=True, num_samples=int(1e10))) == int(1e10)
    endless = iter(RandomSampler(ds, num_samples=int(1e10)))
    assert sorted(next(endless) for _ in range(10)) == list(range(10))
    drawn = list(WeightedRandomSampler([0, 1, 0, 1], 2, replacement=False))
    assert sorted(drawn) == [1, 3]


def test_loader_with_sampler_batch_sampler_collate_fn_and_no_batching():
    ds = Squares(10)
    got = [yb.numpy().tolist() for _, yb in DataLoader(ds, 4, sampler=[9, 8, 7, 6, 5])]
    assert got == [[81, 64, 49, 36], [25]]
    loader = DataLoader(ds, batch_sampler=[[1, 2], [3]])
    assert [yb.numpy().tolist() for _, yb in loader] == [[1, 4], [9]] and len(loader) == 2
    sums = list(DataLoader(ds, 5, collate_fn=lambda samples: sum(s[1] for s in samples)))
    assert sums == [0 + 1 + 4 + 9 + 16, 25 + 36 + 49 + 64 + 81]
    single = list(DataLoader(ds, batch_size=None))
    assert len(single) == 10 and single[3][0].shape == (2,) and single[3][1] == 9
    streamed = [b.numpy().tolist() for b in DataLoader(Count(7), batch_size=3)]
    assert streamed == [[0, 1, 2], [3, 4, 5], [6]]
    assert [b.numpy().tolist() for b in DataLoader(Count(7), 3, drop_last=True)] == [
        [0, 1, 2], [3, 4, 5]]
    assert len(DataLoader(Count(7), 3)) == 3 and len(DataLoader(ds, 4, sampler=range(5))) == 2


def test_a_pytorch_dataset_is_accepted():
    torch = pytest.importorskip("torch")
    tds = torch.utils.data.TensorDataset(torch.arange(6.0).reshape(3, 2), torch.tensor([0, 1, 2]))
    (xb, yb), = list(DataLoader(tds, batch_size=3))
    np.testing.assert_array_equal(xb.numpy(), np.arange(6.0).reshape(3, 2))
    np.testing.assert_array_equal(yb.numpy(), [0, 1, 2])
    assert isinstance(xb, fnn.Tensor)


@pytest.mark.parametrize("kwargs, match", [
    ({"sampler": [0, 1], "shuffle": True}, "mutually exclusive with shuffle"),
    ({"batch_sampler": [[0]], "batch_size": 2}, "batch_sampler option is mutually exclusive"),
    ({"batch_sampler": [[0]], "drop_last": True}, "batch_sampler option is mutually exclusive"),
    ({"batch_size": None, "drop_last": True}, "disables auto-batching"),
    ({"prefetch_factor": 2}, "need num_workers > 0"),
    ({"persistent_workers": True}, "need num_workers > 0"),
    ({"num_workers": -1}, "num_workers must be an integer >= 0"),
    ({"timeout": -1}, "timeout must be a number of seconds >= 0"),
    ({"sampler": [0], "shard": (0, 2)}, "shard= splits the loader's own order"),
])
def test_pytorchs_argument_rules(kwargs, match):
    with pytest.raises((TypeError, ValueError), match=match):
        DataLoader(Squares(4), **kwargs)


def test_iterable_datasets_refuse_an_order():
    for kwargs in ({"shuffle": True}, {"sampler": [0]}, {"batch_sampler": [[0]]}):
        with pytest.raises(ValueError, match="IterableDataset: expected unspecified"):
            DataLoader(Count(3), **kwargs)


def test_utils_data_is_the_same_module():
    import fastnn.utils.data as tud

    assert tud is data and tud.Dataset is Dataset and tud.get_worker_info() is None
