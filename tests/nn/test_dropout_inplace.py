"""nn.Dropout(p, inplace=True), as PyTorch's: the mask's result written into the input
(the same tensor back), the values and gradients of the out-of-place layer with the
same seed, a leaf that requires grad refused, and eval mode the identity."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn

F64 = fnn.float64


def _grads(inplace, x):
    fnn.manual_seed(0)
    first, drop, head = nn.Linear(6, 8, dtype=F64), nn.Dropout(0.5, inplace=inplace), \
        nn.Linear(8, 3, dtype=F64)
    xt = fnn.tensor(x, dtype=F64, requires_grad=True)
    hidden = first(xt)
    out = drop(hidden, seed=11)
    if inplace:
        assert out is hidden  # written into its input, as PyTorch's dropout_
    (head(out) ** 2).sum().backward()
    return out.detach().numpy(), [xt.grad.numpy(), first.weight.grad.numpy(),
                                  first.bias.grad.numpy()]


def test_inplace_dropout_writes_its_input_with_the_out_of_place_values_and_grads():
    x = np.random.default_rng(0).normal(size=(5, 6))
    want, want_grads = _grads(False, x)
    got, got_grads = _grads(True, x)
    assert (want == 0).any() and (want != 0).any()  # a mask that drops some, keeps some
    np.testing.assert_array_equal(got, want)
    for g, w in zip(got_grads, want_grads):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-15)


def test_inplace_dropout_refuses_a_leaf_that_requires_grad():
    x = fnn.tensor(np.ones((3, 4)), requires_grad=True)
    with pytest.raises(RuntimeError, match="in-place"):
        nn.Dropout(0.5, inplace=True)(x)


def test_inplace_dropout_is_the_identity_in_eval_mode_and_says_inplace_in_its_repr():
    layer = nn.Dropout(0.3, inplace=True)
    assert repr(layer) == "Dropout(p=0.3, inplace=True)"
    x = fnn.tensor(np.arange(6.0).reshape(2, 3))
    assert layer.eval()(x) is x
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0).reshape(2, 3))
    with pytest.raises(TypeError, match="inplace"):
        nn.Dropout(0.3, inplace="yes")
