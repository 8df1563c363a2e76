"""PyTorch's distributed spelling on two MPI ranks against NumPy and one process.

One ``mpiexec -n 2`` launch of tests/distributed/torch_worker.py; each test reads what
the ranks wrote and builds its reference here.
"""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import optim
from tests.distributed import scenario
from tests.distributed.mpi_run import launch, worker_results
from tests.distributed.torch_worker import GLOBAL_BATCH, STEPS, TwoBranches, batches, values

RANKS = 2


@pytest.fixture(scope="module", params=["cpu", "opencl", "cuda"])
def ranks(request, tmp_path_factory):
    return worker_results(RANKS, "tests.distributed.torch_worker", "torch", request.param,
                          tmp_path_factory.mktemp("torch"))


def test_process_group_state_and_contradicting_arguments(ranks):
    for rank, result in enumerate(ranks):
        assert result["world"].tolist() == [rank, RANKS]
        assert str(result["backend"]) == "gloo"
        assert "world_size 3 was asked for, but MPI started 2" in str(result["error/world_size"])
        assert f"rank {1 - rank} was asked for" in str(result["error/rank"])
        assert "mpiexec -n N" in str(result["error/rank"])
        assert not result["initialized_after_errors"] and not result["initialized_at_end"]


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_in_place_collectives_match_numpy(ranks, dtype):
    stacked = np.stack([values(rank, dtype) for rank in range(RANKS)])
    want = {"SUM": stacked.sum(0), "PRODUCT": stacked.prod(0), "MIN": stacked.min(0),
            "MAX": stacked.max(0), "AVG": stacked.mean(0)}
    for rank, result in enumerate(ranks):
        for op, expected in want.items():
            key = f"all_reduce/{op}/{dtype}"
            if op == "AVG" and dtype == "int64":
                assert key not in result
                continue
            assert result[key].dtype == np.dtype(dtype), key
            np.testing.assert_allclose(result[key], expected, rtol=1e-6, err_msg=key)
            # written into the storage: another view of it sees the result, the rest stays
            np.testing.assert_array_equal(result[key + "/alias"], result[key].reshape(-1))
            np.testing.assert_array_equal(result[key + "/untouched"], np.zeros((3, 4)))
        np.testing.assert_array_equal(result[f"broadcast/{dtype}"], values(1, dtype))
        np.testing.assert_array_equal(result[f"all_gather/{dtype}"], stacked)
        np.testing.assert_array_equal(result[f"all_gather_into_tensor/{dtype}"],
                                      stacked.reshape(RANKS * 3, 4))
        # reduce writes on dst (1) only; the other rank keeps its input
        np.testing.assert_array_equal(result[f"reduce/{dtype}"],
                                      stacked.max(0) if rank == 1 else values(rank, dtype))
        if rank == 0:
            np.testing.assert_array_equal(result[f"gather/{dtype}"], stacked)
        else:
            assert f"gather/{dtype}" not in result
        np.testing.assert_array_equal(result[f"scatter/{dtype}"], values(10 + rank, dtype))
        assert bool(result[f"scatter/{dtype}/waited"])


def test_bool_and_object_collectives(ranks):
    for result in ranks:
        np.testing.assert_array_equal(result["all_reduce/bool/max"], [True, True, False])
        assert result["all_gather_object"].tolist() == [0, 1]
        assert str(result["broadcast_object_list"]) == "from 1"


def test_ranks_that_disagree_on_a_dtype_all_get_the_same_error(ranks):
    messages = [str(result["error/dtype_across_ranks"]) for result in ranks]
    assert messages[0] == messages[1]
    assert "disagree" in messages[0] and "float64" in messages[0] and "float32" in messages[0]


def _device(ranks) -> str:
    return str(ranks[0]["device"])


def _one_process_training(device) -> dict:
    """Rank 0's starting model, trained alone on each whole global batch."""
    net = scenario.model(100, device)
    opt = optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    for step in range(STEPS):
        x, y = batches(step)
        opt.zero_grad()
        F.cross_entropy(net(fnn.tensor(x, device=device)), fnn.tensor(y, device=device)).backward()
        opt.step()
    return {name: np.asarray(value) for name, value in net.state_dict().items()}


def test_ddp_on_two_halves_gives_the_weights_of_one_process_on_the_whole_batch(ranks):
    assert GLOBAL_BATCH % RANKS == 0  # equal halves: the mean of the means is the mean
    reference = _one_process_training(_device(ranks))
    start = scenario.model(100, _device(ranks)).state_dict()
    for rank, result in enumerate(ranks):
        assert result["ddp/keys"].tolist() == [f"module.{k}" for k in reference]
        assert result["ddp/named_parameters"].tolist() == result["ddp/keys"].tolist()
        for name, want in reference.items():
            for run in ("ddp", "compiled"):  # eager, and the step through fnn.compile
                got = result[f"{run}/module.{name}"]
                np.testing.assert_allclose(got, want, rtol=0, atol=1e-10,
                                           err_msg=f"{run}: rank {rank}, {name}")
            assert np.abs(want - np.asarray(start[name])).max() > 1e-3  # training moved it


