"""Adadelta, Adamax, ASGD and Rprop against torch.optim's classes of the same name: N steps
side by side in float64 from the same weights and gradients, weights and state compared;
torch's state_dict loads into ours and ours into torch, and both carry on as one run."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn, optim
from fastnn.nn import Parameter

torch = pytest.importorskip("torch")

SHAPES = [(4, 3), (5,), (2, 2, 2)]
STEPS = 30

CONFIGS = {
    "adadelta": ("Adadelta", dict()),
    "adadelta-wd": ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1)),
    "adadelta-max": ("Adadelta", dict(lr=0.3, maximize=True, weight_decay=0.05)),
    "adamax": ("Adamax", dict(lr=0.01)),
    "adamax-wd": ("Adamax", dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    "adamax-max": ("Adamax", dict(lr=0.02, maximize=True)),
    "asgd": ("ASGD", dict(lr=0.05)),
    "asgd-avg": ("ASGD", dict(lr=0.05, lambd=1e-2, alpha=0.6, t0=5, weight_decay=0.1)),
    "asgd-max": ("ASGD", dict(lr=0.05, t0=3, maximize=True)),
    "rprop": ("Rprop", dict()),
    "rprop-tight": ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2))),
    "rprop-max": ("Rprop", dict(lr=0.02, maximize=True)),
}


def _devices():
    out = ["cpu"]
    if any(r.name == "opencl" and r.available for r in fnn.backends()):
        out.append("opencl")
    return out


def _data(seed=0):
    rng = np.random.default_rng(seed)
    params = [rng.standard_normal(s) for s in SHAPES]
    grads = [[rng.standard_normal(s) for s in SHAPES] for _ in range(STEPS)]
    for t in range(0, STEPS, 7):  # some gradients repeat their sign, some are 0 (Rprop)
        grads[t][1][:2] = 0.0
    return params, grads


def _torch_run(name, steps=range(STEPS), opt=None, tparams=None):
    cls, kwargs = CONFIGS[name]
    start, grads = _data()
    if tparams is None:
        tparams = [torch.tensor(p, dtype=torch.float64, requires_grad=True) for p in start]
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # torch keeps eta, mu and steps in the default dtype
    try:
        if opt is None:
            opt = getattr(torch.optim, cls)(tparams, **kwargs)
        for t in steps:
            for p, g in zip(tparams, grads[t]):
                p.grad = torch.tensor(g, dtype=torch.float64)
            opt.step()
    finally:
        torch.set_default_dtype(default)
    return tparams, opt


def _fastnn_run(name, device, steps=range(STEPS), opt=None, params=None):
    cls, kwargs = CONFIGS[name]
    start, grads = _data()
    if params is None:
        params = [Parameter.from_numpy(p, "connective", fnn.float64, device) for p in start]
    if opt is None:
        opt = getattr(optim, cls)(params, **kwargs)
    for t in steps:
        opt.apply_gradients([(p, fnn.tensor(g, device=device)) for p, g in zip(params, grads[t])])
    return params, opt


def _same_state(ours, theirs):
    for i in range(len(SHAPES)):
        want = theirs["state"][i]
        got = ours["state"][i]
        assert set(got) == set(want), (sorted(got), sorted(want))
        for key, value in want.items():
            np.testing.assert_allclose(np.asarray(got[key], dtype=float), value.numpy(),
                                       rtol=1e-10, atol=1e-13, err_msg=key)


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_steps_match_torch(name, device):
    tparams, topt = _torch_run(name)
    params, opt = _fastnn_run(name, device)
    for got, want in zip(params, tparams):
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-13)
    _same_state(opt.state_dict(), topt.state_dict())


def _to_torch(state_dict):
    """Our state_dict as torch's load_state_dict takes it: tensors, integer keys."""
    state = {int(k): {n: torch.as_tensor(np.asarray(v, dtype=np.float64))
                      for n, v in st.items()} for k, st in state_dict["state"].items()}
    return {"state": state, "param_groups": [dict(g) for g in state_dict["param_groups"]]}


