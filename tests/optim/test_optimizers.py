"""Optimizer steps against a NumPy float64 reference of the same rule, over several steps.

Each test uses one parameter of each class (connective, bias, activation), so
weight decay (on every parameter, or connective only with ``decay_classes``) and
class_lr are checked together with the momentum / Adam / RMSProp state.
"""

import functools

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn, optim
from fastnn.api import composite

CLASSES = ["connective", "bias", "activation"]
SHAPES = [(3, 4), (3,), (4,)]
STEPS = 6


def sgd_ref(p, g, st, lr, wd, momentum=0.0, dampening=0.0, nesterov=False):
    g = g + wd * p
    if momentum:
        st["buf"] = g.copy() if "buf" not in st else momentum * st["buf"] + (1 - dampening) * g
        g = g + momentum * st["buf"] if nesterov else st["buf"]
    return p - lr * g


def rmsprop_ref(p, g, st, lr, wd, alpha=0.99, eps=1e-8):
    g = g + wd * p
    st["v"] = alpha * st.get("v", 0.0) + (1 - alpha) * g * g
    return p - lr * g / (np.sqrt(st["v"]) + eps)


def adam_ref(p, g, st, lr, wd, betas=(0.9, 0.999), eps=1e-8, decoupled=False):
    if decoupled:
        p = p * (1 - lr * wd)
    else:
        g = g + wd * p
    st["t"] = st.get("t", 0) + 1
    st["m"] = betas[0] * st.get("m", 0.0) + (1 - betas[0]) * g
    st["v"] = betas[1] * st.get("v", 0.0) + (1 - betas[1]) * g * g
    m_hat = st["m"] / (1 - betas[0] ** st["t"])
    v_hat = st["v"] / (1 - betas[1] ** st["t"])
    return p - lr * m_hat / (np.sqrt(v_hat) + eps)


RULES = {
    "sgd": (lambda ps, **kw: optim.SGD(ps, lr=0.1, **kw), sgd_ref, 0.1, {}),
    "sgd-momentum": (lambda ps, **kw: optim.SGD(ps, lr=0.1, momentum=0.9, **kw),
                     sgd_ref, 0.1, {"momentum": 0.9}),
    "sgd-dampening": (lambda ps, **kw: optim.SGD(ps, lr=0.1, momentum=0.8, dampening=0.3, **kw),
                      sgd_ref, 0.1, {"momentum": 0.8, "dampening": 0.3}),
    "sgd-nesterov": (lambda ps, **kw: optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True, **kw),
                     sgd_ref, 0.05, {"momentum": 0.9, "nesterov": True}),
    "rmsprop": (lambda ps, **kw: optim.RMSProp(ps, lr=0.01, **kw), rmsprop_ref, 0.01, {}),
    "adam": (lambda ps, **kw: optim.Adam(ps, lr=0.01, **kw), adam_ref, 0.01, {}),
    "adam-betas": (lambda ps, **kw: optim.Adam(ps, lr=0.02, betas=(0.8, 0.99), eps=1e-6, **kw),
                   adam_ref, 0.02, {"betas": (0.8, 0.99), "eps": 1e-6}),
    "adamw": (lambda ps, **kw: optim.AdamW(ps, lr=0.01, **kw), adam_ref, 0.01,
              {"decoupled": True}),
}


def make_params(rng):
    return [nn.Parameter.from_numpy(rng.standard_normal(s), c, dtype=fnn.float64)
            for s, c in zip(SHAPES, CLASSES)]


def run_reference(rule, lr, kwargs, start, grads, wd, class_lr, decay_classes):
    params = [p.copy() for p in start]
    states = [{} for _ in params]
    for step_grads in grads:
        for i, (cls, g) in enumerate(zip(CLASSES, step_grads)):
            lr_i = lr * class_lr.get(cls, 1.0)
            wd_i = wd if decay_classes is None or cls in decay_classes else 0.0
            params[i] = rule(params[i], g, states[i], lr_i, wd_i, **kwargs)
    return params


@pytest.fixture(params=["backend", "composite"])
def hooks(request, monkeypatch):
    """Run with the backend's own fused update hooks, or with the core's composite defaults
    (what a backend without fused hooks gets)."""
    if request.param == "composite":
        ops = fnn.get_device().ops
        for name in ("sgd_step", "adam_step", "rmsprop_step"):
            monkeypatch.setattr(ops, name, functools.partial(getattr(composite, name), ops))
    return request.param


@pytest.mark.parametrize("decay_classes", [None, ("connective",)], ids=["all", "minidx"])
@pytest.mark.parametrize("explicit", [False, True], ids=["step", "apply_gradients"])
@pytest.mark.parametrize("name", sorted(RULES))
def test_optimizer_matches_numpy_reference(name, explicit, decay_classes, hooks):
    make, rule, lr, kwargs = RULES[name]
    rng = np.random.default_rng(5)
    params = make_params(rng)
    start = [p.numpy().copy() for p in params]
    grads = [[rng.standard_normal(s) for s in SHAPES] for _ in range(STEPS)]
    wd, class_lr = 0.1, {"bias": 2.0, "activation": 0.5}
    opt = make(params, weight_decay=wd, class_lr=class_lr, decay_classes=decay_classes)
    for step_grads in grads:
        if explicit:
            opt.apply_gradients([(p, fnn.tensor(g)) for p, g in zip(params, step_grads)])
        else:
            opt.zero_grad()
            for p, g in zip(params, step_grads):
                p.grad = fnn.tensor(g)
            opt.step()
    expected = run_reference(rule, lr, kwargs, start, grads, wd, class_lr, decay_classes)
    for p, e, cls in zip(params, expected, CLASSES):
        np.testing.assert_allclose(p.numpy(), e, rtol=1e-12, atol=1e-12, err_msg=cls)


