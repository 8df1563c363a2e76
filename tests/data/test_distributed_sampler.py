"""DistributedSampler: PyTorch's order and split, its defaults from fastnn.distributed, errors."""

import numpy as np
import pytest
from fastnn.utils.data import DistributedSampler
from fastnn.utils.data.distributed import DistributedSampler as FromSubmodule

from fastnn.data import DataLoader, TensorDataset
from fastnn.data.distributed import shard_indices, torch_randperm
from fastnn.distributed import comm as comm_module

torch = pytest.importorskip("torch")
from torch.utils.data.distributed import DistributedSampler as TorchSampler  # noqa: E402


@pytest.mark.parametrize("n, seed", [(0, 0), (1, 3), (2, 0), (17, 0), (100, 7), (1000, 123),
                                     (5, 2**32 + 3), (6, -1), (9, 2**63)])
def test_randperm_is_torchs_bit_for_bit(n, seed):
    generator = torch.Generator()
    generator.manual_seed(seed)
    expected = torch.randperm(n, generator=generator).numpy()
    np.testing.assert_array_equal(torch_randperm(n, seed), expected)


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("shuffle", [True, False])
@pytest.mark.parametrize("n, replicas", [(10, 3), (12, 4), (2, 5), (7, 1), (0, 2), (23, 4)])
def test_every_rank_and_epoch_gives_torchs_indices(n, replicas, shuffle, drop_last):
    data = list(range(n))
    for rank in range(replicas):
        ours = DistributedSampler(data, replicas, rank, shuffle=shuffle, seed=5,
                                  drop_last=drop_last)
        theirs = TorchSampler(data, replicas, rank, shuffle=shuffle, seed=5,
                              drop_last=drop_last)
        for epoch in (0, 1, 4):
            ours.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(ours) == list(theirs), (rank, epoch)
            assert len(ours) == len(theirs) == len(list(ours))
        assert (ours.num_samples, ours.total_size) == (theirs.num_samples, theirs.total_size)


def test_ranks_are_disjoint_and_cover_without_padding():
    parts = [list(DistributedSampler(range(12), 4, r, seed=1)) for r in range(4)]
    assert sorted(sum(parts, [])) == list(range(12))
    padded = [list(DistributedSampler(range(10), 4, r, seed=1)) for r in range(4)]
    flat = sum(padded, [])
    assert len(flat) == 12 and set(flat) == set(range(10))  # two repeated, as padding wraps


def test_epochs_differ_and_repeat():
    sampler = DistributedSampler(range(50), 2, 0, seed=3)
    first = list(sampler)
    assert list(sampler) == first  # no set_epoch: the same order again
    sampler.set_epoch(1)
    assert list(sampler) != first


def test_loader_shard_splits_as_the_sampler():
    data = TensorDataset(np.arange(11, dtype=np.int64))
    for rank in range(3):
        loader = DataLoader(data, batch_size=None, shard=(rank, 3))
        expected = list(DistributedSampler(range(11), 3, rank, shuffle=False))
        assert [int(x[0]) for x in loader] == expected
    np.testing.assert_array_equal(shard_indices(np.arange(5), 1, 2, drop_last=True), [1, 3])


def test_the_sampler_feeds_a_loader():
    data = TensorDataset(np.arange(10, dtype=np.int64))
    sampler = DistributedSampler(data, num_replicas=2, rank=1, seed=4)
    got = [b[0].numpy().tolist() for b in DataLoader(data, batch_size=2, sampler=sampler)]
    assert sum(got, []) == list(TorchSampler(range(10), 2, 1, seed=4))


def test_defaults_come_from_the_communicator(monkeypatch):
    monkeypatch.setattr(comm_module, "_WORLD", None)
    with pytest.raises(ValueError, match=r"fastnn.distributed.init\(\)"):
        DistributedSampler(range(5))
    DistributedSampler(range(5), num_replicas=2, rank=1)  # both given: no communicator needed

    class World:
        rank, size = 2, 3

    monkeypatch.setattr(comm_module, "_WORLD", World())
    sampler = DistributedSampler(range(7), shuffle=False)
    assert (sampler.num_replicas, sampler.rank, list(sampler)) == (3, 2, [2, 5, 1])
    assert DistributedSampler(range(7), rank=0).num_replicas == 3
    assert FromSubmodule is DistributedSampler


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2"):
        DistributedSampler(range(5), 3, 3)
    with pytest.raises(ValueError, match="Invalid rank -1"):
        DistributedSampler(range(5), 3, -1)
    with pytest.raises(ValueError, match="num_replicas"):
        DistributedSampler(range(5), 0, 0)
    with pytest.raises(TypeError, match="rank"):
        DistributedSampler(range(5), 2, 0.5)
    with pytest.raises(TypeError, match="epoch"):
        DistributedSampler(range(5), 2, 0).set_epoch("1")
