"""TensorDataset and DataLoader: batches, seeded order, shards as DistributedSampler, state."""

import math

import numpy as np
import pytest

import fastnn as fnn
from fastnn.data import DataLoader, TensorDataset


def _data(n=11):
    x = np.arange(n * 2, dtype=np.float64).reshape(n, 2)
    return x, np.arange(n, dtype=np.int64)


def _epoch(loader):
    """One epoch's batches as lists of the label column (the sample indices)."""
    return [y.numpy().tolist() for _, y in loader]


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("batch_size", [1, 3, 4, 11, 20])
def test_batches_in_order_cover_the_data_once(batch_size, drop_last):
    x, y = _data()
    loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, drop_last=drop_last)
    got = list(loader)
    expected = [np.arange(s, min(s + batch_size, 11)) for s in range(0, 11, batch_size)]
    if drop_last:
        expected = [b for b in expected if len(b) == batch_size]
    assert len(loader) == len(expected) == len(got)
    for (xb, yb), idx in zip(got, expected):
        np.testing.assert_array_equal(yb.numpy(), idx)
        np.testing.assert_array_equal(xb.numpy(), x[idx])
        assert xb.dtype == fnn.float64 and yb.dtype == fnn.int64


def test_len_is_pytorchs():
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader as TorchLoader
    from torch.utils.data import DistributedSampler
    from torch.utils.data import TensorDataset as TorchDataset

    for n in (1, 7, 10, 11, 16):
        ds = TorchDataset(torch.arange(n))
        for bs in (1, 3, 4, 16):
            for drop_last in (False, True):
                ours = DataLoader(TensorDataset(np.arange(n)), bs, drop_last=drop_last)
                assert len(ours) == len(TorchLoader(ds, bs, drop_last=drop_last))
                for world in (2, 3, 4):
                    for rank in range(world):
                        sampler = DistributedSampler(ds, world, rank, shuffle=False)
                        theirs = TorchLoader(ds, bs, sampler=sampler, drop_last=drop_last)
                        ours = DataLoader(TensorDataset(np.arange(n)), bs, drop_last=drop_last,
                                          shard=(rank, world))
                        assert len(ours) == len(theirs), (n, bs, drop_last, rank, world)


def test_shards_are_distributed_samplers_parts():
    pytest.importorskip("torch")
    from torch.utils.data import DistributedSampler

    for n in (1, 5, 10, 11):
        for world in (2, 3, 4, 7):
            for rank in range(world):
                sampler = DistributedSampler(list(range(n)), world, rank, shuffle=False)
                loader = DataLoader(TensorDataset(np.arange(n)), 3, shard=(rank, world))
                assert loader.indices().tolist() == list(sampler), (n, world, rank)
                got = [int(v) for (b,) in loader for v in b.numpy()]
                assert got == list(sampler)


def test_shuffled_shards_split_one_padded_order():
    # without torch: the ranks' parts interleave back into the epoch's order, padded by wrapping
    n, world = 10, 4
    full = DataLoader(TensorDataset(np.arange(n)), shuffle=True, seed=5).indices(epoch=2)
    parts = [DataLoader(TensorDataset(np.arange(n)), shuffle=True, seed=5,
                        shard=(r, world)).indices(epoch=2) for r in range(world)]
    per_rank = math.ceil(n / world)
    assert all(len(p) == per_rank for p in parts)
    interleaved = np.stack(parts, axis=1).ravel()
    np.testing.assert_array_equal(interleaved, np.concatenate([full, full[:per_rank * world - n]]))
    assert set(interleaved) == set(range(n))


def test_seeded_shuffle_reproduces_and_each_epoch_reshuffles():
    x, y = _data(40)
    a = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True, seed=3)
    b = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True, seed=3)
    first, second = _epoch(a), _epoch(a)
    assert first == _epoch(b) and second == _epoch(b)
    assert first != second
    for epoch in (first, second):
        assert sorted(sum(epoch, [])) == list(range(40))
    # the order is numpy's permutation of default_rng([seed, epoch])
    expected = np.random.default_rng([3, 0]).permutation(40)
    assert sum(first, []) == expected.tolist()
    assert _epoch(DataLoader(TensorDataset(x, y), 8, shuffle=True, seed=4)) != first


def test_seed_none_follows_manual_seed():
    x, y = _data(30)
    fnn.manual_seed(7)
    a = _epoch(DataLoader(TensorDataset(x, y), 5, shuffle=True))
    fnn.manual_seed(7)
    assert _epoch(DataLoader(TensorDataset(x, y), 5, shuffle=True)) == a


def test_a_broken_off_epoch_counts_as_one():
    x, y = _data(20)
    loader = DataLoader(TensorDataset(x, y), 4, shuffle=True, seed=1)
    for _ in loader:
        break
    other = DataLoader(TensorDataset(x, y), 4, shuffle=True, seed=1)
    other.set_epoch(1)
    assert _epoch(loader) == _epoch(other)
    assert loader.state_dict()["epoch"] == 2


