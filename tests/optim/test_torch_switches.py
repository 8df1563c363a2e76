"""PyTorch's optimizer switches on every optimizer that has them in torch 2.13:
``maximize`` ascends (the gradient negated before weight decay and the rule), and
``foreach``, ``fused``, ``capturable`` and ``differentiable`` are accepted."""

import inspect

import numpy as np
import pytest

import fastnn as fnn
from fastnn import optim

try:
    import torch
except ImportError:
    torch = None

NAMES = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "RAdam", "NAdam", "Adadelta", "Adamax",
         "ASGD", "Rprop"]
OPTIONS = {"SGD": dict(lr=0.1, momentum=0.9, weight_decay=0.01),
           "RMSprop": dict(lr=0.01, momentum=0.5, weight_decay=0.01),
           "Adagrad": dict(lr=0.1, weight_decay=0.01), "Rprop": dict(lr=0.01)}
SWITCHES = ("foreach", "maximize", "capturable", "differentiable", "fused")


def _steps(name, grads, sign, **extra):
    p = fnn.nn.Parameter(fnn.tensor(np.array([0.5, -1.0, 2.0])))
    opt = getattr(optim, name)([p], **OPTIONS.get(name, dict(lr=0.01, weight_decay=0.01)),
                               **extra)
    for g in grads:
        p.grad = fnn.tensor(sign * g)
        opt.step()
    return p.numpy()


@pytest.mark.parametrize("name", NAMES)
def test_maximize_is_minimizing_the_negated_loss(name):
    grads = [np.array([0.3, -0.2, 0.1]) * (k + 1) for k in range(4)]
    ascended = _steps(name, grads, 1.0, maximize=True)
    descended = _steps(name, grads, -1.0)
    np.testing.assert_allclose(ascended, descended, rtol=1e-12)
    assert not np.allclose(ascended, _steps(name, grads, 1.0))
    if torch is not None:
        p = torch.nn.Parameter(torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64))
        opt = getattr(torch.optim, name)([p], **OPTIONS.get(name, dict(lr=0.01,
                                                                      weight_decay=0.01)),
                                         maximize=True)
        for g in grads:
            p.grad = torch.tensor(g)
            opt.step()
        np.testing.assert_allclose(ascended, p.detach().numpy(), rtol=1e-8)


@pytest.mark.parametrize("name", NAMES)
def test_the_switches_pytorch_has_are_accepted(name):
    ours = inspect.signature(getattr(optim, name)).parameters
    if torch is not None:
        theirs = inspect.signature(getattr(torch.optim, name)).parameters
        assert [s for s in SWITCHES if s in theirs and s not in ours] == []
    given = {s: (None if s in ("foreach", "fused") else False) for s in SWITCHES if s in ours}
    grads = [np.array([0.3, -0.2, 0.1])]
    np.testing.assert_array_equal(_steps(name, grads, 1.0, **given), _steps(name, grads, 1.0))
    if "foreach" in ours:
        with pytest.raises(TypeError, match="foreach must be None, True or False"):
            getattr(optim, name)([fnn.nn.Parameter(fnn.ones(2))], foreach="yes")
    with pytest.raises(TypeError, match="maximize must be True or False"):
        getattr(optim, name)([fnn.nn.Parameter(fnn.ones(2))], maximize="False")
