"""Every update rule over many steps in float64: against an independent NumPy reference
(everywhere) and against PyTorch's optimizers (where torch is installed), on cpu and opencl;
state_dict()/load_state_dict() mid-run continues exactly as an uninterrupted run."""

from __future__ import annotations

import math

import numpy as np
import pytest

import fastnn as fnn
from fastnn import optim
from fastnn.nn import Parameter

SHAPES = [(4, 3), (5,), (2, 2, 2)]
STEPS = 25

# name -> (fastnn class, torch class name, keyword arguments); each runs with the same names
CONFIGS = {
    "sgd": ("SGD", dict(lr=0.1)),
    "sgd-momentum": ("SGD", dict(lr=0.05, momentum=0.9)),
    "sgd-dampening-wd": ("SGD", dict(lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.1)),
    "sgd-nesterov": ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    "rmsprop": ("RMSprop", dict(lr=0.01)),
    "rmsprop-wd": ("RMSprop", dict(lr=0.01, alpha=0.9, eps=1e-6, weight_decay=0.1)),
    "rmsprop-momentum": ("RMSprop", dict(lr=0.01, momentum=0.9)),
    "rmsprop-centered": ("RMSprop", dict(lr=0.01, centered=True)),
    "rmsprop-centered-momentum": ("RMSprop", dict(lr=0.005, momentum=0.5, centered=True,
                                                  weight_decay=0.05)),
    "adam": ("Adam", dict(lr=0.01)),
    "adam-wd": ("Adam", dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1)),
    "adam-amsgrad": ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.01)),
    "adam-decoupled": ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    "adamw": ("AdamW", dict(lr=0.01)),
    "adamw-amsgrad": ("AdamW", dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
    "adagrad": ("Adagrad", dict(lr=0.1)),
    "adagrad-decay": ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1,
                                      initial_accumulator_value=0.5, eps=1e-8)),
    "radam": ("RAdam", dict(lr=0.01)),
    "radam-wd": ("RAdam", dict(lr=0.01, weight_decay=0.1)),
    "radam-decoupled": ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    "nadam": ("NAdam", dict(lr=0.01)),
    "nadam-wd": ("NAdam", dict(lr=0.01, weight_decay=0.1, momentum_decay=0.01)),
    "nadam-decoupled": ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
}


def _devices():
    out = ["cpu"]
    if any(r.name == "opencl" and r.available for r in fnn.backends()):
        out.append("opencl")
    return out


DEVICES = _devices()


def _start(seed=0):
    rng = np.random.default_rng(seed)
    params = [rng.standard_normal(s) for s in SHAPES]
    grads = [[rng.standard_normal(s) for s in SHAPES] for _ in range(STEPS)]
    return params, grads


def _fastnn_run(name, device, steps=range(STEPS), opt=None, params=None):
    cls, kwargs = CONFIGS[name]
    start, grads = _start()
    if params is None:
        params = [Parameter.from_numpy(p, "connective", fnn.float64, device) for p in start]
    if opt is None:
        opt = getattr(optim, cls)(params, **kwargs)
    for t in steps:
        opt.apply_gradients([(p, fnn.tensor(g, device=device)) for p, g in zip(params, grads[t])])
    return params, opt


# ---------------------------------------------------------------- NumPy float64 reference

def _numpy_run(name):
    """The rules as PyTorch's documentation writes them, one parameter at a time."""
    cls, kw = CONFIGS[name]
    start, grads = _start()
    out = []
    for k, p in enumerate(start):
        p = p.copy()
        st = {}
        for t in range(1, STEPS + 1):
            p = _numpy_step(cls, kw, p, grads[t - 1][k], st, t)
        out.append(p)
    return out


