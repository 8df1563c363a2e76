"""``fastnn train`` end to end through the command line: accuracy, determinism, resume."""

from importlib.util import find_spec

import numpy as np
import pytest

import fastnn as fnn
from fastnn.cli import main
from fastnn.data import load

HINT = "pip install -e '.[examples]'"
pytestmark = pytest.mark.skipif(
    find_spec("sklearn") is None or find_spec("safetensors") is None,
    reason=f"digits and checkpoints need scikit-learn and safetensors: {HINT}")
needs_tslearn = pytest.mark.skipif(find_spec("tslearn") is None,
                                   reason="the Trace data set comes with tslearn: "
                                          'pip install --no-deps "tslearn>=0.6"')


def train(tmp_path, *extra, name="run"):
    """Run ``fastnn train`` with a checkpoint; return the saved state (history, weights)."""
    path = tmp_path / f"{name}.safetensors"
    assert main(["train", "--checkpoint", str(path), *extra]) == 0
    return fnn.load(path)


def numpy_mlp_accuracy(weights: dict, x: np.ndarray, y: np.ndarray) -> float:
    """Held-out accuracy of the saved MLP, recomputed in NumPy float64 (a reference)."""
    h = x.astype(np.float64)
    layers = sorted({int(k.split(".")[0]) for k in weights})
    for i, index in enumerate(layers):
        h = h @ weights[f"{index}.weight"].astype(np.float64).T + weights[f"{index}.bias"]
        if i < len(layers) - 1:
            h = np.maximum(h, 0.0)
    return float((h.argmax(axis=1) == y).mean())


def test_quick_run_learns_and_is_deterministic(tmp_path, capsys):
    first = train(tmp_path, "--epochs", "2", name="a")
    again = train(tmp_path, "--epochs", "2", name="b")
    other_seed = train(tmp_path, "--epochs", "2", "--seed", "1", name="c")
    out = capsys.readouterr().out
    assert "epoch 2/2" in out and "held-out accuracy" in out and "samples/s" in out
    assert first["history"]["test_acc"][-1] > 0.6  # chance is 0.1
    for key in ("loss", "train_acc", "test_acc"):
        np.testing.assert_array_equal(first["history"][key], again["history"][key])
    for name in first["model"]:
        np.testing.assert_array_equal(first["model"][name], again["model"][name])
    assert not np.array_equal(first["model"]["0.weight"], other_seed["model"]["0.weight"])


