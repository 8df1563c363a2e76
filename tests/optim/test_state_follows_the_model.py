"""Optimizer state follows its parameters when the model moves after some steps.

``model.to(...)`` moves parameters in place; the optimizer's momentum and Adam
buffers then live on the old device or dtype. The next step moves them along
(before: a raw AttributeError from inside the other backend).
"""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn


def _steps(model, opt, x, y, n):
    for _ in range(n):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()


def _pair(make_opt, seed=0):
    models = []
    for _ in range(2):
        fnn.manual_seed(seed)
        models.append(fnn.nn.Sequential(fnn.nn.Linear(4, 5), fnn.nn.Activation("tanh"),
                                        fnn.nn.Linear(5, 2)))
    return [(m, make_opt(m.parameters())) for m in models]


OPTIMIZERS = {
    "sgd momentum": lambda p: fnn.optim.SGD(p, lr=0.1, momentum=0.9),
    "adam": lambda p: fnn.optim.Adam(p, lr=0.01),
    "rmsprop": lambda p: fnn.optim.RMSProp(p, lr=0.01),
}


def _data(device="cpu", dtype=fnn.float32):
    rng = np.random.default_rng(1)
    x = fnn.tensor(rng.normal(size=(6, 4)), dtype=dtype, device=device)
    y = fnn.tensor(rng.normal(size=(6, 2)), dtype=dtype, device=device)
    return x, y


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_state_follows_a_dtype_change(name):
    (moved, opt), (stay, ref) = _pair(OPTIMIZERS[name])
    x, y = _data()
    _steps(moved, opt, x, y, 2)
    _steps(stay, ref, x, y, 2)
    moved.to(fnn.float64)
    stay.to(fnn.float64)
    # the reference restarts from the same state, converted by hand through the host
    for p in stay.parameters():
        for key, value in ref.state[id(p)].items():
            if hasattr(value, "shape"):
                ref.state[id(p)][key] = np.asarray(value, dtype=np.float64)
    x64, y64 = _data(dtype=fnn.float64)
    _steps(moved, opt, x64, y64, 2)
    _steps(stay, ref, x64, y64, 2)
    for p, q in zip(moved.parameters(), stay.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-12)
        for value in opt.state[id(p)].values():
            if hasattr(value, "shape"):
                assert value.dtype == np.float64


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_state_follows_a_device_change(name):
    if not any(r.name == "opencl" and r.available for r in fnn.backends()):
        pytest.skip("needs a second backend with its own array type (opencl)")
    (moved, opt), (stay, ref) = _pair(OPTIMIZERS[name])
    x, y = _data()
    _steps(moved, opt, x, y, 2)
    _steps(stay, ref, x, y, 2)
    moved.to("opencl")
    _steps(moved, opt, x.to("opencl"), y.to("opencl"), 2)
    _steps(stay, ref, x, y, 2)
    for p, q in zip(moved.parameters(), stay.parameters()):
        assert p.device == "opencl"
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=2e-5, atol=1e-6)
    # state_dict reads each state array through the backend that holds it
    saved = opt.state_dict()["state"]
    assert all(isinstance(v, np.ndarray) for st in saved.values() for v in st.values()
               if hasattr(v, "shape"))


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_one_group_over_two_devices_updates_each_part_on_its_own(name):
    if not any(r.name == "opencl" and r.available for r in fnn.backends()):
        pytest.skip("needs a second backend (opencl)")
    (split, opt), (whole, ref) = _pair(OPTIMIZERS[name])
    split[2].to("opencl")  # the head on another device, one parameter group
    x, y = _data()
    for _ in range(2):
        opt.zero_grad()
        loss = ((split[2](split[1](split[0](x)).to("opencl")) - y.to("opencl")) ** 2).mean()
        loss.backward()
        opt.step()
    _steps(whole, ref, x, y, 2)
    for p, q in zip(split.parameters(), whole.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=2e-5, atol=1e-6)