@pytest.mark.parametrize("name", ["adadelta-wd", "adamax-wd", "asgd-avg", "rprop-tight"])
def test_torch_state_dict_loads_and_back(name):
    half = STEPS // 2
    want, _ = _torch_run(name)
    # torch's first half -> fastnn's second half
    tparams, topt = _torch_run(name, steps=range(half))
    params = [Parameter.from_numpy(p.detach().numpy(), "connective", fnn.float64, "cpu")
              for p in tparams]
    cls, kwargs = CONFIGS[name]
    ours = getattr(optim, cls)(params, **dict(kwargs, lr=123.0))
    ours.load_state_dict(topt.state_dict())
    assert ours.param_groups[0]["lr"] == topt.param_groups[0]["lr"]  # restored, as torch's
    _fastnn_run(name, "cpu", steps=range(half, STEPS), opt=ours, params=params)
    for got, w in zip(params, want):
        np.testing.assert_allclose(got.numpy(), w.detach().numpy(), rtol=1e-10, atol=1e-13)
    # fastnn's first half -> torch's second half
    params, opt = _fastnn_run(name, "cpu", steps=range(half))
    assert list(opt.state_dict()) == list(topt.state_dict()) == ["state", "param_groups"]
    tparams = [torch.tensor(p.numpy(), requires_grad=True) for p in params]
    theirs = getattr(torch.optim, cls)(tparams, **dict(kwargs, lr=123.0))
    theirs.load_state_dict(_to_torch(opt.state_dict()))
    _torch_run(name, steps=range(half, STEPS), opt=theirs, tparams=tparams)
    for got, w in zip(tparams, want):
        np.testing.assert_allclose(got.detach().numpy(), w.detach().numpy(), rtol=1e-10,
                                   atol=1e-13)


@pytest.mark.parametrize("cls", ["Adadelta", "Adamax", "ASGD", "Rprop"])
def test_torch_arguments_and_defaults(cls):
    ours = inspect.signature(getattr(optim, cls)).parameters
    theirs = inspect.signature(getattr(torch.optim, cls)).parameters
    for name, param in theirs.items():
        assert name in ours, f"{cls} lacks torch's argument {name}"
        want = param.default
        want = tuple(want) if isinstance(want, list) else want
        assert ours[name].default == want, (cls, name)
        assert ours[name].kind == param.kind, (cls, name)


@pytest.mark.parametrize("cls", ["Adadelta", "Adamax", "ASGD", "Rprop"])
def test_reverse_apply_path_matches_tape(cls):
    rng = np.random.default_rng(3)
    x = fnn.tensor(rng.standard_normal((6, 4)), dtype=fnn.float64)
    grad_out = fnn.tensor(rng.standard_normal((6, 3)), dtype=fnn.float64)
    a, b = nn.Linear(4, 3, dtype=fnn.float64), nn.Linear(4, 3, dtype=fnn.float64)
    b.load_state_dict(a.state_dict())
    opt_a, opt_b = getattr(optim, cls)(a.parameters()), getattr(optim, cls)(b.parameters())
    for _ in range(3):
        _, grads = a.reverse(x, grad_out)
        a.apply(opt_a, grads)
        opt_b.zero_grad()
        (b(x) * grad_out).sum().backward()
        opt_b.step()
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-12, err_msg=name)


def test_bad_arguments_are_named():
    p = [Parameter.from_numpy(np.zeros(3), "connective", fnn.float64, "cpu")]
    with pytest.raises(ValueError, match="etas"):
        optim.Rprop(p, etas=(1.5, 1.2))
    with pytest.raises(ValueError, match="rho"):
        optim.Adadelta(p, rho=1.5)
    with pytest.raises(TypeError, match="foreach"):
        optim.Adamax(p, foreach="yes")
    with pytest.raises(TypeError, match="maximize"):
        optim.ASGD(p, maximize="no")


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("name", ["adadelta-wd", "adamax-wd", "asgd-avg", "rprop-tight"])
def test_float32_steps_match_torch(name, device):
    cls, kwargs = CONFIGS[name]
    start, grads = _data()
    tparams = [torch.tensor(p, dtype=torch.float32, requires_grad=True) for p in start]
    topt = getattr(torch.optim, cls)(tparams, **kwargs)
    params = [Parameter.from_numpy(p.astype(np.float32), "connective", fnn.float32, device)
              for p in start]
    opt = getattr(optim, cls)(params, **kwargs)
    for t in range(STEPS):
        for p, g in zip(tparams, grads[t]):
            p.grad = torch.tensor(g, dtype=torch.float32)
        topt.step()
        opt.apply_gradients([(p, fnn.tensor(g.astype(np.float32), device=device))
                             for p, g in zip(params, grads[t])])
    for got, want in zip(params, tparams):
        assert got.dtype is fnn.float32
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=2e-5, atol=2e-6)
