"""PyTorch's distributed spelling in one process (one rank, no mpiexec): the process group's
state, the in-place collectives' semantics and errors, DDP and DataParallel's wrapping."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.distributed as dist
from fastnn import nn, optim
from fastnn.distributed import process_group
from fastnn.nn.parallel import DataParallel, DistributedDataParallel


@pytest.fixture
def fresh(monkeypatch):
    """No default process group before the test, whatever the test leaves after it."""
    for name in ("WORLD_SIZE", "RANK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(process_group, "_DEFAULT", None)


@pytest.fixture
def group(fresh):
    dist.init_process_group("gloo")


def test_one_rank_process_group(fresh):
    assert dist.is_available() and not dist.is_initialized()
    with pytest.raises(ValueError, match="has not been initialized"):
        dist.get_rank()
    dist.init_process_group("cpu:gloo,cuda:nccl", init_method="env://", world_size=1, rank=0)
    assert dist.is_initialized()
    assert (dist.get_rank(), dist.get_world_size()) == (0, 1)
    assert dist.get_backend() == "cpu:gloo,cuda:nccl"
    assert dist.group.WORLD.rank() == 0 and dist.group.WORLD.size() == 1
    assert dist.get_rank(dist.group.WORLD) == 0
    assert dist.barrier() is None and dist.barrier(async_op=True).wait()
    with pytest.raises(ValueError, match="twice"):
        dist.init_process_group("gloo")
    with pytest.raises(ValueError, match="one process group"):
        dist.get_rank(group=object())
    dist.destroy_process_group()
    assert not dist.is_initialized() and dist.group.WORLD is None
    dist.init_process_group()  # again after destroy; None runs on MPI
    assert dist.get_backend() == "mpi"


@pytest.mark.parametrize("kwargs,error,match", [
    ({"backend": "ucc"}, ValueError, "unknown backend 'ucc'"),
    ({"backend": 3}, TypeError, "backend must be a string"),
    ({"world_size": 2}, dist.DistributedError, "world_size 2 was asked for"),
    ({"rank": 1}, dist.DistributedError, "rank 1 was asked for"),
    ({"world_size": "2"}, TypeError, "world_size must be an int"),
    ({"store": object()}, ValueError, "store= is not supported"),
])
def test_bad_init_arguments(fresh, kwargs, error, match):
    with pytest.raises(error, match=match):
        dist.init_process_group(**kwargs)
    assert not dist.is_initialized()


def test_a_torchrun_environment_alone_is_an_error(fresh, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    with pytest.raises(dist.DistributedError, match="not torchrun"):
        dist.init_process_group("nccl")
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:23456")  # not env://


@pytest.mark.parametrize("op", ["SUM", "AVG", "PRODUCT", "MIN", "MAX"])
def test_all_reduce_writes_into_the_tensor_and_its_views(group, op):
    base = fnn.tensor(np.arange(12.0).reshape(3, 4) - 5)
    before = base.numpy().copy()
    row = base[1]
    alias = base.reshape(12)
    assert dist.all_reduce(row, op=getattr(dist.ReduceOp, op)) is None
    # one rank: the values stay, but they were written (same objects, views in step)
    np.testing.assert_array_equal(base.numpy(), before)
    row.mul_(2.0)
    np.testing.assert_array_equal(alias.numpy()[4:8], 2 * before[1])


def test_a_collective_is_an_in_place_write_for_autograd(group):
    w = fnn.tensor([1.0, 2.0], requires_grad=True)
    x = fnn.tensor([3.0, 4.0])
    y = (w * x).sum()  # saves x for w's gradient
    dist.all_reduce(x)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.backward()
    dist.broadcast(w, src=0)  # a parameter may be a collective's target, as in PyTorch


def test_collective_argument_errors(group):
    x = fnn.zeros(3)
    with pytest.raises(TypeError, match="op must be a dist.ReduceOp"):
        dist.all_reduce(x, op="sum")
    with pytest.raises(TypeError, match="AVG needs a floating tensor"):
        dist.all_reduce(fnn.tensor([1, 2]), op=dist.ReduceOp.AVG)
    with pytest.raises(TypeError, match="must be a fastnn Tensor"):
        dist.all_reduce(np.zeros(3))
    with pytest.raises(ValueError, match=r"src must be a rank in \[0, 1\)"):
        dist.broadcast(x, src=1)
    with pytest.raises(ValueError, match="list of 1 tensors"):
        dist.all_gather([fnn.zeros(3), fnn.zeros(3)], x)
    with pytest.raises(TypeError, match=r"tensor_list\[0\] is float64.*float32"):
        dist.all_gather([fnn.zeros(3, dtype="float64")], x)
    with pytest.raises(ValueError, match=r"output_tensor has shape \(2, 3\)"):
        dist.all_gather_into_tensor(fnn.zeros(2, 3), x)
    with pytest.raises(RuntimeError, match="expand"):
        dist.all_reduce(fnn.zeros(1).expand(3))
    with pytest.raises(ValueError, match="gather_list must be a list"):
        dist.gather(x, None, dst=0)


def test_one_rank_gathers_and_scatters(group):
    x = fnn.tensor([[1.5, -2.0]])
    out = [fnn.zeros(1, 2)]
    dist.all_gather(out, x)
    np.testing.assert_array_equal(out[0].numpy(), x.numpy())
    flat = fnn.zeros(2)
    dist.all_gather_into_tensor(flat, x)
    np.testing.assert_array_equal(flat.numpy(), [1.5, -2.0])
    into = fnn.zeros(1, 2)
    dist.scatter(into, [x * 3], src=0)
    np.testing.assert_array_equal(into.numpy(), [[4.5, -6.0]])


def _model():
    fnn.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 3, dtype=fnn.float64), nn.BatchNorm1d(3, dtype=fnn.float64),
                         nn.Linear(3, 2, dtype=fnn.float64))


def test_ddp_on_one_rank_trains_as_the_module_and_names_as_pytorch(group):
    x = fnn.tensor(np.random.default_rng(0).normal(size=(6, 4)))
    plain, wrapped = _model(), DistributedDataParallel(_model(), device_ids=None)
    assert wrapped.module is not plain and isinstance(wrapped.module, nn.Sequential)
    for net in (plain, wrapped):
        opt = optim.SGD(net.parameters(), lr=0.1)
        for _ in range(2):
            opt.zero_grad()
            (net(x) ** 2).mean().backward()
            opt.step()
    state = wrapped.state_dict()
    assert list(state) == [f"module.{k}" for k in plain.state_dict()]
    assert [n for n, _ in wrapped.named_parameters()] == [
        f"module.{n}" for n, _ in plain.named_parameters()]
    for name, value in plain.state_dict().items():
        np.testing.assert_allclose(np.asarray(state[f"module.{name}"]), np.asarray(value),
                                   atol=1e-12)
    again = DistributedDataParallel(_model())
    again.load_state_dict(state)
    np.testing.assert_array_equal(np.asarray(again.module[0].weight.detach().numpy()),
                                  np.asarray(state["module.0.weight"]))


def test_ddp_no_sync_on_one_rank_accumulates(group):
    net = DistributedDataParallel(nn.Linear(2, 1, dtype=fnn.float64))
    x = fnn.tensor([[1.0, 2.0]], dtype=fnn.float64)
    with net.no_sync():
        net(x).sum().backward()
        assert not net.require_backward_grad_sync
    net(x).sum().backward()
    assert net.require_backward_grad_sync
    np.testing.assert_array_equal(net.module.weight.grad.numpy(), [[2.0, 4.0]])


def test_ddp_errors(fresh):
    with pytest.raises(ValueError, match="has not been initialized"):
        DistributedDataParallel(nn.Linear(2, 1))
    dist.init_process_group("gloo")
    with pytest.raises(TypeError, match="must be a fastnn nn.Module"):
        DistributedDataParallel(lambda x: x)
    with pytest.raises(RuntimeError, match="doesn't have any parameter that requires"):
        DistributedDataParallel(nn.ReLU())
    with pytest.raises(TypeError, match="unexpected keyword"):
        DistributedDataParallel(nn.Linear(2, 1), bucket_size=3)


def test_data_parallel_is_a_pass_through_wrapper():
    net = nn.Linear(3, 2)
    wrapped = DataParallel(net)
    x = fnn.randn(4, 3)
    np.testing.assert_array_equal(wrapped(x).detach().numpy(), net(x).detach().numpy())
    assert list(wrapped.state_dict()) == ["module.weight", "module.bias"]
    assert fnn.nn.parallel.DataParallel is DataParallel is fnn.nn.DataParallel  # (torch.nn's)
    with pytest.raises(ValueError, match="one MPI rank per device"):
        DataParallel(net, device_ids=[0, 1])


def test_the_functional_data_parallel_calls_the_module_as_pytorchs():
    # dcgan/main.py calls nn.parallel.data_parallel(self.main, input, range(self.ngpu))
    torch = pytest.importorskip("torch")
    net, x = nn.Linear(3, 2), fnn.randn(4, 3)
    ours = fnn.nn.parallel.data_parallel(net, x)
    np.testing.assert_array_equal(ours.detach().numpy(), net(x).detach().numpy())
    bilinear, y = nn.Bilinear(3, 3, 1), fnn.randn(4, 3)
    np.testing.assert_array_equal(
        fnn.nn.parallel.data_parallel(bilinear, (x, y), device_ids=[0]).detach().numpy(),
        bilinear(x, y).detach().numpy())
    with pytest.raises(ValueError, match="data_parallel: .*one MPI rank per device"):
        fnn.nn.parallel.data_parallel(net, x, range(2))
    assert callable(torch.nn.parallel.data_parallel)  # (PyTorch's needs a GPU to run)


def test_state_dict_keys_match_torch_ddp(group, tmp_path):
    torch = pytest.importorskip("torch")
    tdist = pytest.importorskip("torch.distributed")
    if not tdist.is_available() or tdist.is_initialized():
        pytest.skip("torch.distributed unavailable or already in use")
    tdist.init_process_group("gloo", init_method=f"file://{tmp_path}/pg", rank=0,
                             world_size=1)
    try:
        tnet = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3),
                                   torch.nn.Linear(3, 2))
        theirs = torch.nn.parallel.DistributedDataParallel(tnet)
        ours = DistributedDataParallel(_model())
        assert list(ours.state_dict()) == list(theirs.state_dict())
        assert [n for n, _ in ours.named_parameters()] == [
            n for n, _ in theirs.named_parameters()]
        assert list(DataParallel(_model()).state_dict()) == list(
            torch.nn.DataParallel(tnet).state_dict())
    finally:
        tdist.destroy_process_group()


def test_a_dropped_ddp_removes_its_hooks(group):
    from fastnn.autograd import hooks

    before = hooks.state.active
    module = nn.Linear(2, 1)
    wrapped = DistributedDataParallel(module)
    assert hooks.state.active == before + 2  # one per trainable parameter
    del wrapped
    assert hooks.state.active == before  # the module lives on, without the wrapper's hooks


def test_pytorch_import_paths_in_a_fresh_process():
    import subprocess
    import sys

    script = ("import fastnn as torch\n"
              "assert 'fastnn.nn.parallel' not in __import__('sys').modules\n"
              "dist = torch.distributed\n"  # loaded on first use, as torch.nn
              "print(torch.nn.parallel.DistributedDataParallel.__name__, dist.is_available())\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["DistributedDataParallel", "True"]
