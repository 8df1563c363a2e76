"""0-d arrays and tensors keep their shape through fnn.save / fnn.load."""

import numpy as np

import fastnn as fnn
from fastnn import nn


def test_zero_d_arrays_keep_shape(tmp_path):
    path = tmp_path / "s.safetensors"
    state = {"a": np.array(3.5), "t": fnn.tensor(np.float64(-2.0)), "v": np.arange(3.0)}
    fnn.save(state, path)
    back = fnn.load(path)
    assert back["a"].shape == () and back["a"] == 3.5
    assert back["t"].shape == () and back["t"] == -2.0
    np.testing.assert_array_equal(back["v"], np.arange(3.0))


def test_scalar_scale_model_round_trips(tmp_path):
    path = tmp_path / "m.safetensors"
    model = nn.Sequential(nn.Linear(3, 2), nn.ScalarScale(0.75))
    fnn.save({"model": model.state_dict()}, path)
    other = nn.Sequential(nn.Linear(3, 2), nn.ScalarScale(1.0))
    other.load_state_dict(fnn.load(path)["model"])
    x = fnn.randn((4, 3), seed=0)
    np.testing.assert_array_equal(other(x).numpy(), model(x).numpy())
