"""fastnn.distributed in one process: one rank without MPI, the errors, the host staging."""

from __future__ import annotations

import builtins

import numpy as np
import pytest

import fastnn as fnn
from fastnn import distributed as dist
from fastnn import nn, optim
from fastnn.api import composite
from fastnn.distributed import comm as comm_module


@pytest.fixture
def no_mpi4py(monkeypatch):
    """Make ``from mpi4py import MPI`` fail, as without the package, and forget init()."""
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name.startswith("mpi4py"):
            raise ImportError("No module named 'mpi4py'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    monkeypatch.setattr(comm_module, "_WORLD", None)
    for name in comm_module._LAUNCHER_SIZE_VARS:
        monkeypatch.delenv(name, raising=False)


def test_without_mpi4py_init_is_one_rank_whose_collectives_copy(no_mpi4py):
    comm = dist.init()
    assert (comm.rank, comm.size, comm.local_rank, comm.mpi) == (0, 1, 0, None)
    x = fnn.tensor([[1.0, -2.0], [3.0, 4.0]])
    for op in ("sum", "mean", "max", "min"):
        y = comm.allreduce(x, op=op)
        assert y is not x
        np.testing.assert_array_equal(y.numpy(), x.numpy())
    np.testing.assert_array_equal(comm.broadcast(x, root=0).numpy(), x.numpy())
    comm.barrier()


def test_asking_for_distributed_without_mpi4py_names_the_install(no_mpi4py):
    with pytest.raises(dist.DistributedError, match=r"fastnn-core\[distributed\]"):
        dist.init(required=True)


def test_an_mpi_launcher_without_mpi4py_is_an_error_not_n_lone_runs(no_mpi4py, monkeypatch):
    monkeypatch.setenv("PMI_SIZE", "4")
    with pytest.raises(dist.DistributedError, match="4 ranks.*pip install"):
        dist.init()


def test_fastnn_train_distributed_without_mpi4py_is_a_clean_exit(no_mpi4py):
    from fastnn.cli import main

    with pytest.raises(SystemExit, match=r"fastnn train: .*fastnn-core\[distributed\]"):
        main(["train", "--distributed", "--epochs", "1"])


def test_bad_arguments_name_what_to_do():
    comm = dist.Communicator(None)
    x = fnn.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match="op must be one of sum, mean, max, min, got 'avg'"):
        comm.allreduce(x, op="avg")
    with pytest.raises(TypeError, match="op='mean' needs a floating tensor"):
        comm.allreduce(fnn.tensor(np.array([1, 2])), op="mean")
    with pytest.raises(ValueError, match=r"root must be a rank in \[0, 1\), got 1"):
        comm.broadcast(x, root=1)
    with pytest.raises(TypeError, match="expected a fastnn Tensor, got ndarray"):
        comm.allreduce(np.ones(2))
    model = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="comm must be the Communicator"):
        dist.broadcast_parameters(model, object())
    with pytest.raises(TypeError, match="expected a fastnn optimizer"):
        dist.DistributedOptimizer(model, comm)
    opt = dist.DistributedOptimizer(optim.SGD(model.parameters(), lr=0.1), comm)
    with pytest.raises(ValueError, match="samples must be an integer >= 0, got -1"):
        opt.step(samples=-1)
    with pytest.raises(ValueError, match="does not hold"):
        opt.apply_gradients([(fnn.zeros((2, 2), requires_grad=True), fnn.zeros((2, 2)))])


def test_one_rank_steps_as_the_wrapped_optimizer_and_skips_empty_shards():
    comm = dist.Communicator(None)
    x, y = fnn.randn((5, 3), seed=1), fnn.tensor(np.array([0, 1, 1, 0, 1]))
    nets = []
    for wrapped in (False, True):
        fnn.manual_seed(4)
        net = nn.Sequential(nn.Linear(3, 4), nn.Activation("relu"), nn.Linear(4, 2))
        opt = optim.Adam(net.parameters(), lr=0.05)
        opt = dist.DistributedOptimizer(opt, comm) if wrapped else opt
        for _ in range(3):
            opt.zero_grad()
            fnn.functional.cross_entropy(net(x), y).backward()
            opt.step(samples=5) if wrapped else opt.step()
        nets.append(net)
    for (name, a), (_, b) in zip(nets[0].named_parameters(), nets[1].named_parameters()):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6, atol=1e-7, err_msg=name)
    before = nets[1].state_dict()
    opt.step(samples=0)  # an empty shard: its gradients, whatever they hold, count 0
    after = nets[1].state_dict()
    assert all(np.array_equal(before[k], after[k]) for k in before)
    assert opt.state_dict().keys() == {"param_groups", "state"}
    assert opt.param_groups is opt.optimizer.param_groups
    # a schedule takes the wrapper and sets the wrapped optimizer's learning rate
    schedule = optim.lr_scheduler.LambdaLR(opt, lambda t: 0.5**t)
    schedule.step()
    assert opt.optimizer.param_groups[0]["lr"] == pytest.approx(0.025)


