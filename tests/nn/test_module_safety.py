"""Module operations that used to damage a model silently now refuse, and change nothing."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn


def _weights(model):
    return {name: p.numpy().copy() for name, p in model.named_parameters()}


def test_rebinding_a_parameter_to_a_plain_tensor_is_refused():
    m = nn.Linear(3, 2)
    before = _weights(m)
    with pytest.raises(TypeError, match=r"cannot assign a plain Tensor to parameter 'weight'"):
        with fnn.no_grad():
            m.weight = m.weight * 0.5
    assert set(dict(m.named_parameters())) == {"weight", "bias"}
    np.testing.assert_array_equal(m.weight.numpy(), before["weight"])
    weight = m.weight
    with fnn.no_grad():
        m.weight *= 0.5  # in place, as PyTorch: the same Parameter, halved
    assert m.weight is weight
    np.testing.assert_array_equal(m.weight.numpy(), before["weight"] * 0.5)
    m.bias = None  # removing a parameter stays allowed, as in PyTorch
    assert set(dict(m.named_parameters())) == {"weight"}
    m.extra = fnn.ones(2)  # a new, non-parameter attribute too
    assert set(dict(m.named_parameters())) == {"weight"}


@pytest.mark.parametrize("dtype", [fnn.int64, fnn.bool_])
def test_to_a_non_floating_dtype_is_refused_and_changes_nothing(dtype):
    m = nn.Linear(3, 2)
    before = _weights(m)
    with pytest.raises(TypeError, match=r"parameters must stay floating point"):
        m.to(dtype)
    for name, p in m.named_parameters():
        assert p.dtype == fnn.float32
        np.testing.assert_array_equal(p.numpy(), before[name])


def test_a_load_that_fails_on_one_value_loads_nothing():
    m = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 2))
    before = _weights(m)
    state = {name: np.zeros_like(v) for name, v in before.items()}
    state["1.bias"] = np.array(["a", "b"])  # right shape, cannot become float32
    with pytest.raises(TypeError, match=r"'1.bias' cannot become float32.*nothing was loaded"):
        m.load_state_dict(state)
    for name, p in m.named_parameters():
        np.testing.assert_array_equal(p.numpy(), before[name])


@pytest.mark.parametrize("make,match", [
    (lambda: nn.Linear(3.7, 5), r"Linear: in_features must be an integer >= 1, got 3.7"),
    (lambda: nn.Linear(-1, 5), r"Linear: in_features must be an integer >= 1, got -1"),
    (lambda: nn.Conv1d(4, 8, 3, groups=0), r"Conv1d: groups must be an integer >= 1, got 0"),
    (lambda: nn.Conv1d(4, 8, 3, padding=-1), r"Conv1d: padding must be an integer >= 0"),
    (lambda: nn.LayerNorm(2.5),
     r"LayerNorm: normalized_shape must be an int or a non-empty list of ints, got 2.5"),
])
def test_layer_sizes_must_be_integers(make, match):
    with pytest.raises(ValueError, match=match):
        make()
    assert nn.Linear(np.int64(3), 5).in_features == 3
