"""``mpiexec -n 2 fastnn train`` against one process: accuracy, weights, output, resume."""

from __future__ import annotations

from importlib.util import find_spec

import numpy as np
import pytest

import fastnn as fnn
from fastnn.cli import main
from tests.distributed.mpi_run import launch

pytestmark = pytest.mark.skipif(
    find_spec("sklearn") is None or find_spec("safetensors") is None,
    reason="digits and checkpoints need scikit-learn and safetensors: pip install -e "
           "'.[examples]'")


def one_process(path, *options):
    assert main(["train", "--checkpoint", str(path), *options]) == 0
    return fnn.load(path)


def two_ranks(path, *options):
    done = launch(2, "-m", "fastnn.cli", "train", "--checkpoint", str(path), *options)
    return fnn.load(path), done.stdout


def assert_same_training(a, b):
    # float32 sums in another order: the weights agree to rounding, the accuracy exactly
    # or by a sample at most
    assert abs(a["history"]["test_acc"][-1] - b["history"]["test_acc"][-1]) <= 1 / 449 + 1e-9
    for name, want in a["model"].items():
        np.testing.assert_allclose(b["model"][name], want, rtol=0, atol=1e-4, err_msg=name)


def test_two_ranks_train_as_one_process_and_only_rank_0_prints(tmp_path):
    options = ["--epochs", "3", "--batch-size", "32"]
    one = one_process(tmp_path / "one.safetensors", *options)
    two, stdout = two_ranks(tmp_path / "two.safetensors", *options)
    assert one["history"]["test_acc"][-1] > 0.85  # it learned
    assert_same_training(one, two)
    np.testing.assert_allclose(two["history"]["loss"], one["history"]["loss"], rtol=1e-4)
    assert stdout.count("held-out accuracy") == 1 and stdout.count("saved checkpoint") == 1
    assert "2 ranks" in stdout


def test_a_checkpoint_of_two_ranks_resumes_on_one_reverse_path(tmp_path):
    options = ["--reverse", "--batch-size", "16"]
    straight = one_process(tmp_path / "straight.safetensors", "--epochs", "2", *options)
    path = tmp_path / "resumed.safetensors"
    two_ranks(path, "--epochs", "1", *options)
    resumed = one_process(path, "--epochs", "2", "--resume", *options)
    assert len(resumed["history"]["test_acc"]) == 2
    assert_same_training(straight, resumed)


def test_a_global_batch_that_does_not_split_is_refused():
    done = launch(2, "-m", "fastnn.cli", "train", "--epochs", "1", "--batch-size", "33",
                  check=False)
    assert done.returncode != 0
    assert "--batch-size 33 (the global batch) does not split evenly over 2 ranks" in (
        done.stderr + done.stdout)


def test_a_rank_that_fails_inside_fastnn_train_ends_the_job():
    # issue 25: rank 1 stops with a message (SystemExit, as the CLI's checks do) after
    # its first epoch while rank 0 waits in the epoch's allreduce: that hung for ever
    code = ("import os, sys\n"
            "from fastnn.cli import main, train_ranks\n"
            "def broken(progress, comm):\n"
            "    raise SystemExit('fastnn train: rank 1 cannot go on')\n"
            "if os.environ.get('PMI_RANK') == '1':\n"
            "    train_ranks.sum_over_ranks = broken\n"
            "sys.exit(main(['train', '--epochs', '2', '--batch-size', '32']))\n")
    done = launch(2, "-c", code, check=False, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "fastnn train: rank 1 cannot go on" in done.stderr