def _numpy_step(cls, kw, p, g, st, t):
    lr, wd = kw["lr"], kw.get("weight_decay", 0.0 if cls != "AdamW" else 0.01)
    b1, b2 = kw.get("betas", (0.9, 0.999))
    decoupled = cls == "AdamW" or kw.get("decoupled_weight_decay", False)
    if decoupled:
        p = p * (1 - lr * wd)
    elif cls != "Adagrad":
        g = g + wd * p
    if cls == "SGD":
        mu, damp = kw.get("momentum", 0.0), kw.get("dampening", 0.0)
        if mu:
            st["b"] = g.copy() if t == 1 else mu * st["b"] + (1 - damp) * g
            g = g + mu * st["b"] if kw.get("nesterov") else st["b"]
        return p - lr * g
    if cls == "RMSprop":
        alpha, eps, mu = kw.get("alpha", 0.99), kw.get("eps", 1e-8), kw.get("momentum", 0.0)
        st["v"] = alpha * st.get("v", 0.0) + (1 - alpha) * g * g
        if kw.get("centered"):
            st["a"] = alpha * st.get("a", 0.0) + (1 - alpha) * g
            d = np.sqrt(st["v"] - st["a"] ** 2) + eps
        else:
            d = np.sqrt(st["v"]) + eps
        if mu:
            st["b"] = mu * st.get("b", 0.0) + g / d
            return p - lr * st["b"]
        return p - lr * g / d
    if cls == "Adagrad":
        g = g + wd * p
        st["s"] = st.get("s", kw.get("initial_accumulator_value", 0.0)) + g * g
        clr = lr / (1 + (t - 1) * kw.get("lr_decay", 0.0))
        return p - clr * g / (np.sqrt(st["s"]) + kw.get("eps", 1e-10))
    eps = kw.get("eps", 1e-8)
    st["m"] = b1 * st.get("m", 0.0) + (1 - b1) * g
    st["v"] = b2 * st.get("v", 0.0) + (1 - b2) * g * g
    c1, c2 = 1 - b1**t, 1 - b2**t
    if cls in ("Adam", "AdamW"):
        v = st["v"]
        if kw.get("amsgrad"):
            st["vmax"] = v = np.maximum(st.get("vmax", 0.0), st["v"])
        return p - lr * (st["m"] / c1) / (np.sqrt(v / c2) + eps)
    if cls == "RAdam":
        rho_inf = 2 / (1 - b2) - 1
        rho = rho_inf - 2 * t * b2**t / c2
        if rho <= 5:
            return p - lr * st["m"] / c1
        r = math.sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho))
        return p - lr * r * (st["m"] / c1) * math.sqrt(c2) / (np.sqrt(st["v"]) + eps)
    # NAdam
    psi = kw.get("momentum_decay", 4e-3)
    mu = b1 * (1 - 0.5 * 0.96 ** (t * psi))
    mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * psi))
    st["prod"] = st.get("prod", 1.0) * mu
    d = np.sqrt(st["v"] / c2) + eps
    return (p - lr * (1 - mu) / (1 - st["prod"]) * g / d
            - lr * mu_next / (1 - st["prod"] * mu_next) * st["m"] / d)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_rule_matches_numpy_float64(name, device):
    params, _ = _fastnn_run(name, device)
    for got, want in zip(params, _numpy_run(name)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_rule_matches_pytorch(name, device):
    torch = pytest.importorskip("torch")
    cls, kwargs = CONFIGS[name]
    start, grads = _start()
    tparams = [torch.tensor(p, dtype=torch.float64, requires_grad=True) for p in start]
    # NOTE: PyTorch keeps scalar state (NAdam's mu_product, every step count) in the default
    # dtype: float32 would round mu_product to 1e-8 relative, so make it float64
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        topt = getattr(torch.optim, cls)(tparams, **kwargs)
        for t in range(STEPS):
            for p, g in zip(tparams, grads[t]):
                p.grad = torch.tensor(g, dtype=torch.float64)
            topt.step()
    finally:
        torch.set_default_dtype(default)
    params, opt = _fastnn_run(name, device)
    for got, want in zip(params, tparams):
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)
    # the state entries PyTorch keeps, with PyTorch's names and values
    ours = opt.state_dict()["state"]
    theirs = topt.state_dict()["state"]
    for i in range(len(SHAPES)):
        kept = {k: v for k, v in theirs.get(i, {}).items() if v is not None}  # SGD: None
        assert set(ours.get(i, {})) == set(kept), (ours.get(i), kept.keys())
        for key, value in kept.items():
            want = value.numpy() if hasattr(value, "numpy") else value
            np.testing.assert_allclose(ours[i][key], want, rtol=1e-10, atol=1e-12)


