"""Hyperparameters of the wrong type raise a TypeError naming the optimizer and the argument
(before: Python's own "'>=' not supported between 'str' and 'int'")."""

from __future__ import annotations

import pytest

import fastnn as fnn


@pytest.fixture
def params():
    return fnn.nn.Linear(3, 2).parameters()


@pytest.mark.parametrize("make,match", [
    (lambda p: fnn.optim.SGD(p, lr="0.1"), "SGD: lr must be a real number, got str '0.1'"),
    (lambda p: fnn.optim.SGD(p, lr=0.1, momentum="x"), "SGD: momentum must be a real number"),
    (lambda p: fnn.optim.SGD(p, lr=True), "SGD: lr must be a real number, got bool"),
    (lambda p: fnn.optim.SGD(p, lr=0.1, weight_decay=None), "SGD: weight_decay must be a real"),
    (lambda p: fnn.optim.RMSProp(p, eps=None), "RMSprop: eps must be a real number"),
    (lambda p: fnn.optim.Adam(p, betas=0.9), r"Adam: betas must be a pair \(beta1, beta2\)"),
    (lambda p: fnn.optim.AdamW(p, betas=(0.9, "a")), "AdamW: betas must be a real number"),
    (lambda p: fnn.optim.Adam(p, lr=[0.1]), "Adam: lr must be a real number, got list"),
])
def test_wrong_types_name_the_argument(params, make, match):
    with pytest.raises(TypeError, match=match):
        make(params)


def test_a_param_group_with_a_string_lr_is_refused(params):
    opt = fnn.optim.SGD(params, lr=0.1)
    extra = fnn.zeros(3, requires_grad=True)
    with pytest.raises(TypeError, match="SGD: lr must be a real number"):
        opt.add_param_group({"params": [extra], "lr": "fast"})
    assert len(opt.param_groups) == 1


def test_numpy_and_int_hyperparameters_still_work(params):
    import numpy as np

    opt = fnn.optim.Adam(params, lr=np.float32(0.01), betas=(np.float64(0.9), 0.999), eps=1)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.01)