def _grads(device, x, y) -> dict:
    net = scenario.model(100, device)
    F.cross_entropy(net(fnn.tensor(x, device=device)), fnn.tensor(y, device=device)).backward()
    return {f"module.{n}": p.grad.numpy() for n, p in net.named_parameters()}


def test_no_sync_accumulates_locally_then_averages_the_sums(ranks):
    x, y = batches(0)
    device = _device(ranks)
    local = [_grads(device, x[r:4:RANKS], y[r:4:RANKS]) for r in range(RANKS)]
    second = [_grads(device, x[4 + r:8:RANKS], y[4 + r:8:RANKS]) for r in range(RANKS)]
    for rank, result in enumerate(ranks):
        for name, want in local[rank].items():
            np.testing.assert_allclose(result[f"no_sync/local/{name}"], want, atol=1e-12)
            # torch's semantics: the synchronised .grad is the mean of the ranks' sums
            mean = sum(local[r][name] + second[r][name] for r in range(RANKS)) / RANKS
            np.testing.assert_allclose(result[f"no_sync/synced/{name}"], mean, atol=1e-12)
    assert np.abs(local[0]["module.0.weight"] - local[1]["module.0.weight"]).max() > 1e-3


def test_a_parameter_one_rank_did_not_reach_gets_zeros_from_it(ranks):
    per_rank = []
    for rank in range(RANKS):
        with fnn.use(_device(ranks)):
            net = TwoBranches()
            x = fnn.tensor(values(rank, "float64")[:, :3])
        net(x, use_b=rank == 1).sum().backward()
        per_rank.append({n: p.grad for n, p in net.named_parameters()})
    for result in ranks:
        assert result["unused/none"].tolist() == ["module.c.weight", "module.c.bias"]
        for name in ("a.weight", "a.bias"):
            want = sum(g[name].numpy() for g in per_rank) / RANKS
            np.testing.assert_allclose(result[f"unused/module.{name}"], want, atol=1e-12)
        for name in ("b.weight", "b.bias"):  # PyTorch: (0 + g_1) / 2
            want = per_rank[1][name].numpy() / RANKS
            np.testing.assert_allclose(result[f"unused/module.{name}"], want, atol=1e-12)


def test_buffers_are_rank_0s_at_each_synchronised_forward(ranks):
    momentum = 0.1
    batch_means = [[r[f"buffers/{step}/linear_out_mean"] for step in range(2)] for r in ranks]
    assert np.abs(batch_means[0][0] - batch_means[1][0]).max() > 1e-3  # the ranks differ
    for rank, result in enumerate(ranks):
        first = momentum * batch_means[rank][0]
        np.testing.assert_allclose(result["buffers/0/running_mean"], first, atol=1e-12)
        from_rank_0 = momentum * batch_means[0][0]  # broadcast before the second forward
        second = (1 - momentum) * from_rank_0 + momentum * batch_means[rank][1]
        np.testing.assert_allclose(result["buffers/1/running_mean"], second, atol=1e-12)


PRELUDE = """
import os, sys
import numpy as np
os.chdir(sys.argv[1])
import fastnn as torch
from fastnn.utils.data import TensorDataset
def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
rng = np.random.default_rng(0)
train_set = TensorDataset(torch.tensor(rng.normal(size=(64, 4)), dtype=torch.float32),
                          torch.tensor(rng.integers(0, 2, 64)))
loss_fn, epochs = torch.nn.CrossEntropyLoss(), 2
"""


def test_the_script_in_docs_runs_on_two_ranks(tmp_path):
    from tests.distributed.mpi_run import ROOT

    text = (ROOT / "docs" / "distributed.md").read_text()
    section = text.split("## From a PyTorch DDP script", 1)[1]
    script = section.split("```python\n", 1)[1].split("```", 1)[0]
    done = launch(RANKS, "-c", PRELUDE + script + "\nprint('final', float(last[0]))\n",
                  str(tmp_path))
    finals = [line for line in done.stdout.splitlines() if line.startswith("final")]
    assert len(finals) == RANKS and len(set(finals)) == 1  # the all-reduced loss, everywhere
    saved = fnn.load(str(tmp_path / "model.safetensors"))
    assert sorted(saved) == ["0.bias", "0.weight", "2.bias", "2.weight"]
