"""``mpiexec -n 2 fastnn train --compile``: the data-parallel step (its gradient
allreduce a program call) replays, and trains exactly as the eager two-rank run."""

from __future__ import annotations

from importlib.util import find_spec

import numpy as np
import pytest

import fastnn as fnn
from tests.distributed.mpi_run import launch

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    find_spec("sklearn") is None or find_spec("safetensors") is None,
    reason="digits and checkpoints need scikit-learn and safetensors: pip install -e "
           "'.[examples]'")]


def _two_ranks(path, *options):
    done = launch(2, "-m", "fastnn.cli", "train", "--checkpoint", str(path), *options)
    return fnn.load(path), done.stdout + done.stderr


def test_two_ranks_compiled_train_as_two_ranks_eager(tmp_path):
    options = ["--epochs", "2", "--dropout", "0.2", "--optimizer", "adam"]
    eager, _ = _two_ranks(tmp_path / "eager.safetensors", *options)
    compiled, out = _two_ranks(tmp_path / "compiled.safetensors", "--compile", *options)
    assert "runs eagerly" not in out  # replayed, not fallen back
    for key in ("loss", "train_acc", "test_acc"):
        np.testing.assert_array_equal(eager["history"][key], compiled["history"][key])
    for name in eager["model"]:
        np.testing.assert_array_equal(eager["model"][name], compiled["model"][name])
