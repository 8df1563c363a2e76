"""The core's composite defaults for fused hooks agree with the NumPy backend's fused ones."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn.api import composite, hookspec

rng = np.random.default_rng(7)


@pytest.fixture
def ops():
    return fnn.get_device().ops


def _close(a, b):
    for x, y in zip(a if isinstance(a, (list, tuple)) else [a],
                    b if isinstance(b, (list, tuple)) else [b]):
        if isinstance(x, list):
            _close(x, y)
        elif x is None:
            assert y is None
        else:
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-12, atol=1e-14)


def test_every_fused_hook_has_a_composite():
    for name in hookspec.OPS:
        assert callable(getattr(composite, name)), name


@pytest.mark.parametrize("kind", ["relu", "leaky_relu", "sigmoid", "tanh", "silu", "gelu",
                                  "softplus", "identity"])
def test_bias_act(ops, kind):
    x, b = rng.standard_normal((5, 4)), rng.standard_normal(4)
    _close(composite.bias_act(ops, x, b, kind, 0.2), ops.bias_act(x, b, kind, 0.2))


def test_softmax_family(ops):
    x = rng.standard_normal((3, 6)) * 10
    _close(composite.softmax(ops, x, 1), ops.softmax(x, 1))
    _close(composite.log_softmax(ops, x, 0), ops.log_softmax(x, 0))
    targets = np.array([0, 5, 2])
    _close(composite.softmax_cross_entropy(ops, x, targets), ops.softmax_cross_entropy(x, targets))
    _close(composite.rms_div(ops, x, 1e-6), ops.rms_div(x, 1e-6))


def _state(n=3):
    return [rng.standard_normal((4, 3)) for _ in range(n)]


@pytest.mark.parametrize("nesterov", [False, True])
def test_sgd_step(ops, nesterov):
    params, grads, bufs = _state(), _state(), _state()
    args = ([0.1, 0.2, 0.3], [0.0, 0.01, 0.0], 0.9, 0.1, nesterov)
    for first in (True, False):
        expected = composite.sgd_step(ops, [p.copy() for p in params], grads,
                                      [b.copy() for b in bufs], *args, first)
        got = ops.sgd_step([p.copy() for p in params], grads, [b.copy() for b in bufs],
                           *args, first)
        _close(expected, got)


@pytest.mark.parametrize("decoupled", [False, True])
def test_adam_step(ops, decoupled):
    params, grads = _state(), _state()
    m, v = _state(), [np.abs(a) for a in _state()]
    args = ([1e-2] * 3, [0.1, 0.0, 0.05], 0.9, 0.999, 1e-8, 3, decoupled)
    expected = composite.adam_step(ops, [p.copy() for p in params], grads,
                                   [a.copy() for a in m], [a.copy() for a in v], *args)
    got = ops.adam_step([p.copy() for p in params], grads, [a.copy() for a in m],
                        [a.copy() for a in v], *args)
    _close(expected, got)


def test_rmsprop_step(ops):
    params, grads, v = _state(), _state(), [np.abs(a) for a in _state()]
    args = ([1e-2] * 3, [0.0, 0.1, 0.0], 0.99, 1e-8)
    expected = composite.rmsprop_step(ops, [p.copy() for p in params], grads,
                                      [a.copy() for a in v], *args)
    got = ops.rmsprop_step([p.copy() for p in params], grads, [a.copy() for a in v], *args)
    _close(expected, got)
