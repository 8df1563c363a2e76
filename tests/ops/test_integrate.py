"""trapezoid, trapz and cumulative_trapezoid against PyTorch: values, dtypes, gradients."""

import numpy as np
import pytest

import fastnn as fnn
from tests.ops.torch_compare import compare, torch

RNG = np.random.default_rng(0)
Y = RNG.normal(size=(3, 5))
X_POINTS = np.sort(RNG.normal(size=5))


@pytest.mark.parametrize("name", ["trapezoid", "cumulative_trapezoid"])
@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_spacing_matches_torch(name, dim):
    compare(lambda y: getattr(fnn, name)(y, dim=dim),
            lambda y: getattr(torch, name)(y, dim=dim), Y)
    compare(lambda y: getattr(fnn, name)(y, dx=0.25, dim=dim),
            lambda y: getattr(torch, name)(y, dx=0.25, dim=dim), Y)


@pytest.mark.parametrize("name", ["trapezoid", "trapz", "cumulative_trapezoid"])
def test_points_match_torch_and_carry_gradients_to_both(name):
    compare(lambda y, x: getattr(fnn, name)(y, x), lambda y, x: getattr(torch, name)(y, x),
            Y, X_POINTS)  # 1-D x along the last dim
    compare(lambda y, x: getattr(fnn, name)(y, x, dim=0),
            lambda y, x: getattr(torch, name)(y, x, dim=0), Y, RNG.normal(size=(3, 1)))
    compare(lambda y, x: getattr(fnn, name)(y, x), lambda y, x: getattr(torch, name)(y, x),
            Y, RNG.normal(size=(3, 5)))


def test_against_numpy():
    expected = np.trapezoid(Y, X_POINTS, axis=1)
    np.testing.assert_allclose(fnn.trapezoid(fnn.tensor(Y), fnn.tensor(X_POINTS)).numpy(),
                               expected, rtol=1e-12)


@pytest.mark.parametrize("name", ["trapezoid", "cumulative_trapezoid"])
def test_integers_and_empty_inputs_as_torch(name):
    ints = np.array([[1, 2, 4], [3, -1, 0]], dtype=np.int64)
    compare(lambda y: getattr(fnn, name)(y), lambda y: getattr(torch, name)(y), ints)
    compare(lambda y, x: getattr(fnn, name)(y, x), lambda y, x: getattr(torch, name)(y, x),
            ints, np.array([1, 3, 4]))
    for shape in [(2, 0), (2, 1)]:
        compare(lambda y: getattr(fnn, name)(y), lambda y: getattr(torch, name)(y),
                np.ones(shape, dtype=np.float32), grad=False)


def test_bad_arguments_raise():
    y = fnn.tensor([1.0, 2.0, 4.0])
    with pytest.raises(RuntimeError, match="one `x` value for each sample point"):
        fnn.trapezoid(y, fnn.tensor([1.0, 3.0]))
    with pytest.raises(TypeError, match="not both"):
        fnn.trapezoid(y, fnn.tensor([1.0, 3.0, 4.0]), dx=1)
    with pytest.raises(TypeError, match="dx="):
        fnn.trapezoid(y, 2.0)
    with pytest.raises(IndexError, match="no dimensions"):
        fnn.cumulative_trapezoid(fnn.tensor(1.0))
    with pytest.raises(RuntimeError, match="bool"):
        fnn.trapezoid(fnn.tensor([True, False]))
