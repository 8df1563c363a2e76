"""The newer optimizers with PyTorch's parameter groups: add_param_group mid-run (its own
options, the defaults for the rest) steps as torch's does, and a pickled or deep-copied
optimizer carries on exactly as the original."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import fastnn as fnn
from fastnn import optim
from fastnn.nn import Parameter

torch = pytest.importorskip("torch")

SHAPES = [(3, 4), (4, 2), (5, 3)]  # 2-D: Muon takes them too
OPTIONS = {
    "Adadelta": ({}, {"lr": 0.3, "rho": 0.8}),
    "Adamax": ({"lr": 0.01}, {"lr": 0.05, "weight_decay": 0.1}),
    "ASGD": ({"lr": 0.02, "t0": 2}, {"lr": 0.05}),
    "Rprop": ({"lr": 0.01}, {"lr": 0.05, "etas": (0.4, 1.3)}),
    "Adafactor": ({"lr": 0.02}, {"lr": 0.05, "d": 2.0}),
    "Muon": ({"lr": 0.02}, {"lr": 0.01, "nesterov": False}),
    "Adam": ({"lr": 0.01}, {"lr": 0.05, "amsgrad": True}),
}


def _grads(step):
    rng = np.random.default_rng(100 + step)
    return [rng.standard_normal(s) for s in SHAPES]


def _start():
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s) for s in SHAPES]


def _run_torch(cls, first, added, monkeypatch):
    monkeypatch.setattr(torch.Tensor, "bfloat16", lambda self: self.clone())  # Muon in f64
    ps = [torch.tensor(p, requires_grad=True) for p in _start()]
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        opt = getattr(torch.optim, cls)(ps[:2], **first)
        for t in range(8):
            if t == 3:
                opt.add_param_group({"params": [ps[2]], **added})
            for p, g in zip(ps, _grads(t)):
                p.grad = torch.tensor(g)
            opt.step()
    finally:
        torch.set_default_dtype(default)
    return [p.detach().numpy() for p in ps]


def _run_ours(cls, first, added, steps=range(8), state=None):
    if state is None:
        ps = [Parameter.from_numpy(p, "connective", fnn.float64, "cpu") for p in _start()]
        opt = getattr(optim, cls)(ps[:2], **first)
    else:
        ps, opt = state
    for t in steps:
        if t == 3:
            opt.add_param_group({"params": [ps[2]], **added})
        live = ps if t >= 3 else ps[:2]
        opt.apply_gradients([(p, g) for p, g in zip(live, _grads(t))])
    return ps, opt


@pytest.mark.parametrize("cls", sorted(OPTIONS))
def test_add_param_group_mid_run_as_torch(cls, monkeypatch):
    first, added = OPTIONS[cls]
    want = _run_torch(cls, first, added, monkeypatch)
    ps, opt = _run_ours(cls, first, added)
    for got, w in zip(ps, want):
        np.testing.assert_allclose(got.numpy(), w, rtol=1e-9, atol=1e-12)
    group = opt.param_groups[1]
    for name, value in opt.defaults.items():
        if name not in ("params", "class_lr", "decay_classes"):
            assert group[name] == added.get(name, value), name


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
@pytest.mark.parametrize("cls", ["Adadelta", "Adamax", "ASGD", "Rprop", "Adafactor", "Muon"])
def test_a_copied_optimizer_carries_on(cls, how):
    first, added = OPTIONS[cls]
    straight, _ = _run_ours(cls, first, added)
    ps, opt = _run_ours(cls, first, added, steps=range(5))
    copy_of = pickle.loads(pickle.dumps((ps, opt))) if how == "pickle" else copy.deepcopy(
        (ps, opt))
    resumed, _ = _run_ours(cls, first, added, steps=range(5, 8), state=copy_of)
    for a, b in zip(straight, resumed):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_a_set_in_add_param_group_is_refused_as_torch_refuses_it():
    p = Parameter.from_numpy(np.zeros(3), "connective", fnn.float64, "cpu")
    q = Parameter.from_numpy(np.zeros(2), "connective", fnn.float64, "cpu")
    with pytest.raises(TypeError, match="ordered"):
        torch.optim.SGD([torch.zeros(2, requires_grad=True)], lr=0.1).add_param_group(
            {"params": {torch.zeros(2, requires_grad=True)}})
    opt = optim.Adamax([p])
    with pytest.raises(TypeError, match="ordered collection"):
        opt.add_param_group({"params": {q}})
    assert len(opt.param_groups) == 1


def _linear(lib):
    lib.manual_seed(0)
    return lib.nn.Linear(3, 2)


def test_extra_group_keys_are_kept_as_torch_keeps_them():
    """PyTorch keeps a param group's extra keys (a "name" to log by, an "initial_lr" a
    scheduler resumes from) and saves them; a key spelt like an option warns here."""
    for lib in (torch, fnn):
        model = _linear(lib)
        opt = lib.optim.SGD([{"params": [model.weight], "name": "w", "initial_lr": 0.2},
                             {"params": [model.bias], "initial_lr": 0.4}], lr=0.1)
        assert opt.param_groups[0]["name"] == "w" and "name" not in opt.param_groups[1]
        assert opt.state_dict()["param_groups"][0]["name"] == "w"
        sched = lib.optim.lr_scheduler.StepLR(opt, 2, last_epoch=3)
        assert sched.base_lrs == [0.2, 0.4] and sched.last_epoch == 4
        again = lib.optim.SGD([{"params": [model.weight]}, {"params": [model.bias]}], lr=0.1)
        again.load_state_dict(opt.state_dict())
        assert again.param_groups[0]["name"] == "w"
    with pytest.warns(UserWarning, match="'momentun' .*did you mean 'momentum'"):
        opt = optim.SGD([{"params": [_linear(fnn).weight], "momentun": 0.9}], lr=0.1)
    assert opt.param_groups[0]["momentum"] == 0


def test_named_parameters_as_torch_takes_them():
    """PyTorch's optimizers take model.named_parameters(): the names go to "param_names"."""
    got = {}
    for lib in (torch, fnn):
        model = _linear(lib)
        opt = lib.optim.Adam(model.named_parameters(), lr=0.1)
        assert opt.param_groups[0]["params"] == [model.weight, model.bias] or lib is torch
        before = model.weight.detach().numpy().copy()
        model(lib.ones(4, 3)).sum().backward()
        opt.step()
        groups = opt.state_dict()["param_groups"]
        got[lib] = (groups[0]["param_names"], groups[0]["params"],
                    model.weight.detach().numpy() - before)
        with pytest.raises(ValueError, match="with/without names"):
            lib.optim.SGD([("weight", model.weight), model.bias], lr=0.1)
    assert got[fnn][:2] == got[torch][:2] == (["weight", "bias"], [0, 1])
    np.testing.assert_allclose(got[fnn][2], got[torch][2], rtol=1e-6)
