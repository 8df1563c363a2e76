"""Muon and Adafactor against torch.optim's classes in float64, N steps from the same weights
and gradients; torch's state_dict loads into ours and ours into torch."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import fastnn as fnn
from fastnn import optim
from fastnn.nn import Parameter

torch = pytest.importorskip("torch")

STEPS = 12
MUON_SHAPES = [(4, 6), (7, 3), (5, 5)]
ADAFACTOR_SHAPES = [(4, 6), (7,), (2, 3, 4), ()]

CONFIGS = {
    "muon": ("Muon", MUON_SHAPES, dict(lr=0.02)),
    "muon-plain": ("Muon", MUON_SHAPES, dict(lr=0.01, nesterov=False, momentum=0.9,
                                              weight_decay=0.0, ns_steps=3)),
    "muon-adamw": ("Muon", MUON_SHAPES, dict(lr=0.01, adjust_lr_fn="match_rms_adamw")),
    "adafactor": ("Adafactor", ADAFACTOR_SHAPES, dict()),
    "adafactor-wd": ("Adafactor", ADAFACTOR_SHAPES, dict(lr=0.05, beta2_decay=-0.5,
                                                         eps=(1e-20, 1e-2), d=1.5,
                                                         weight_decay=0.1)),
    "adafactor-max": ("Adafactor", ADAFACTOR_SHAPES, dict(lr=0.05, maximize=True)),
}


def _data(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return ([rng.standard_normal(s) for s in shapes],
            [[rng.standard_normal(s) for s in shapes] for _ in range(STEPS)])


@pytest.fixture
def float64_muon(monkeypatch):
    """torch's Muon with its own Newton-Schulz code run in float64 (bfloat16() a copy)."""
    monkeypatch.setattr(torch.Tensor, "bfloat16", lambda self: self.clone())


def _torch_run(name, steps=range(STEPS), opt=None, tparams=None):
    cls, shapes, kwargs = CONFIGS[name]
    start, grads = _data(shapes)
    if tparams is None:
        tparams = [torch.tensor(p, dtype=torch.float64, requires_grad=True) for p in start]
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        opt = opt or getattr(torch.optim, cls)(tparams, **kwargs)
        for t in steps:
            for p, g in zip(tparams, grads[t]):
                p.grad = torch.tensor(g, dtype=torch.float64)
            opt.step()
    finally:
        torch.set_default_dtype(default)
    return tparams, opt


def _fastnn_run(name, device="cpu", steps=range(STEPS), opt=None, params=None):
    cls, shapes, kwargs = CONFIGS[name]
    start, grads = _data(shapes)
    if params is None:
        params = [Parameter.from_numpy(np.asarray(p), "connective", fnn.float64, device)
                  for p in start]
    opt = opt or getattr(optim, cls)(params, **kwargs)
    for t in steps:
        opt.apply_gradients([(p, fnn.tensor(g, dtype=fnn.float64, device=device))
                             for p, g in zip(params, grads[t])])
    return params, opt


def _devices():
    return ["cpu"] + (["opencl"] if any(r.name == "opencl" and r.available
                                        for r in fnn.backends()) else [])


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_steps_match_torch(name, device, float64_muon):
    tparams, topt = _torch_run(name)
    params, opt = _fastnn_run(name, device)
    for got, want in zip(params, tparams):
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-9, atol=1e-12)
    theirs, ours = topt.state_dict()["state"], opt.state_dict()["state"]
    for i in range(len(params)):
        assert set(ours[i]) == set(theirs[i])
        for key, value in theirs[i].items():
            np.testing.assert_allclose(np.asarray(ours[i][key], dtype=float),
                                       value.numpy(), rtol=1e-9, atol=1e-12, err_msg=key)


def test_muon_is_close_to_torchs_bfloat16_iteration():
    tparams, _ = _torch_run("muon", steps=range(3))
    params, _ = _fastnn_run("muon", steps=range(3))
    start, _ = _data(MUON_SHAPES)
    for got, want, p0 in zip(params, tparams, start):
        moved, torch_moved = got.numpy() - p0, want.detach().numpy() - p0
        assert np.abs(moved - torch_moved).max() <= 0.03 * np.abs(torch_moved).max()


@pytest.mark.parametrize("name", ["muon", "adafactor-wd"])
def test_torch_state_dict_loads_and_back(name, float64_muon):
    cls, shapes, kwargs = CONFIGS[name]
    half = STEPS // 2
    want, _ = _torch_run(name)
    tparams, topt = _torch_run(name, steps=range(half))
    params = [Parameter.from_numpy(p.detach().numpy(), "connective", fnn.float64, "cpu")
              for p in tparams]
    ours = getattr(optim, cls)(params, **dict(kwargs, lr=7.0))
    ours.load_state_dict(topt.state_dict())
    _fastnn_run(name, steps=range(half, STEPS), opt=ours, params=params)
    for got, w in zip(params, want):
        np.testing.assert_allclose(got.numpy(), w.detach().numpy(), rtol=1e-9, atol=1e-12)
    params, opt = _fastnn_run(name, steps=range(half))
    tparams = [torch.tensor(p.numpy(), requires_grad=True) for p in params]
    theirs = getattr(torch.optim, cls)(tparams, **dict(kwargs, lr=7.0))
    sd = opt.state_dict()
    theirs.load_state_dict({
        "state": {int(k): {n: torch.as_tensor(np.asarray(v, dtype=np.float64))
                           for n, v in st.items()} for k, st in sd["state"].items()},
        "param_groups": sd["param_groups"]})
    _torch_run(name, steps=range(half, STEPS), opt=theirs, tparams=tparams)
    for got, w in zip(tparams, want):
        np.testing.assert_allclose(got.detach().numpy(), w.detach().numpy(), rtol=1e-9,
                                   atol=1e-12)


@pytest.mark.parametrize("cls", ["Muon", "Adafactor"])
def test_torch_arguments_and_defaults(cls):
    ours = inspect.signature(getattr(optim, cls)).parameters
    theirs = inspect.signature(getattr(torch.optim, cls)).parameters
    for name, param in theirs.items():
        assert name in ours, f"{cls} lacks torch's argument {name}"
        want = tuple(param.default) if isinstance(param.default, list) else param.default
        assert ours[name].default == want, (cls, name)
        assert ours[name].kind == param.kind, (cls, name)


def test_muon_refuses_what_torch_refuses():
    vec = Parameter.from_numpy(np.zeros(3), "bias", fnn.float64, "cpu")
    mat = Parameter.from_numpy(np.zeros((2, 3)), "connective", fnn.float64, "cpu")
    with pytest.raises(ValueError, match="2-D"):
        optim.Muon([vec])
    opt = optim.Muon([mat])
    with pytest.raises(ValueError, match="2-D"):
        opt.add_param_group({"params": [vec]})
    assert len(opt.param_groups) == 1
    with pytest.raises(ValueError, match="adjust_lr_fn"):
        optim.Muon([mat], adjust_lr_fn="other")
    with pytest.raises(ValueError, match="beta2_decay"):
        optim.Adafactor([mat], beta2_decay=0.5)
