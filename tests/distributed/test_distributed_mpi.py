"""Two MPI ranks against one process: the same weights, the same collectives' results.

Each test starts ``mpiexec -n 2`` on tests/distributed/mpi_worker.py (once per
backend) and compares what each rank wrote with a reference computed here.
"""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from tests.distributed import scenario
from tests.distributed.mpi_run import launch
from tests.distributed.mpi_worker import local_values

RANKS = 2


def _backend_or_skip(name: str) -> None:
    record = next((r for r in fnn.backends() if r.name == name), None)
    if record is None or not record.available:
        pytest.skip(f"backend {name} unavailable: {getattr(record, 'reason', 'not installed')}")


def _results(tmp_path_factory, scenario_name, *args) -> list:
    out = tmp_path_factory.mktemp(scenario_name)
    launch(RANKS, "-m", "tests.distributed.mpi_worker", scenario_name, str(out), *args)
    return [dict(np.load(out / f"{scenario_name}-{rank}.npz")) for rank in range(RANKS)]


# cuda where a GPU is lent (benchmarks/gpu_check.sh): two ranks share one GPU, so there
# the collectives are host-staged (FASTNN_NCCL=0); NCCL itself: test_cuda_nccl_gpu.py
BACKENDS = ["cpu", "opencl", "cuda"]


@pytest.fixture(scope="module", params=BACKENDS)
def trained(request, tmp_path_factory):
    _backend_or_skip(request.param)
    return request.param, _results(tmp_path_factory, "train", request.param)


@pytest.mark.parametrize("path", ["tape", "reverse", "clip"])
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_two_ranks_give_the_weights_of_one_process_on_the_full_batch(trained, path, optimizer):
    backend, ranks = trained
    reference = scenario.train(backend, path, optimizer)  # one process, full batches
    start = scenario.model(100, backend).state_dict()
    for rank, result in enumerate(ranks):
        assert int(result["size"]) == RANKS
        for name, want in reference.items():
            got = result[f"{path}/{optimizer}/{name}"]
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-10,
                                       err_msg=f"rank {rank}, {name}")
            assert np.abs(want - start[name]).max() > 1e-3  # the steps did move it


def test_one_collective_per_step(trained):
    _, ranks = trained
    # per run: one broadcast of the parameters, then one allreduce per step (one dtype,
    # one device: every gradient and the sample weights in one buffer); 3 paths x 2
    # optimizers
    per_run = 1 + len(scenario.BATCHES)
    assert [int(r["calls"]) for r in ranks] == [6 * per_run] * RANKS


@pytest.fixture(scope="module", params=BACKENDS)
def collectives(request, tmp_path_factory):
    _backend_or_skip(request.param)
    return _results(tmp_path_factory, "collectives", request.param)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_allreduce_and_broadcast_match_numpy(collectives, dtype):
    stacked = np.stack([local_values(rank, dtype) for rank in range(RANKS)])
    want = {"sum": stacked.sum(0), "max": stacked.max(0), "min": stacked.min(0),
            "mean": stacked.mean(0)}
    for rank, result in enumerate(collectives):
        for op, expected in want.items():
            key = f"allreduce/{op}/{dtype}"
            if key not in result:
                assert op == "mean" and dtype == "int64"
                continue
            assert result[key].dtype == np.dtype(dtype), key
            np.testing.assert_allclose(result[key], expected, rtol=1e-6, err_msg=key)
        np.testing.assert_array_equal(result[f"input/{dtype}"], local_values(rank, dtype))
        np.testing.assert_array_equal(result[f"broadcast/{dtype}"],
                                      local_values(RANKS - 1, dtype))


def test_ranks_that_disagree_on_shapes_all_get_a_clear_error(tmp_path_factory):
    for rank, result in enumerate(_results(tmp_path_factory, "mismatch")):
        for where in ("broadcast_parameters", "DistributedOptimizer"):
            message = str(result[where])
            assert "disagree" in message and "(5, 4)" in message and "(6, 4)" in message, (
                rank, message)


def test_nccl_hooks_on_two_ranks_with_the_host_stand_in(tmp_path_factory):
    pytest.importorskip("fastnn_cuda")
    ranks = _results(tmp_path_factory, "nccl-on-host")
    # both joined one NCCL communicator of size 2 with the id rank 0 drew (and only it)
    assert [r["joined"].tolist() for r in ranks] == [[2, 0, 1], [2, 1, 0]]
    np.testing.assert_array_equal(ranks[0]["unique_id"], ranks[1]["unique_id"])
    for dtype in ("float64", "float32", "int64"):
        stacked = np.stack([local_values(rank, dtype) for rank in range(RANKS)])
        want = {"sum": stacked.sum(0), "max": stacked.max(0), "min": stacked.min(0)}
        for result in ranks:
            for op, expected in want.items():
                np.testing.assert_array_equal(result[f"allreduce/{op}/{dtype}/0"], expected)
                np.testing.assert_array_equal(result[f"allreduce/{op}/{dtype}/1"],
                                              expected[0, 0])
            np.testing.assert_array_equal(result[f"broadcast/{dtype}"],
                                          local_values(1, dtype))
    # one NCCL call per list: 3 dtypes x (3 reductions + 1 broadcast)
    assert [int(r["nccl_calls"]) for r in ranks] == [12, 12]


# issue 25: a rank that raised (or called sys.exit) while the other waited in a collective
# left both alive for ever; now the job ends at once, non-zero, with the failing rank's
# message (one launch takes about 1 s; the timeout is only a guard against the old hang)
FAILING_RANK = """
import sys
import numpy as np
import fastnn.distributed as dist
comm = dist.init()
with dist.abort_on_failure() if sys.argv[1] == "exit" else np.errstate():
    if comm.rank == 1:
        if sys.argv[1] == "exit":
            sys.exit(3)
        raise ValueError("rank 1 cannot go on")
    comm.host_allreduce(np.ones(3), "sum")
print("rank 0 was not stopped")
"""


@pytest.mark.parametrize("how,status", [("raise", 1), ("exit", 3)])
def test_a_rank_that_fails_ends_the_job_with_its_message(how, status):
    done = launch(RANKS, "-c", FAILING_RANK, how, check=False, timeout=60)
    assert done.returncode == status, done.stderr
    if how == "raise":
        assert "Traceback" in done.stderr and "ValueError: rank 1 cannot go on" in done.stderr
    assert "rank 0 was not stopped" not in done.stdout
