"""The operators' other operands as PyTorch takes them: a NumPy array is a tensor on x's
device (its dtype kept, so float32 + a float64 array is float64), on either side and in
place; ``x == None`` (or a string, a list) is Python's answer by identity, False, and
``!=`` True, where fastnn raised; ``copy.deepcopy(x)`` copies ``x.grad`` too (a
Parameter's not), as PyTorch's."""

from __future__ import annotations

import copy
import operator

import numpy as np
import pytest

import fastnn as fnn

A = np.array([[1.5, -2.0, 3.0], [4.0, 0.5, -1.0]], np.float32)
B = np.array([[2.0, 1.0, -3.0], [4.0, 2.0, 1.0]])  # float64


@pytest.mark.parametrize("op", [operator.add, operator.sub, operator.mul, operator.truediv,
                                operator.floordiv, operator.mod, operator.pow, operator.eq,
                                operator.lt, operator.ge])
def test_a_numpy_array_is_a_tensor_operand_on_either_side(op):
    x = fnn.tensor(A)
    with np.errstate(all="ignore"):
        want, back = op(A.astype(np.float64), B), op(B, A.astype(np.float64))
    got, got_back = op(x, B), op(B, x)
    assert isinstance(got, fnn.Tensor) and isinstance(got_back, fnn.Tensor)
    assert got.dtype == want.dtype  # promoted as a tensor: float64
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(got_back.numpy(), back, rtol=1e-6)
    torch = pytest.importorskip("torch")
    if op not in (operator.lt, operator.ge):  # (PyTorch 2.13 refuses these two)
        assert str(op(torch.tensor(A), B).dtype) == "torch." + got.dtype.name


def test_integer_operators_and_in_place_with_an_array():
    i = fnn.tensor([3, 4])
    np.testing.assert_array_equal((i & np.array([1, 1])).numpy(), [1, 0])
    np.testing.assert_array_equal((i << np.array([1, 2])).numpy(), [6, 16])
    x = fnn.tensor(A)
    alias = x
    x += B.astype(np.float32)
    assert x is alias  # in place, as x += tensor
    np.testing.assert_allclose(x.numpy(), A + B.astype(np.float32))


@pytest.mark.parametrize("other", [None, "a", [1.0, 2.0], (1, 2), object()])
def test_equality_with_something_else_is_identity_as_pytorchs(other):
    x = fnn.tensor([1.0, 2.0])
    assert (x == other) is False and (x != other) is True
    assert x in [other, x] and [other].count(x) == 0
    with pytest.raises(TypeError):
        assert x < other
    torch = pytest.importorskip("torch")
    t = torch.tensor([1.0, 2.0])
    assert (t == other) is False and (t != other) is True


def test_deepcopy_copies_the_gradient_but_a_parameters_not():
    x = fnn.tensor(A, requires_grad=True)
    (x * x).sum().backward()
    twin = copy.deepcopy(x)
    assert twin is not x and twin.requires_grad and twin.grad is not x.grad
    np.testing.assert_array_equal(twin.grad.numpy(), 2 * A)
    np.testing.assert_array_equal(twin.detach().numpy(), A)
    p = fnn.nn.Parameter(fnn.tensor(A))
    p.grad = fnn.ones(A.shape)
    assert copy.deepcopy(p).grad is None
    torch = pytest.importorskip("torch")
    t = torch.tensor(A, requires_grad=True)
    (t * t).sum().backward()
    assert copy.deepcopy(t).grad is not None


def test_unary_plus_is_x_itself_as_pytorchs():
    """+x raised 'bad operand type for unary +'; PyTorch's is x.positive(), x itself."""
    x = fnn.tensor([1.0, -2.0], requires_grad=True)
    assert +x is x
    with pytest.raises(TypeError, match="bool"):
        +fnn.tensor([True])
    torch = pytest.importorskip("torch")
    t = torch.tensor([1.0, -2.0])
    assert +t is t