class Mirror(dist.Communicator):
    """Two ranks holding the same values (the peer's contribution is a copy of this one's)."""

    def __init__(self):
        super().__init__(None)
        self.size, self.host_calls = 2, []

    def host_allreduce(self, array, reduction):
        self.host_calls.append((array.dtype.name, array.size))
        return array * 2 if reduction == "sum" else array.copy()


@pytest.mark.parametrize("dtype", ["float16", "float32", "int64"])
def test_host_staged_default_packs_a_list_into_one_buffer(dtype):
    device = fnn.get_device()
    shapes = [(2, 3), (), (0, 4), (1,)]
    host = [np.arange(np.prod(s), dtype=dtype).reshape(s) + 1 for s in shapes]
    comm = Mirror()
    arrays = [device.ops.from_numpy(h, device.index) for h in host]
    out = composite.allreduce(device.ops, arrays, "sum", comm, device.index)
    # one MPI call for the whole list; half precision goes over the wire as float32
    assert comm.host_calls == [("float32" if dtype == "float16" else dtype, 8)]
    for got, want in zip(out, host):
        got = np.asarray(device.ops.to_numpy(got))
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want * 2)


def test_sample_weights_give_the_full_batch_mean():
    """Rank gradients g_r over n_r samples average to sum n_r g_r / sum n_r."""

    class TwoRanks(dist.Communicator):
        def __init__(self, peer_values):
            super().__init__(None)
            self.size, self.peer = 2, peer_values

        def host_allreduce(self, array, reduction):
            return array + self.peer

    p = fnn.zeros((3,), dtype=fnn.float64, requires_grad=True)
    g_here, g_peer, n_here, n_peer = np.array([1.0, 2, 3]), np.array([-4.0, 0, 8]), 3, 1
    # the peer's part of the packed buffer: its gradient times its count, then its count
    comm = TwoRanks(np.concatenate([g_peer * n_peer, [n_peer]]))
    ((param, averaged),) = dist.average_gradients(
        comm, [(p, fnn.tensor(g_here, dtype=fnn.float64))], float(n_here))
    assert param is p
    np.testing.assert_allclose(averaged.numpy(), (n_here * g_here + n_peer * g_peer) / 4)


def test_half_precision_gradients_are_weighted_in_float32():
    """float16 holds integers exactly only to 2048, and g * n overflows past 65504: weighted
    half gradients travel in float32 with their counts (one buffer); unweighted ones in
    float16, the counts in a float32 buffer of their own."""
    p = fnn.zeros((3,), dtype=fnn.float16, requires_grad=True)
    grad = fnn.tensor(np.array([20.0, -2.0, 0.5], np.float16))
    comm = dist.Communicator(None)
    ((_, averaged),) = dist.average_gradients(comm, [(p, grad)], 4097.0)
    np.testing.assert_array_equal(averaged.numpy(), grad.numpy())  # 20 * 4097: no inf
    assert comm.stats.calls == 1 and comm.stats.bytes == 3 * 4 + 4
    comm = dist.Communicator(None)
    ((_, averaged),) = dist.average_gradients(comm, [(p, grad)], 1.0)
    assert averaged.dtype == fnn.float16
    np.testing.assert_array_equal(averaged.numpy(), grad.numpy())
    assert comm.stats.calls == 2 and comm.stats.bytes == 3 * 2 + 4
    opt = dist.DistributedOptimizer(optim.SGD([p], lr=1.0), comm)
    opt.apply_gradients([(p, grad)], samples=4097)
    np.testing.assert_array_equal(p.numpy(), -grad.numpy())  # cast back for the update