@pytest.mark.parametrize("shard", [None, (1, 3)])
def test_state_dict_mid_epoch_resumes_the_same_batches(shard, tmp_path):
    x, y = _data(23)
    make = lambda: DataLoader(TensorDataset(x, y), 4, shuffle=True, seed=9, shard=shard)  # noqa: E731
    straight = make()
    expected = _epoch(straight) + _epoch(straight)
    first = make()
    seen, state = [], None
    for step, (_, yb) in enumerate(first):
        seen.append(yb.numpy().tolist())
        if step == 1:
            state = _roundtrip(first.state_dict(), tmp_path)
            break
    resumed = make()
    resumed.seed = 0  # the state carries the seed too
    resumed.load_state_dict(state)
    assert seen == expected[:2]
    assert _epoch(resumed) + _epoch(resumed) == expected[2:]


def _roundtrip(state, folder):
    """``state`` as a checkpoint gives it back."""
    path = folder / "loader.safetensors"
    fnn.save({"loader": state}, path)
    return fnn.load(path)["loader"]


def test_load_state_dict_reads_a_checkpoint_nesting(tmp_path):
    loader = DataLoader(TensorDataset(np.arange(10)), 3)
    state = _roundtrip(loader.state_dict(), tmp_path)
    loader.load_state_dict(state)
    assert loader.state_dict() == {"seed": loader.seed, "epoch": 0, "position": 0}


def test_tensors_and_the_current_device():
    x, y = _data(6)
    ds = TensorDataset(fnn.tensor(x), fnn.tensor(y))
    batches = list(DataLoader(ds, 4))
    np.testing.assert_array_equal(batches[1][0].numpy(), x[4:])
    assert all(t.device == fnn.get_device() for b in batches for t in b)
    assert len(ds) == 6 and ds[2][1] == 2


def test_on_opencl_batches_live_there():
    if not any(r.name == "opencl" and r.available for r in fnn.backends()):
        pytest.skip("needs the opencl backend")
    x, y = _data(6)
    with fnn.use("opencl"):
        batches = list(DataLoader(TensorDataset(x, fnn.tensor(y, device="cpu")), 4))
    for (xb, yb), idx in zip(batches, (np.arange(4), np.arange(4, 6))):
        assert str(xb.device).startswith("opencl") and str(yb.device).startswith("opencl")
        np.testing.assert_array_equal(xb.numpy(), x[idx])
        np.testing.assert_array_equal(yb.numpy(), y[idx])


def test_any_dataset_with_len_and_getitem():
    class Squares:
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return np.float32(i) * np.ones(2, np.float32), i * i

    (xb, yb), (xb2, yb2) = list(DataLoader(Squares(), 3))
    np.testing.assert_array_equal(yb.numpy(), [0, 1, 4])
    assert xb.shape == (3, 2) and xb2.shape == (2, 2)


def test_a_batch_of_differently_shaped_samples_names_them():
    # issue 25: this failed with NumPy's "all input arrays must have the same shape"
    class Ragged:
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return np.ones(3 if i < 3 else 4, np.float32), i

    loader = iter(DataLoader(Ragged(), 2))
    assert next(loader)[0].shape == (2, 3)
    with pytest.raises(RuntimeError, match=r"the samples of a batch must have one shape to be "
                                           r"stacked, but sample 2 has shape \(3,\) and sample "
                                           r"3 has \(4,\) \(field 0 of each sample\); pad"):
        next(loader)
    with pytest.raises(RuntimeError, match=r"sample 0 has shape \(3,\) and sample 2 has \(4,\);"):
        list(DataLoader([np.ones(3), np.ones(3), np.ones(4)], 3))


@pytest.mark.parametrize("kwargs, match", [
    ({"batch_size": 0}, "batch_size must be an integer >= 1"),
    ({"batch_size": 2.5}, "batch_size"),
    ({"shuffle": "yes"}, "shuffle must be True or False"),
    ({"shard": (3, 3)}, r"0 <= rank < world_size"),
    ({"shard": 2}, r"shard must be a pair"),
    ({"shard": (0.0, 2)}, "shard rank must be an integer"),
    ({"seed": -1}, "seed must be an integer >= 0"),
])
def test_bad_arguments_name_themselves(kwargs, match):
    with pytest.raises((TypeError, ValueError), match=match):
        DataLoader(TensorDataset(np.arange(4)), **kwargs)


def test_bad_datasets_and_states():
    with pytest.raises(ValueError, match="first dimensions differ"):
        TensorDataset(np.zeros(3), np.zeros(4))
    with pytest.raises(TypeError, match="must be a fastnn Tensor or a NumPy array"):
        TensorDataset([1, 2, 3])
    with pytest.raises(TypeError, match="__len__ and __getitem__"):
        DataLoader(42)
    loader = DataLoader(TensorDataset(np.arange(4)), 2)
    with pytest.raises(ValueError, match="expected a dict with seed, epoch and position"):
        loader.load_state_dict(None)
    with pytest.raises(ValueError, match="position 9 is past"):
        loader.load_state_dict({"seed": 0, "epoch": 0, "position": 9})
