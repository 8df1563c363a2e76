"""A float scalar meeting an integer tensor gives float32, whichever side the scalar is on.

As in PyTorch (``2.5 / torch.tensor([1, 2])`` is float). The scalar-first forms
used to build the scalar in the tensor's integer dtype, truncating 2.5 to 2, and
``where(cond, int_tensor, 2.5)`` labelled float64 data as int64.
"""

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F

INTS = np.array([1, 2, 3], dtype=np.int64)

CASES = {
    "rdiv": (lambda a: 2.5 / a, lambda a: 2.5 / a),
    "rpow": (lambda a: 2.5 ** a, lambda a: 2.5 ** a),
    "add scalar first": (lambda a: F.add(2.5, a), lambda a: 2.5 + a),
    "sub scalar first": (lambda a: F.sub(2.5, a), lambda a: 2.5 - a),
    "maximum scalar first": (lambda a: F.maximum(2.5, a), lambda a: np.maximum(2.5, a)),
    "where scalar a": (lambda a: F.where(a > 1, 2.5, a), lambda a: np.where(a > 1, 2.5, a)),
    "where scalar b": (lambda a: F.where(a > 1, a, 2.5), lambda a: np.where(a > 1, a, 2.5)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_float_scalar_with_int_tensor_is_float32(name):
    fn, reference = CASES[name]
    out = fn(fnn.tensor(INTS))
    assert out.dtype is fnn.float32
    assert out.numpy().dtype == np.float32  # the data agrees with the label
    np.testing.assert_allclose(out.numpy(), reference(INTS.astype(np.float64)), rtol=1e-6)


def test_int_scalar_with_int_tensor_stays_integer():
    a = fnn.tensor(INTS)
    pairs = ((F.add(2, a), 2 + INTS), (F.where(a > 1, a, 7), np.where(INTS > 1, INTS, 7)))
    for out, expected in pairs:
        assert out.dtype is fnn.int64
        np.testing.assert_array_equal(out.numpy(), expected)


def test_scalar_first_gradient_unchanged():
    x = fnn.tensor(np.array([0.5, 2.0]), dtype=fnn.float64, requires_grad=True)
    (2.0 / x + 3.0 ** x).sum().backward()
    xv = np.array([0.5, 2.0])
    np.testing.assert_allclose(x.grad.numpy(), -2.0 / xv**2 + 3.0**xv * np.log(3.0), rtol=1e-12)