@pytest.mark.parametrize("decay_classes, decayed", [
    (None, [True, True, True]),  # PyTorch's rule: every parameter of the group
    (("connective",), [True, False, False]),  # minidx's rule
    ("bias", [False, True, False]),
    (("bias", "activation"), [False, True, True]),
])
def test_weight_decay_applies_to_decay_classes(decay_classes, decayed):
    rng = np.random.default_rng(0)
    params = make_params(rng)
    before = [p.numpy().copy() for p in params]
    opt = optim.SGD(params, lr=0.5, weight_decay=0.2, decay_classes=decay_classes)
    for p in params:
        p.grad = fnn.zeros(p.shape, dtype=fnn.float64)
    opt.step()
    for p, b, on in zip(params, before, decayed):
        np.testing.assert_allclose(p.numpy(), b * (1 - 0.5 * 0.2) if on else b)


def test_weight_decay_reaches_plain_tensors():
    """A plain tensor (no param_class) decays like any parameter, as in PyTorch, and is left
    alone by decay_classes=("connective",) (it counts as class "other")."""
    for decay_classes, factor in ((None, 1 - 0.5 * 0.2), (("connective",), 1.0)):
        w = fnn.tensor([1.0, -2.0], requires_grad=True)
        opt = optim.SGD([w], lr=0.5, weight_decay=0.2, decay_classes=decay_classes)
        w.grad = fnn.zeros((2,))
        opt.step()
        np.testing.assert_allclose(w.numpy(), np.array([1.0, -2.0]) * factor, rtol=1e-6)


@pytest.mark.parametrize("value, error, match", [
    (("weights",), ValueError, r"decay_classes names unknown parameter classes \['weights'\]"),
    (3, TypeError, r"decay_classes must be None or a tuple of parameter classes"),
])
def test_bad_decay_classes_are_refused(value, error, match):
    with pytest.raises(error, match=match):
        optim.Adam([fnn.zeros((2,), requires_grad=True)], decay_classes=value)


def test_decay_classes_survive_state_dict_and_param_groups():
    a, b = (nn.Parameter.from_numpy(np.ones(2), c) for c in ("connective", "bias"))
    opt = optim.SGD([{"params": [a]}, {"params": [b], "decay_classes": ["bias"]}], lr=0.1,
                    decay_classes=("connective",))
    assert [g["decay_classes"] for g in opt.param_groups] == [("connective",), ("bias",)]
    fresh = optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1)
    fresh.load_state_dict(opt.state_dict())
    assert [g["decay_classes"] for g in fresh.param_groups] == [("connective",), ("bias",)]


def test_parameters_without_grad_are_skipped_and_zero_grad_clears():
    rng = np.random.default_rng(1)
    params = make_params(rng)
    before = params[1].numpy().copy()
    opt = optim.Adam(params)
    params[0].grad = fnn.ones(SHAPES[0], dtype=fnn.float64)
    opt.step()
    np.testing.assert_array_equal(params[1].numpy(), before)
    opt.zero_grad()
    assert all(p.grad is None for p in params)


def test_param_groups_have_their_own_learning_rate():
    rng = np.random.default_rng(2)
    a, b = make_params(rng)[:2]
    a0, b0 = a.numpy().copy(), b.numpy().copy()
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 1.0}], lr=0.1)
    a.grad, b.grad = fnn.ones(a.shape, dtype=fnn.float64), fnn.ones(b.shape, dtype=fnn.float64)
    opt.step()
    np.testing.assert_allclose(a.numpy(), a0 - 0.1)
    np.testing.assert_allclose(b.numpy(), b0 - 1.0)


def test_errors_are_clear():
    p = make_params(np.random.default_rng(3))
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD(p, lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="lr must be >= 0"):
        optim.Adam(p, lr=-1)
    opt = optim.SGD(p[:1], lr=0.1)
    with pytest.raises(ValueError, match="does not hold"):
        opt.apply_gradients([(p[1], fnn.zeros((3,), dtype=fnn.float64))])
    with pytest.raises(ValueError, match="does not match parameter shape"):
        opt.apply_gradients([(p[0], fnn.zeros((4, 3), dtype=fnn.float64))])


@pytest.mark.parametrize("name", ["sgd-momentum", "rmsprop", "adam", "adamw"])
def test_state_dict_resume_is_bit_for_bit(name):
    make, *_ = RULES[name]
    rng = np.random.default_rng(9)
    grads = [[rng.standard_normal(s) for s in SHAPES] for _ in range(STEPS)]

    def run(params, opt, seq):
        for step_grads in seq:
            opt.apply_gradients([(p, fnn.tensor(g)) for p, g in zip(params, step_grads)])

    straight = make_params(np.random.default_rng(4))
    opt = make(straight, weight_decay=0.1)
    run(straight, opt, grads)

    first = make_params(np.random.default_rng(4))
    opt1 = make(first, weight_decay=0.1)
    run(first, opt1, grads[:3])
    saved_params, saved_opt = [p.numpy().copy() for p in first], opt1.state_dict()
    resumed = make_params(np.random.default_rng(100))
    for p, v in zip(resumed, saved_params):
        p._data = p._device.ops.from_numpy(v, 0)
    opt2 = make(resumed, weight_decay=0.0)  # hyper-parameters come back from the state dict
    opt2.load_state_dict(saved_opt)
    run(resumed, opt2, grads[3:])
    for a, b in zip(straight, resumed):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
