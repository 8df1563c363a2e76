"""``fastnn train --data trace --model gru|lstm|transformer``: held-out accuracy with the
tape and with --reverse, and that the two ways of training agree."""

from importlib.util import find_spec

import numpy as np
import pytest

import fastnn as fnn
from fastnn.cli import main

pytestmark = pytest.mark.skipif(
    find_spec("tslearn") is None or find_spec("safetensors") is None,
    reason="the Trace data set comes with tslearn; checkpoints need safetensors")
MODELS = ["gru", "lstm", "transformer"]


def train(tmp_path, *extra, name="run"):
    path = tmp_path / f"{name}.safetensors"
    assert main(["train", "--data", "trace", "--checkpoint", str(path), *extra]) == 0
    return fnn.load(path)


@pytest.mark.parametrize("model", MODELS)
def test_sequence_models_reach_90_percent_on_trace(tmp_path, model):
    state = train(tmp_path, "--model", model)
    assert state["history"]["test_acc"][-1] >= 0.90


@pytest.mark.slow
@pytest.mark.parametrize("model", MODELS)
def test_sequence_models_reach_90_percent_with_reverse(tmp_path, model):
    state = train(tmp_path, "--model", model, "--reverse")
    assert state["history"]["test_acc"][-1] >= 0.90


@pytest.mark.parametrize("model", MODELS)
def test_tape_and_reverse_train_alike(tmp_path, model):
    tape = train(tmp_path, "--model", model, "--epochs", "2", name="tape")
    rev = train(tmp_path, "--model", model, "--epochs", "2", "--reverse", name="rev")
    np.testing.assert_allclose(rev["history"]["loss"], tape["history"]["loss"], rtol=1e-4)
    for name in tape["model"]:
        np.testing.assert_allclose(rev["model"][name], tape["model"][name], rtol=1e-3,
                                   atol=1e-5, err_msg=name)


def test_sequence_models_need_sequence_data(capsys):
    with pytest.raises(SystemExit, match="--model gru needs sequence data"):
        main(["train", "--model", "gru"])