def test_pytorch_defaults():
    torch = pytest.importorskip("torch")
    import inspect

    for cls in ("SGD", "RMSprop", "Adam", "AdamW", "Adagrad", "RAdam", "NAdam"):
        ours = inspect.signature(getattr(optim, cls)).parameters
        theirs = inspect.signature(getattr(torch.optim, cls)).parameters
        for name, param in theirs.items():
            if name in ("params", "foreach", "maximize", "capturable", "differentiable",
                        "fused"):
                continue
            assert name in ours, f"{cls} lacks PyTorch's argument {name}"
            want = param.default
            got = ours[name].default
            assert got == (tuple(want) if isinstance(want, (tuple, list)) else want), (cls, name)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_state_dict_round_trip_mid_run(name, device, tmp_path):
    straight, _ = _fastnn_run(name, device)
    first, opt = _fastnn_run(name, device, steps=range(STEPS // 2))
    fnn.save({"opt": opt.state_dict(), "params": {str(i): p for i, p in enumerate(first)}},
             tmp_path / "mid.safetensors")
    saved = fnn.load(tmp_path / "mid.safetensors")
    cls, kwargs = CONFIGS[name]
    params = [Parameter.from_numpy(saved["params"][str(i)], "connective", fnn.float64, device)
              for i in range(len(SHAPES))]
    other = dict(kwargs, lr=kwargs["lr"] * 3)  # load_state_dict restores the hyperparameters
    fresh = getattr(optim, cls)(params, **other)
    fresh.load_state_dict(saved["opt"])
    assert fresh.param_groups[0]["lr"] == kwargs["lr"]
    resumed, _ = _fastnn_run(name, device, steps=range(STEPS // 2, STEPS), opt=fresh,
                             params=params)
    for a, b in zip(straight, resumed):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_param_groups_change_between_steps_as_pytorch():
    torch = pytest.importorskip("torch")
    start, grads = _start()
    ours = [Parameter.from_numpy(p, "connective", fnn.float64) for p in start]
    theirs = [torch.tensor(p, requires_grad=True) for p in start]
    opt = optim.Adam([{"params": ours[:2]}, {"params": ours[2:], "lr": 0.05}], lr=0.01)
    topt = torch.optim.Adam([{"params": theirs[:2]}, {"params": theirs[2:], "lr": 0.05}],
                            lr=0.01)
    for t in range(STEPS):
        if t == 10:
            for o in (opt, topt):
                o.param_groups[0]["lr"] = 0.002
                o.param_groups[1]["betas"] = (0.5, 0.9)
        opt.apply_gradients([(p, fnn.tensor(g)) for p, g in zip(ours, grads[t])])
        for p, g in zip(theirs, grads[t]):
            p.grad = torch.tensor(g)
        topt.step()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-10)


@pytest.mark.parametrize("cls", ["SGD", "Adam", "RMSprop", "Adagrad", "RAdam", "NAdam"])
def test_l1_adds_sign_to_connective_gradients_only(cls):
    rng = np.random.default_rng(1)
    w0, b0 = rng.standard_normal((3, 2)), rng.standard_normal(2)
    g_w, g_b = rng.standard_normal((3, 2)), rng.standard_normal(2)

    def run(l1, grad_w):
        w = Parameter.from_numpy(w0, "connective", fnn.float64)
        b = Parameter.from_numpy(b0, "bias", fnn.float64)
        opt = getattr(optim, cls)([w, b], lr=0.01, l1=l1)
        opt.apply_gradients([(w, fnn.tensor(grad_w)), (b, fnn.tensor(g_b))])
        return w.numpy(), b.numpy()

    w_l1, b_l1 = run(0.3, g_w)
    w_ref, b_ref = run(0.0, g_w + 0.3 * np.sign(w0))
    np.testing.assert_allclose(w_l1, w_ref, rtol=1e-12)
    np.testing.assert_array_equal(b_l1, b_ref)  # a bias takes no L1 term


def test_zero_grad_drops_or_zeros_as_pytorch():
    w = Parameter.from_numpy(np.ones((2, 3)), "connective", fnn.float64)
    opt = optim.SGD([w], lr=0.1)
    w.grad = fnn.tensor(np.full((2, 3), 5.0))
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros((2, 3)))
    opt.zero_grad()
    assert w.grad is None


# ---------------------------------------------------------------- weight decay over a model

DECAY_CONFIGS = {
    "SGD": dict(lr=0.05, momentum=0.9, weight_decay=0.1),
    "Adam": dict(lr=0.01, weight_decay=0.1),
    "AdamW": dict(lr=0.01, weight_decay=0.1),
    "RMSprop": dict(lr=0.01, weight_decay=0.1),
    "Adagrad": dict(lr=0.1, weight_decay=0.1),
}


def _twin_models(torch):
    """A fastnn model with weights, biases and norm parameters, and PyTorch's twin with the
    same values, both float64. Tanh, not ReLU: a unit ReLU switches off has a gradient of
    exactly 0 in one library and ~1e-17 in the other, which Adagrad's g / sqrt(sum g^2) turns
    into a full step; for the same reason the Linear before BatchNorm has no bias (BatchNorm
    removes it: its gradient is 0 up to rounding)."""
    from fastnn import nn

    ours = nn.Sequential(nn.Linear(4, 6, dtype=fnn.float64), nn.LayerNorm(6, dtype=fnn.float64),
                         nn.Tanh(), nn.Linear(6, 5, bias=False, dtype=fnn.float64),
                         nn.BatchNorm1d(5, dtype=fnn.float64), nn.Linear(5, 3, dtype=fnn.float64))
    tnn = torch.nn
    theirs = tnn.Sequential(tnn.Linear(4, 6), tnn.LayerNorm(6), tnn.Tanh(),
                            tnn.Linear(6, 5, bias=False),
                            tnn.BatchNorm1d(5), tnn.Linear(5, 3)).double()
    rng = np.random.default_rng(3)
    with torch.no_grad():  # norms start away from 1 and 0, so their decay shows
        for p in theirs.parameters():
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape))))
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


