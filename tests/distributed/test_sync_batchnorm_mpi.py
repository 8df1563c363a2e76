"""SyncBatchNorm on two MPI ranks against one process's BatchNorm2d on the whole batch.

One ``mpiexec -n 2`` launch of tests/distributed/sync_bn_worker.py per backend; each test
reads what the ranks wrote and builds its single-process reference here.
"""

from __future__ import annotations

import numpy as np
import pytest

from fastnn import nn
from tests.distributed import sync_bn_worker as worker
from tests.distributed.mpi_run import worker_results

RANKS = 2
TOL = {"rtol": 1e-9, "atol": 1e-10}


@pytest.fixture(scope="module", params=["cpu", "opencl", "cuda"])
def ranks(request, tmp_path_factory):
    return worker_results(RANKS, "tests.distributed.sync_bn_worker", "sync", request.param,
                          tmp_path_factory.mktemp("sync"))


@pytest.fixture(scope="module")
def whole():
    """BatchNorm2d in one process on the whole batch (cpu)."""
    x, g, _, _ = worker.layer_data()
    return worker.run_layer(worker.layer(nn.BatchNorm2d), x, g)


def test_outputs_and_input_gradients_equal_batchnorm_on_the_whole_batch(ranks, whole):
    for step in range(2):
        for key in (f"y/{step}", f"x.grad/{step}"):
            got = np.concatenate([r["layer/" + key] for r in ranks])
            np.testing.assert_allclose(got, whole[key], **TOL, err_msg=key)


def test_weight_and_bias_gradients_are_each_ranks_share(ranks, whole):
    # torch's backward: weight.grad and bias.grad are local; their sum (what DDP averages,
    # times the rank count) is the whole batch's
    for step in range(2):
        for key in (f"weight.grad/{step}", f"bias.grad/{step}"):
            got = sum(r["layer/" + key] for r in ranks)
            np.testing.assert_allclose(got, whole[key], **TOL, err_msg=key)
            assert not np.allclose(ranks[0]["layer/" + key], whole[key])


def test_running_statistics_and_eval_equal_batchnorm(ranks, whole):
    x, _, _, _ = worker.layer_data()
    for rank, result in enumerate(ranks):
        for step in range(2):
            for name in ("running_mean", "running_var"):
                key = f"{name}/{step}"
                np.testing.assert_allclose(result["layer/" + key], whole[key], **TOL,
                                           err_msg=key)
            assert int(result[f"layer/num_batches_tracked/{step}"]) == step + 1
        # eval normalises with the running statistics: each rank's shard as in one process
        np.testing.assert_allclose(result["layer/eval"], worker.shard(rank, whole["eval"]),
                                   **TOL)


def test_running_variance_is_the_global_unbiased_one(ranks):
    x, _, _, _ = worker.layer_data()
    var = x.transpose(1, 0, 2, 3).reshape(x.shape[1], -1).var(1, ddof=1)
    want = 0.7 * 2.0 + 0.3 * var
    np.testing.assert_allclose(ranks[0]["layer/running_var/0"], want, **TOL)


@pytest.mark.parametrize("prefix", ["ddp/", "compiled/"])
def test_ddp_with_sync_batchnorm_equals_one_process_on_the_whole_batch(ranks, prefix):
    want = worker.train(worker.ddp_model(), 0, 1)
    for result in ranks:
        assert str(result["ddp/converted"]) == "SyncBatchNorm"
        for key, value in want.items():
            key = key.replace("ddp/", prefix)
            np.testing.assert_allclose(result[key], value, **TOL, err_msg=key)


def test_a_wrong_channel_count_is_a_clear_error_on_every_rank(ranks):
    for result in ranks:
        assert "expected input (N, C, ...) with 3 channels, got (2, 4)" in \
            str(result["error/channels"])


def test_a_rank_with_an_empty_shard_takes_part(ranks):
    x, g = worker.empty_shard_data()
    want = worker.run_layer(worker.layer(nn.BatchNorm1d), x, g)
    for key, value in want.items():
        got = np.concatenate([r["empty/" + key] for r in ranks]) if key.startswith(
            ("y/", "x.grad/", "eval")) else ranks[1]["empty/" + key]
        if key.startswith(("weight.grad", "bias.grad")):
            got = ranks[0]["empty/" + key] + ranks[1]["empty/" + key]
            np.testing.assert_array_equal(ranks[1]["empty/" + key], 0.0)
        np.testing.assert_allclose(got, value, **TOL, err_msg=key)


def test_float32_statistics_are_stable_far_from_zero_mean(ranks):
    x = worker.offset_data().astype(np.float64)
    mean = x.mean((0, 2), keepdims=True)
    want = (x - mean) / np.sqrt(x.var((0, 2), keepdims=True) + 1e-5)
    got = np.concatenate([r["offset"] for r in ranks])
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, atol=2e-3)


def test_float16_counts_past_65504_are_kept_in_float32(ranks):
    if "half/y" not in ranks[0]:
        pytest.skip("this backend has no float16")
    x = worker.half_data().astype(np.float16).astype(np.float64)
    mean, var = x.mean((0, 2, 3), keepdims=True), x.var((0, 2, 3), keepdims=True)
    want = (x - mean) / np.sqrt(var + 1e-5)
    got = np.concatenate([r["half/y"] for r in ranks])
    np.testing.assert_allclose(got, want, atol=1e-2)
    # d/dx sum(y^2) of a normalised y (no affine) is 0 up to rounding: sum y^2 = n is fixed
    for result in ranks:
        assert np.isfinite(result["half/x.grad"]).all()
        assert np.abs(result["half/x.grad"]).max() < 0.05
        np.testing.assert_allclose(result["half/running_var"],
                                   0.9 + 0.1 * var.ravel() * x[:, 0].size / (x[:, 0].size - 1),
                                   rtol=2e-3)
