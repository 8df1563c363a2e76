"""Comparison operators and method spellings behave as in PyTorch."""

import numpy as np

import fastnn as fnn


def test_eq_and_ne_are_elementwise_and_tensors_still_hash_by_identity():
    a_np, b_np = np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 3.0])
    a, b = fnn.tensor(a_np), fnn.tensor(b_np)
    np.testing.assert_array_equal((a == b).numpy(), a_np == b_np)
    np.testing.assert_array_equal((a != b).numpy(), a_np != b_np)
    np.testing.assert_array_equal((a == 2).numpy(), a_np == 2)
    assert (a == b).dtype == fnn.bool_
    np.testing.assert_allclose((a == b).float().mean().item(), 2 / 3, rtol=1e-6)
    assert a in [a] and {a: 1}[a] == 1 and b not in {a}


def test_transpose_takes_axes_as_a_tuple_or_separately():
    x_np = np.arange(24.0).reshape(2, 3, 4)
    x = fnn.tensor(x_np)
    np.testing.assert_array_equal(x.transpose(2, 0, 1).numpy(), x_np.transpose(2, 0, 1))
    np.testing.assert_array_equal(x.transpose((1, 0, 2)).numpy(), x_np.transpose(1, 0, 2))
    np.testing.assert_array_equal(x.transpose().numpy(), x_np.transpose())