@pytest.mark.parametrize("minidx", [False, True], ids=["all", "decay_classes"])
@pytest.mark.parametrize("cls", sorted(DECAY_CONFIGS))
def test_weight_decay_over_a_model_matches_pytorch(cls, minidx):
    """weight_decay decays biases and norm parameters too, as PyTorch's; with
    decay_classes=("connective",) only the weights decay, which PyTorch writes as two
    parameter groups."""
    torch = pytest.importorskip("torch")
    import fastnn.functional as F

    kwargs = DECAY_CONFIGS[cls]
    ours, theirs = _twin_models(torch)
    if minidx:
        opt = getattr(optim, cls)(ours.parameters(), decay_classes=("connective",), **kwargs)
        classes = [p.param_class for p in ours.parameters()]
        assert set(classes) > {"connective"}  # the model has parameters that must not decay
        tparams = list(theirs.parameters())
        groups = [{"params": [t for t, c in zip(tparams, classes) if c == "connective"]},
                  {"params": [t for t, c in zip(tparams, classes) if c != "connective"],
                   "weight_decay": 0.0}]
        topt = getattr(torch.optim, cls)(groups, **kwargs)
    else:
        opt = getattr(optim, cls)(ours.parameters(), **kwargs)
        topt = getattr(torch.optim, cls)(theirs.parameters(), **kwargs)
    rng = np.random.default_rng(4)
    for _ in range(6):
        x, y = rng.standard_normal((8, 4)), rng.standard_normal((8, 3))
        opt.zero_grad()
        F.mse_loss(ours(fnn.tensor(x)), fnn.tensor(y)).backward()
        opt.step()
        topt.zero_grad()
        torch.nn.functional.mse_loss(theirs(torch.tensor(x)), torch.tensor(y)).backward()
        topt.step()
        want = {k: v.numpy() for k, v in theirs.state_dict().items()}
        for name, value in ours.state_dict().items():
            np.testing.assert_allclose(value, want[name], rtol=1e-9, atol=1e-11, err_msg=name)
