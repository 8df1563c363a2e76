"""Bad inputs to optimizers fail at the call, naming the argument, what was given and the fix;
a corrupt saved state fails in load_state_dict (not at the next step) and changes nothing."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn, optim

ALL = ["SGD", "RMSprop", "Adam", "AdamW", "Adagrad", "RAdam", "NAdam"]


def _params():
    return list(nn.Linear(3, 2).parameters())


@pytest.mark.parametrize("cls", ALL)
def test_a_bare_tensor_or_a_number_is_not_a_parameter_list(cls):
    with pytest.raises(TypeError, match=r"params must be an iterable of Tensors .* got a single "
                                        r"Tensor of shape \(2, 3\); pass \[tensor\]"):
        getattr(optim, cls)(nn.Linear(3, 2).weight)
    with pytest.raises(TypeError, match=r"got int; pass model.parameters\(\)"):
        getattr(optim, cls)(5)


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("kwargs, error, match", [
    ({"lr": -0.1}, ValueError, r"lr must be >= 0, got -0.1"),
    ({"lr": "0.1"}, TypeError, r"lr must be a real number, got str '0.1'"),
    ({"weight_decay": -1}, ValueError, r"weight_decay must be >= 0"),
    ({"l1": -1}, ValueError, r"l1 must be >= 0"),
    ({"class_lr": {"weights": 2.0}}, ValueError, r"class_lr names unknown parameter classes"),
])
def test_shared_hyperparameters(cls, kwargs, error, match):
    with pytest.raises(error, match=f"{cls}: {match}"):
        getattr(optim, cls)(_params(), **kwargs)


def _param():
    return fnn.zeros((3,), requires_grad=True)


@pytest.mark.parametrize("pairs, match", [
    (lambda p: p, r"expected \(parameter, gradient\) pairs, got Tensor"),
    (lambda p: 5, r"expected \(parameter, gradient\) pairs, got int 5"),
    (lambda p: [p], r"item 0 must be a \(parameter, gradient\) pair, got Tensor"),
    (lambda p: [(p,)], r"item 0 must be a \(parameter, gradient\) pair, got a 1-item tuple"),
    (lambda p: [(p, p, p)], r"item 0 must be a .* pair, got a 3-item tuple; pass a list"),
    (lambda p: [(1, 2)], r"item 0 must start with a parameter \(a Tensor\), got int"),
    (lambda p: [(p, None)], r"item 0 has no gradient \(None\) for its parameter of shape"),
])
def test_apply_gradients_names_a_malformed_argument(pairs, match):
    param = _param()
    opt = optim.SGD([param], lr=0.1)
    with pytest.raises(TypeError, match=r"SGD\.apply_gradients: " + match):
        opt.apply_gradients(pairs(param))
    np.testing.assert_array_equal(param.numpy(), np.zeros(3))


@pytest.mark.parametrize("make, error, match", [
    (lambda p: optim.Adam(p, eps="x"), TypeError, r"Adam: eps must be a real number, got str"),
    (lambda p: optim.RMSprop(p, eps=-1e-8), ValueError, r"RMSprop: eps must be >= 0"),
    (lambda p: optim.Adam(p, betas=(0.9, 1.5)), ValueError, r"betas must be in \[0, 1\), got "
                                                            r"\(0.9, 1.5\); e.g. betas="),
    (lambda p: optim.NAdam(p, betas=(-0.1, 0.9)), ValueError, r"NAdam: betas must be in"),
    (lambda p: optim.RAdam(p, betas=0.9), TypeError, r"betas must be a pair \(beta1, beta2\)"),
    (lambda p: optim.AdamW(p, amsgrad="yes"), TypeError, r"amsgrad must be True or False"),
    (lambda p: optim.RMSprop(p, centered=1), TypeError, r"centered must be True or False"),
    (lambda p: optim.RMSprop(p, alpha=1.5), ValueError, r"alpha must be in \[0, 1\]"),
    (lambda p: optim.SGD(p, momentum=-0.5), ValueError, r"momentum must be >= 0"),
    (lambda p: optim.SGD(p, nesterov=True), ValueError, r"Nesterov momentum needs momentum > 0"),
    (lambda p: optim.SGD(p, dampening=2), ValueError, r"dampening must be in \[0, 1\]"),
    (lambda p: optim.Adagrad(p, lr_decay=-1), ValueError, r"lr_decay must be >= 0"),
    (lambda p: optim.NAdam(p, momentum_decay="x"), TypeError, r"momentum_decay must be a real"),
    (lambda p: optim.SGD(p + p[:1]), ValueError, r"given twice .* give each once"),
    # PyTorch refuses a non-leaf (the optimizer would update an op's result, not the leaf)
    (lambda p: optim.Adam([p[0] * 2]), ValueError, r"can't optimize a non-leaf Tensor"),
    (lambda p: optim.SGD([]), ValueError, r"empty parameter list"),
])
def test_rule_arguments(make, error, match):
    with pytest.raises(error, match=match):
        make(_params())


def _stepped(cls="Adam", **kwargs):
    model = nn.Linear(3, 2, dtype=fnn.float64)
    opt = getattr(optim, cls)(model.parameters(), **kwargs)
    model(fnn.tensor(np.ones((4, 3)))).sum().backward()
    opt.step()
    return model, opt


def test_load_state_dict_of_nothing_names_what_it_wants():
    _, opt = _stepped()
    with pytest.raises(TypeError, match=r"expected the dict that state_dict\(\) returned, got "
                                        r"NoneType; pass optimizer.state_dict\(\)"):
        opt.load_state_dict(None)


CORRUPTIONS = {
    "a step that is a string": (lambda s: s["state"][0].update(step="abc"),
                                r"state 'step' of parameter 0 must be a number"),
    "a negative step": (lambda s: s["state"][0].update(step=-2),
                        r"must be a step count \(an integer >= 0\), got -2"),
    "a fractional step": (lambda s: s["state"][0].update(step=1.5), r"got 1.5"),
    "a moment of another shape": (lambda s: s["state"][0].update(exp_avg=np.zeros((5, 5))),
                                  r"'exp_avg' of parameter 0 has shape \(5, 5\)"),
    "a moment of strings": (lambda s: s["state"][0].update(exp_avg=np.full((2, 3), "a")),
                            r"holds <U1 values, not numbers"),
    "a moment that is a number": (lambda s: s["state"][0].update(exp_avg_sq=0.5),
                                  r"'exp_avg_sq' of parameter 0 must be an array"),
    "a state that is not a dict": (lambda s: s["state"].update({"1": 3}),
                                   r"the state of parameter 1 must be a dict"),
    "groups that are not a list": (lambda s: s.update(param_groups="x"),
                                   r"'param_groups' must be a list of dicts"),
    "a state that is a list": (lambda s: s.update(state=[1]), r"'state' must be a dict"),
    "a missing moment": (lambda s: s["state"][0].pop("exp_avg_sq"),
                         r"keeps \['exp_avg', 'exp_avg_sq', 'step'\]"),
    "a broken beta pair": (lambda s: s["param_groups"][0].update(betas=(0.9,)),
                           r"betas must be a pair"),
    "a string switch": (lambda s: s["param_groups"][0].update(amsgrad="no"),
                        r"amsgrad must be True or False"),
    "amsgrad on without its maximum": (lambda s: s["param_groups"][0].update(amsgrad=True),
                                       r"keeps \['exp_avg', 'exp_avg_sq', 'max_exp_avg_sq'"),
}


@pytest.mark.parametrize("what", sorted(CORRUPTIONS))
def test_corrupt_state_fails_at_load_and_changes_nothing(what):
    mutate, match = CORRUPTIONS[what]
    model, opt = _stepped()
    saved = copy.deepcopy(opt.state_dict())
    before = opt.state_dict()
    bad = copy.deepcopy(saved)
    mutate(bad)
    with pytest.raises((TypeError, ValueError), match=match):
        opt.load_state_dict(bad)
    after = opt.state_dict()  # nothing changed: the next step runs on the old state
    assert after["param_groups"] == before["param_groups"]
    for key, st in before["state"].items():
        for name, value in st.items():
            np.testing.assert_array_equal(after["state"][key][name], value)
    model(fnn.tensor(np.ones((4, 3)))).sum().backward()
    opt.step()


@pytest.mark.parametrize("cls, kwargs, key", [
    ("RMSprop", {"momentum": 0.9}, "momentum_buffer"),
    ("RMSprop", {"centered": True}, "grad_avg"),
    ("NAdam", {}, "mu_product"),
    ("Adagrad", {}, "sum"),
])
def test_every_rule_refuses_a_partial_state(cls, kwargs, key):
    _, opt = _stepped(cls, **kwargs)
    state = opt.state_dict()
    del state["state"][0][key]
    with pytest.raises(ValueError, match=r"saved from another optimizer"):
        opt.load_state_dict(state)