def test_tape_and_reverse_train_alike(tmp_path):
    tape = train(tmp_path, "--epochs", "2", name="tape")
    rev = train(tmp_path, "--epochs", "2", "--reverse", name="rev")
    np.testing.assert_allclose(rev["history"]["loss"], tape["history"]["loss"], rtol=1e-4)
    for name in tape["model"]:
        np.testing.assert_allclose(rev["model"][name], tape["model"][name], rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("mode", [[], ["--reverse"]], ids=["tape", "reverse"])
def test_digits_default_reaches_95_percent(tmp_path, mode):
    state = train(tmp_path, *mode)
    reported = state["history"]["test_acc"][-1]
    assert reported >= 0.95
    data = load("digits")
    reference = numpy_mlp_accuracy(state["model"], data.x_test, data.y_test)
    # float32 vs float64 may flip a near-tie: allow one image of 449
    assert abs(reference - reported) <= 1 / len(data.y_test) + 1e-12


@needs_tslearn
@pytest.mark.parametrize("mode", [[], ["--reverse"]], ids=["tape", "reverse"])
def test_trace_conv1d_reaches_90_percent(tmp_path, mode):
    state = train(tmp_path, "--data", "trace", "--model", "conv1d", *mode)
    assert state["history"]["test_acc"][-1] >= 0.90
    assert state["epoch"] == 30


@pytest.mark.parametrize("optimizer", ["sgd", "adamw", "rmsprop"])
def test_other_optimizers_learn(tmp_path, optimizer):
    lr = {"sgd": "0.05", "adamw": "0.001", "rmsprop": "0.001"}[optimizer]
    state = train(tmp_path, "--epochs", "3", "--optimizer", optimizer, "--lr", lr)
    assert state["history"]["test_acc"][-1] > 0.8


def test_resume_continues_bit_for_bit(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    assert main(["train", "--epochs", "2", "--checkpoint", str(path)]) == 0
    saved = fnn.load(path)
    assert int(saved["epoch"]) == 2
    assert "state" in saved["optimizer"] and "param_groups" in saved["optimizer"]
    assert main(["train", "--epochs", "4", "--checkpoint", str(path), "--resume"]) == 0
    resumed = fnn.load(path)
    straight = train(tmp_path, "--epochs", "4", name="straight")
    assert int(resumed["epoch"]) == 4
    for key in ("loss", "test_acc"):
        np.testing.assert_array_equal(resumed["history"][key], straight["history"][key])
    for name in straight["model"]:
        np.testing.assert_array_equal(resumed["model"][name], straight["model"][name])


@needs_tslearn
def test_resume_into_another_model_is_refused(tmp_path):
    path = tmp_path / "digits.safetensors"
    assert main(["train", "--epochs", "1", "--checkpoint", str(path)]) == 0
    with pytest.raises(SystemExit, match="saved with --data digits"):
        main(["train", "--data", "trace", "--epochs", "2", "--checkpoint", str(path),
              "--resume"])
    with pytest.raises(SystemExit, match="saved with --optimizer adam"):
        main(["train", "--optimizer", "sgd", "--epochs", "2", "--checkpoint", str(path),
              "--resume"])


@pytest.mark.parametrize("argv, message", [
    (["--resume"], "--resume needs --checkpoint"),
    (["--resume", "--checkpoint", "/nonexistent/x.safetensors"], "no checkpoint at"),
    (["--epochs", "0"], "--epochs must be >= 1"),
    (["--lr", "-1"], "--lr must be > 0"),
    (["--model", "conv1d"], "needs sequence data"),
])
def test_bad_options_say_what_to_do(argv, message):
    with pytest.raises(SystemExit, match=message):
        main(["train", *argv])


def test_unknown_backend_is_a_clean_error(capsys):
    assert main(["train", "--backend", "no-such-backend", "--epochs", "1"]) == 2
    assert "unknown backend 'no-such-backend'" in capsys.readouterr().err


def test_plot_without_matplotlib_names_the_extra(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "matplotlib", None)
    with pytest.raises(SystemExit, match=r"fastnn-core\[plot\]"):
        main(["train", "--epochs", "1", "--plot", "curves.png"])


def test_plot_epoch_ticks_are_whole_numbers():
    """A 3-epoch run had ticks at 1.25, 1.5, ..."""
    pytest.importorskip("matplotlib")
    from fastnn.cli.plot import figure
    from fastnn.cli.train import History

    history = History(loss=[1.0, 0.5, 0.3], train_acc=[0.5, 0.7, 0.8],
                      test_acc=[0.4, 0.6, 0.7])
    fig = figure(history, "mlp on digits")
    fig.canvas.draw()
    for ax in fig.axes:
        ticks = [t for t in ax.get_xticks() if 1 <= t <= 3]
        assert ticks and all(float(t).is_integer() for t in ticks), ticks


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "curves.png"
    assert main(["train", "--epochs", "2", "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("name", ["sgd", "adam", "adamw", "rmsprop", "adagrad", "radam",
                                  "nadam"])
def test_train_keeps_minidx_weight_decay_rule(name):
    """Optimizers decay every parameter by default (PyTorch's rule); fastnn train asks for
    minidx's (connective parameters only) explicitly, and its checkpoints keep it."""
    from fastnn import nn
    from fastnn.cli.train import make_optimizer

    opt = make_optimizer(name, nn.Linear(3, 2).parameters(), 1e-3)
    assert [g["decay_classes"] for g in opt.param_groups] == [("connective",)]
    assert opt.state_dict()["param_groups"][0]["decay_classes"] == ("connective",)
