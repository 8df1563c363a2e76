"""``fastnn train --compile``: the same run as without it, bit for bit."""

from importlib.util import find_spec

import numpy as np
import pytest

import fastnn as fnn
from fastnn.cli import main

pytestmark = pytest.mark.skipif(
    find_spec("sklearn") is None or find_spec("safetensors") is None,
    reason="digits and checkpoints need scikit-learn and safetensors: "
           "pip install -e '.[examples]'")


def _train(tmp_path, name, *extra):
    path = tmp_path / f"{name}.safetensors"
    assert main(["train", "--epochs", "2", "--checkpoint", str(path), *extra]) == 0
    return fnn.load(path)


@pytest.mark.parametrize("extra", [
    pytest.param(("--reverse",), marks=pytest.mark.slow),
    ("--dropout", "0.2", "--optimizer", "adam", "--schedule", "cosine")])
def test_compiled_training_equals_eager(tmp_path, extra):
    eager = _train(tmp_path, "eager", *extra)
    compiled = _train(tmp_path, "compiled", "--compile", *extra)
    for key in ("loss", "train_acc", "test_acc"):
        np.testing.assert_array_equal(eager["history"][key], compiled["history"][key])
    for name in eager["model"]:
        np.testing.assert_array_equal(eager["model"][name], compiled["model"][name])
