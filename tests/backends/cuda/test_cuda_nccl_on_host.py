"""The cuda backend's NCCL collectives, run on host memory with a stand-in for cupy's NCCL.

NumPy stands in for cupy and tests/backends/cuda/fake_nccl.py for
``cupy.cuda.nccl``: the hooks' packing (one NCCL call per list), counts, dtype
and op codes, the unique id's trip over the communicator, and the fallbacks are
checked here; two real ranks in tests/distributed (``nccl-on-host``); a GPU in
benchmarks/gpu_check.sh.
"""

from __future__ import annotations

import numpy as np
import pytest
from fastnn_cuda import collectives

from fastnn import distributed as dist
from tests.backends.cuda import fake_nccl

SHAPES = [(2, 3), (), (0, 4), (5,)]


class TwoRanks(dist.Communicator):
    """Rank ``rank`` of 2 in one process; host collectives as the Mirror transport."""

    def __init__(self, rank=0):
        super().__init__(None)
        self.rank, self.size, self.host_calls = rank, 2, 0

    def host_allreduce(self, array, reduction):
        self.host_calls += 1
        return fake_nccl.Mirror().allreduce(array, reduction)

    def bcast_object(self, obj, root=0):
        return obj if self.rank == root else tuple(range(128))  # root's id, as sent


@pytest.fixture
def fake(monkeypatch):
    module = fake_nccl.FakeNccl(fake_nccl.Mirror())
    fake_nccl.install(monkeypatch, collectives, module)
    return module


def arrays(dtype):
    return [(np.arange(np.prod(s), dtype=dtype).reshape(s) - 2) for s in SHAPES]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int64"])
def test_allreduce_is_one_nccl_call_for_the_whole_list(fake, dtype):
    comm, inputs = TwoRanks(), arrays(dtype)
    kept = [a.copy() for a in inputs]
    for reduction, scale in (("sum", 2), ("max", 1), ("min", 1)):
        out = collectives.allreduce(inputs, reduction, comm, 0)
        for got, want in zip(out, kept):
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_array_equal(got, want * scale)
        for a, k in zip(inputs, kept):  # the inputs are left as they were
            np.testing.assert_array_equal(a, k)
    assert fake.calls == [("allReduce", 12, dtype, r) for r in ("sum", "max", "min")]
    assert len(fake.joined) == 1 and fake.ids_drawn == 1  # one communicator, kept
    assert comm.host_calls == 0  # nothing went through the host


def test_broadcast_sends_bytes_and_returns_new_arrays(fake):
    comm, inputs = TwoRanks(), arrays("float64")
    out = collectives.broadcast(inputs, 0, comm, 0)
    for got, want in zip(out, inputs):
        assert got is not want and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    assert fake.calls == [("bcast", 12 * 8, "uint8", 0)]


def test_a_rank_other_than_0_joins_with_root_s_id_and_draws_none(fake):
    collectives.allreduce(arrays("float32"), "sum", TwoRanks(rank=1), 0)
    assert fake.ids_drawn == 0
    assert fake.joined == [(2, tuple(range(128)), 1)]


def test_each_communicator_and_device_gets_its_own_nccl_communicator(fake):
    comm, other = TwoRanks(), TwoRanks()
    for c, device in ((comm, 0), (comm, 0), (comm, 1), (other, 0)):
        collectives.allreduce(arrays("float32"), "sum", c, device)
    assert len(fake.joined) == 3
    assert set(comm.cache) == {(collectives.CACHE_KEY, 0), (collectives.CACHE_KEY, 1)}


def test_without_nccl_the_hooks_stage_through_the_host(monkeypatch, fake):
    monkeypatch.setattr(collectives, "nccl_module", lambda: None)
    comm = TwoRanks()
    out = collectives.allreduce(arrays("float32"), "sum", comm, 0)
    np.testing.assert_array_equal(out[0], arrays("float32")[0] * 2)
    assert comm.host_calls == 1 and fake.calls == []


def test_fastnn_nccl_0_turns_nccl_off(monkeypatch):
    monkeypatch.setenv("FASTNN_NCCL", "0")
    assert collectives.nccl_module() is None


def test_two_ranks_on_one_gpu_get_a_clear_error(monkeypatch):
    fake_nccl.install(monkeypatch, collectives,
                      fake_nccl.FakeNccl(fake_nccl.Mirror(), fail_join=True))
    with pytest.raises(RuntimeError, match="each rank needs a GPU of its own.*FASTNN_NCCL=0"):
        collectives.allreduce(arrays("float32"), "sum", TwoRanks(), 0)


def test_the_hooks_are_registered_with_the_spec_s_parameters():
    import inspect

    from fastnn.api import hookspec

    for name in ("allreduce", "broadcast"):
        spec = list(inspect.signature(getattr(hookspec, name)).parameters)
        assert list(inspect.signature(getattr(collectives, name)).parameters) == spec
