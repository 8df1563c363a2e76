"""The NumPy backend's ``where(cond, a, 0)``: a's bits AND a mask of all ones or all zeros,
np.where's result bit for bit; checked against np.where on the values a multiply by the
mask would get wrong (inf and NaN under a False mask, products that overflow, the sign
of zero under a negative a), on every dtype and layout."""

from __future__ import annotations

import numpy as np
import pytest
from fastnn_cpu import where


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32, np.bool_])
def test_where_zero_matches_np_where(dtype):
    rng = np.random.default_rng(0)
    a = (rng.normal(size=(6, 7, 9)) * 10).astype(dtype)
    cond = rng.random(a.shape) > 0.5
    for got_a, got_cond in ((a, cond), (a.transpose(2, 0, 1), cond.transpose(2, 0, 1)),
                            (a[:, ::2], cond[:, ::2])):
        got = where(got_cond, got_a, 0)
        assert got.dtype == a.dtype
        np.testing.assert_array_equal(got, np.where(got_cond, got_a, 0))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan, "huge"])
def test_where_zero_with_values_that_break_the_multiply(dtype, value):
    rng = np.random.default_rng(1)
    a = rng.normal(size=(5, 8)).astype(dtype)
    cond = rng.random(a.shape) > 0.5
    cond[1, 2], cond[3, 4] = False, True
    # "huge": finite, but its square overflows the dot product of the finiteness check
    big = np.finfo(dtype).max / 2 if value == "huge" else value
    a[1, 2] = a[3, 4] = big
    with np.errstate(invalid="ignore", over="ignore"):
        got = where(cond, a, 0.0)
    np.testing.assert_array_equal(got, np.where(cond, a, dtype(0)))
    assert got[1, 2] == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_where_zero_of_a_broadcast_gradient_and_a_broadcast_mask(dtype):
    rng = np.random.default_rng(2)
    # relu's backward after a mean: the gradient a broadcast view of cond's shape
    a = np.broadcast_to(rng.normal(size=(4, 3, 1)).astype(dtype), (4, 3, 9))
    cond = rng.random((4, 3, 9)) > 0.5
    got = where(cond, a, 0)
    assert got.dtype == dtype and got.flags.writeable
    np.testing.assert_array_equal(got, np.where(cond, a, dtype(0)))
    # a mask that broadcasts against a (shapes differ): the mixed multiply
    row = rng.random(9) > 0.5
    np.testing.assert_array_equal(where(row, a, 0), np.where(row, a, dtype(0)))


@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan, "huge"])
def test_where_zero_of_a_broadcast_gradient_with_values_that_break_the_multiply(value):
    # the finiteness check reads a's distinct elements only: a value that breaks the
    # multiply in one of them, under a False mask in some broadcast copies, still goes
    # to np.where
    rng = np.random.default_rng(3)
    compact = rng.normal(size=(4, 3, 1)).astype(np.float32)
    compact[2, 1, 0] = np.finfo(np.float32).max / 2 if value == "huge" else value
    a = np.broadcast_to(compact, (4, 3, 64))
    cond = rng.random(a.shape) > 0.5
    cond[2, 1, :2] = (False, True)
    with np.errstate(invalid="ignore", over="ignore"):
        got = where(cond, a, 0.0)
    np.testing.assert_array_equal(got, np.where(cond, a, np.float32(0)))
    assert got[2, 1, 0] == 0


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_where_zero_gives_positive_zero_as_np_where_and_pytorch(dtype):
    """Under a False mask the result is +0.0 whatever a holds there (a multiply by the mask
    gave -0.0 for a negative a): 1 / result is +inf, as with np.where and torch.where."""
    a = np.array([-1.0, 2.0, -0.0, -3.5, 4.0], dtype)
    cond = np.array([False, True, False, False, True])
    got = where(cond, a, 0)
    want = np.where(cond, a, dtype(0))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    assert not np.signbit(got[[0, 2, 3]]).any()
    assert got.tobytes() == want.tobytes()


def test_relu_gradient_has_no_negative_zeros_as_pytorch():
    torch = pytest.importorskip("torch")
    import fastnn as fnn

    x = np.array([-1.0, 2.0, -3.0, 0.5], np.float32)
    g = np.full(4, -1.0, np.float32)
    t = torch.tensor(x, requires_grad=True)
    torch.relu(t * 1).backward(torch.tensor(g))
    f = fnn.tensor(x, requires_grad=True)
    fnn.relu(f * 1).backward(fnn.tensor(g))
    np.testing.assert_array_equal(np.signbit(f.grad.numpy()), np.signbit(t.grad.numpy()))
    np.testing.assert_array_equal(f.grad.numpy(), t.grad.numpy())
