"""``fastnn train --model cnn``: Conv2d, BatchNorm and max pooling on the digits as 8x8 images."""

from importlib.util import find_spec

import numpy as np
import pytest

from fastnn.data import load
from tests.cli.test_train import train

pytestmark = pytest.mark.skipif(
    find_spec("sklearn") is None or find_spec("safetensors") is None,
    reason="digits and checkpoints need scikit-learn and safetensors")


def torch_accuracy(weights: dict, x: np.ndarray, y: np.ndarray) -> float:
    """Held-out accuracy of the saved weights in the same network built with PyTorch."""
    torch = pytest.importorskip("torch")
    tnn = torch.nn
    model = tnn.Sequential(
        tnn.Unflatten(1, (1, 8, 8)),
        tnn.Conv2d(1, 16, 3, padding=1), tnn.BatchNorm2d(16), tnn.ReLU(), tnn.MaxPool2d(2),
        tnn.Conv2d(16, 32, 3, padding=1), tnn.BatchNorm2d(32), tnn.ReLU(), tnn.MaxPool2d(2),
        tnn.Flatten(), tnn.Linear(128, 10)).double().eval()
    model.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in weights.items()})
    with torch.no_grad():
        logits = model(torch.tensor(x, dtype=torch.float64)).numpy()
    return float((logits.argmax(axis=1) == y).mean())


@pytest.mark.slow  # two trainings of the CNN: ~20 s; .ci/run runs it
def test_cnn_reaches_98_percent_with_the_tape_and_with_reverse(tmp_path):
    tape = train(tmp_path, "--model", "cnn", name="tape")
    rev = train(tmp_path, "--model", "cnn", "--reverse", name="rev")
    data = load("digits")
    for state in (tape, rev):
        reported = state["history"]["test_acc"][-1]
        assert reported >= 0.98
        assert "1.running_var" not in state["model"]  # index 0 is the reshape
        assert state["model"]["2.running_var"].shape == (16,)
        assert int(state["model"]["2.num_batches_tracked"]) == 20 * -(-len(data.y_train) // 32)
        # float32 vs float64 may flip a near-tie: allow one image of 449
        reference = torch_accuracy(state["model"], data.x_test, data.y_test)
        assert abs(reference - reported) <= 1 / len(data.y_test) + 1e-12
    np.testing.assert_allclose(rev["history"]["loss"], tape["history"]["loss"], rtol=1e-3)
