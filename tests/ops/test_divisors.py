"""gcd and lcm against PyTorch: signs, zeros, broadcasting, promotion, in place, errors."""

import numpy as np
import pytest

import fastnn as fnn
from tests.ops.torch_compare import compare, torch

A = np.array([0, -4, 6, 7, 0, 12, -15, 2**40, 1], dtype=np.int64)
B = np.array([0, 6, -9, 5, -3, 18, -25, 2**20 * 3, 0], dtype=np.int64)


@pytest.mark.parametrize("name", ["gcd", "lcm"])
def test_values_match_torch(name):
    compare(getattr(fnn, name), getattr(torch, name), A, B)
    big = np.random.default_rng(0).integers(-10**6, 10**6, size=(50,))
    compare(getattr(fnn, name), getattr(torch, name), big, big[::-1].copy())
    compare(getattr(fnn, name), getattr(torch, name), A[:4].astype(np.int32),
            B[:4, None].copy())  # broadcast, int32 with int64


def test_numpy_agrees_and_methods_and_in_place():
    a, b = fnn.tensor(A), fnn.tensor(B)
    np.testing.assert_array_equal(a.gcd(b).numpy(), np.gcd(A, B))
    np.testing.assert_array_equal(a.lcm(b).numpy(), np.lcm(A[:-2], B[:-2]).tolist() + [
        int(np.lcm(A[-2], B[-2])), 0])
    x = a.clone()
    assert x.gcd_(b) is x
    np.testing.assert_array_equal(x.numpy(), np.gcd(A, B))


def test_non_integers_raise():
    with pytest.raises(NotImplementedError, match="float32"):
        fnn.gcd(fnn.tensor([4.0]), fnn.tensor([6.0]))
    with pytest.raises(NotImplementedError, match="bool"):
        fnn.lcm(fnn.tensor([True]), fnn.tensor([True]))
    with pytest.raises(TypeError, match="must be Tensor"):
        fnn.gcd(fnn.tensor([4]), 6)
