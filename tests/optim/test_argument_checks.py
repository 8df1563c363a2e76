"""Optimizer helpers and schedules refuse arguments that would silently ruin training."""

from __future__ import annotations

import pytest

import fastnn as fnn
from fastnn.optim import lr_scheduler as sched


def _opt():
    return fnn.optim.SGD(fnn.nn.Linear(3, 2).parameters(), lr=0.1)


@pytest.mark.parametrize("make,error,match", [
    (lambda o: sched.CosineAnnealing(o, 0), ValueError, r"total_steps must be an integer >= 1"),
    (lambda o: sched.CosineAnnealing(o, 10, min_factor=-1), ValueError,
     r"min_factor must be a number in \[0, 1\]"),
    (lambda o: sched.LinearDecay(o, 10, end_factor=-1), ValueError, r"end_factor must be"),
    (lambda o: sched.WarmupCosine(o, 100, 50), ValueError,
     r"warmup_steps \(100\) must be below total_steps \(50\)"),
    (lambda o: sched.LinearWarmup(o, -3), ValueError, r"warmup_steps must be an integer >= 0"),
    (lambda o: sched.LambdaLR(o, lambda t: -1.0), ValueError,
     r"learning rate at epoch 0 is -0.1; it must be finite and >= 0"),
    (lambda o: sched.CosineAnnealing(fnn.nn.Linear(3, 2), 10), TypeError,
     r"expected an optimizer .* got Linear"),
])
def test_bad_schedules_are_refused(make, error, match):
    with pytest.raises(error, match=match):
        make(_opt())


def test_clip_grad_norm_arguments():
    model = fnn.nn.Linear(3, 2)
    with pytest.raises(TypeError, match=r"params must be tensors; pass model.parameters\(\)"):
        fnn.optim.clip_grad_norm(model, 1.0)
    with pytest.raises(ValueError, match=r"max_norm must be >= 0, got -1"):
        fnn.optim.clip_grad_norm(model.parameters(), -1)


def test_load_state_dict_and_apply_name_the_expected_type():
    opt = _opt()
    with pytest.raises(TypeError, match=r"expected the dict that state_dict\(\) returned"):
        opt.load_state_dict([1, 2])
    layer = fnn.nn.Linear(3, 2)
    x, g = fnn.randn((4, 3)), fnn.randn((4, 2))
    with pytest.raises(TypeError, match=r"self_grads must be the dict that reverse\(\) returns"):
        layer.apply(opt, layer.reverse(x, g))


@pytest.mark.parametrize("group,error,match", [
    ({"momentum": -1}, ValueError, r"SGD: momentum must be >= 0, got -1"),
    ({"lr": "fast"}, TypeError, r"SGD: lr must be a real number"),
    ({"class_lr": {"bias": -2}}, ValueError, r"class_lr\['bias'\] must be >= 0"),
    ({"class_lr": {"bias": "2"}}, TypeError, r"class_lr\['bias'\] must be a real number"),
])
def test_param_groups_are_checked_like_constructor_arguments(group, error, match):
    opt = _opt()
    with pytest.raises(error, match=match):
        opt.add_param_group({"params": [fnn.zeros(3, requires_grad=True)], **group})


def test_adam_groups_and_saved_hyperparameters_are_checked():
    adam = fnn.optim.Adam(fnn.nn.Linear(3, 2).parameters())
    with pytest.raises(ValueError, match=r"Adam: betas must be in \[0, 1\), got \(1, 1\)"):
        adam.add_param_group({"params": [fnn.zeros(3, requires_grad=True)], "betas": (1, 1)})
    with pytest.raises(ValueError, match=r"Adam: eps must be >= 0"):
        fnn.optim.Adam(fnn.nn.Linear(3, 2).parameters(), eps=-1)
    saved = adam.state_dict()
    saved["param_groups"][0]["lr"] = "x"
    with pytest.raises(TypeError, match=r"Adam: lr must be a real number"):
        adam.load_state_dict(saved)
    assert adam.param_groups[0]["lr"] == pytest.approx(1e-3)  # unchanged
    saved = adam.state_dict()
    saved["state"] = {"7": {"step": 1}}
    with pytest.raises(ValueError, match=r"state for parameter '7', but this optimizer holds 2"):
        adam.load_state_dict(saved)
