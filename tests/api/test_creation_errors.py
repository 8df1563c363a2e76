"""Bad arguments to the creation functions raise errors that say what was wrong."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn


@pytest.mark.parametrize("make,error,match", [
    (lambda: fnn.tensor(None), TypeError, "tensor: data is None"),
    (lambda: fnn.zeros((2, "a")), TypeError,
     r"shape must be an int or a tuple of ints, got \(2, 'a'\)"),
    (lambda: fnn.ones(2.5), TypeError, "shape must be an int or a tuple of ints, got 2.5"),
    (lambda: fnn.randn((True, 2)), TypeError, "shape must be an int or a tuple of ints"),
    (lambda: fnn.zeros((2, -1)), ValueError, "negative dimension"),
])
def test_bad_creation_arguments_raise_clear_errors(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_creation_accepts_numpy_integers_and_lists():
    assert fnn.zeros((np.int32(2), 3)).shape == (2, 3)
    assert fnn.ones([2, 3]).shape == (2, 3)
    assert fnn.full(np.int64(4), 1.5).numpy().tolist() == [1.5] * 4
