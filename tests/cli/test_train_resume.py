"""``fastnn train --resume`` continues bit-for-bit as a run that never stopped: with Dropout
(the host generator's state is in the checkpoint), every optimizer, and a schedule."""

from importlib.util import find_spec

import numpy as np
import pytest

import fastnn as fnn
from fastnn.cli import main
from fastnn.cli import train as train_cli
from fastnn.cli.train_state import SCHEDULES, rng_state, set_rng_state

pytestmark = pytest.mark.skipif(
    find_spec("sklearn") is None or find_spec("safetensors") is None,
    reason="digits and checkpoints need scikit-learn and safetensors")


def _run(path, *extra):
    assert main(["train", "--checkpoint", str(path), *extra]) == 0
    return fnn.load(path)


def _assert_same(a, b):
    for key in ("loss", "train_acc", "test_acc"):
        np.testing.assert_array_equal(a["history"][key], b["history"][key])
    assert set(a["model"]) == set(b["model"])
    for name in a["model"]:
        np.testing.assert_array_equal(a["model"][name], b["model"][name])


@pytest.mark.parametrize("extra", [
    ["--optimizer", "adam"],
    ["--optimizer", "sgd", "--lr", "0.05", "--reverse"],
    ["--optimizer", "nadam"],
])
def test_resume_with_dropout_is_bit_for_bit(tmp_path, extra):
    common = ["--dropout", "0.3", "--batch-size", "64", *extra]
    straight = _run(tmp_path / "straight.safetensors", "--epochs", "3", *common)
    path = tmp_path / "ckpt.safetensors"
    _run(path, "--epochs", "1", *common)
    resumed = _run(path, "--epochs", "3", "--resume", *common)
    _assert_same(resumed, straight)
    assert straight["rng"].dtype == np.uint64 and straight["data"]["epoch"] == 4


def test_without_the_rng_state_dropout_would_differ(tmp_path):
    # the test above can fail: dropping the generator state from the checkpoint breaks it
    common = ["--dropout", "0.3", "--batch-size", "64"]
    straight = _run(tmp_path / "straight.safetensors", "--epochs", "2", *common)
    path = tmp_path / "ckpt.safetensors"
    state = _run(path, "--epochs", "1", *common)
    del state["rng"]
    fnn.save(state, path)
    resumed = _run(path, "--epochs", "2", "--resume", *common)
    assert not np.array_equal(resumed["model"]["0.weight"], straight["model"]["0.weight"])


@pytest.mark.parametrize("schedule", [s for s in SCHEDULES if s != "constant"])
def test_resume_with_a_schedule_is_bit_for_bit(tmp_path, monkeypatch, schedule):
    common = ["--schedule", schedule, "--dropout", "0.1", "--batch-size", "128",
              "--optimizer", "sgd", "--lr", "0.05"]
    straight = _run(tmp_path / "straight.safetensors", "--epochs", "3", *common)
    # an interrupted 3-epoch run: the first part sees the 3-epoch schedule too
    real = train_cli.make_schedule
    monkeypatch.setattr(train_cli, "make_schedule",
                        lambda name, opt, lr, total: real(name, opt, lr, total * 3))
    path = tmp_path / "ckpt.safetensors"
    first = _run(path, "--epochs", "1", *common)
    assert "schedule" in first
    monkeypatch.setattr(train_cli, "make_schedule", real)
    resumed = _run(path, "--epochs", "3", "--resume", *common)
    _assert_same(resumed, straight)


@pytest.mark.parametrize("optimizer", train_cli.OPTIMIZERS)
def test_every_optimizer_trains(tmp_path, optimizer):
    lr = {"sgd": "0.05", "adagrad": "0.05"}.get(optimizer, "0.003")
    state = _run(tmp_path / "o.safetensors", "--epochs", "2", "--optimizer", optimizer,
                 "--lr", lr)
    assert state["history"]["test_acc"][-1] > 0.7  # chance is 0.1


def test_resume_refuses_another_schedule_or_dropout(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    _run(path, "--epochs", "1", "--schedule", "cosine", "--dropout", "0.2")
    with pytest.raises(SystemExit, match="saved with --schedule cosine"):
        main(["train", "--checkpoint", str(path), "--resume", "--epochs", "2",
              "--dropout", "0.2"])
    with pytest.raises(SystemExit, match="saved with --dropout 0.2"):
        main(["train", "--checkpoint", str(path), "--resume", "--epochs", "2",
              "--schedule", "cosine"])


def test_rng_state_round_trip():
    gen = np.random.default_rng(12345)
    gen.standard_normal(7)
    gen.integers(0, 10, size=3, dtype=np.int32)  # leaves a buffered 32-bit word
    words = rng_state(gen)
    want = gen.random(5)
    other = np.random.default_rng(0)
    set_rng_state(other, words)
    np.testing.assert_array_equal(other.random(5), want)
    with pytest.raises(ValueError, match="6 words"):
        set_rng_state(other, words[:3])
