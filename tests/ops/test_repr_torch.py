"""``repr(tensor)`` prints as PyTorch's does (fastnn.ops.printing): the same text for the
same values, shape, dtype and autograd state, with fastnn's dtype names in place of
``torch.``'s. Literal expectations first (they hold without PyTorch), then the same
constructions side by side with PyTorch where it is installed."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn.ops import printing


def _values(seed, shape, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


CASES = {
    "fractions": lambda L: L.tensor([1.5, 2.0]),
    "whole floats": lambda L: L.tensor([1.0, 2.0, -3.0]),
    "ints": lambda L: L.tensor([1, 22, -333]),
    "bools": lambda L: L.tensor([True, False]),
    "0-d float": lambda L: L.tensor(2.5),
    "0-d whole": lambda L: L.tensor(3.0),
    "0-d int": lambda L: L.tensor(7),
    "scientific, small": lambda L: L.tensor([1e-5, 1.0, 1e6]),
    "scientific, large": lambda L: L.tensor([1e9, 2.0]),
    "nan and inf": lambda L: L.tensor([float("nan"), float("inf"), -float("inf"), 1.25]),
    "nan beside whole": lambda L: L.tensor([float("nan"), 1.0]),
    "zeros": lambda L: L.zeros(3),
    "matrix": lambda L: L.tensor(_values(0, (3, 4))),
    "3-d": lambda L: L.tensor(np.arange(24).reshape(2, 3, 4).astype(np.float32) / 7),
    "wrapped row": lambda L: L.tensor(np.linspace(-5, 5, 30).astype(np.float32)),
    "summarised vector": lambda L: L.arange(2000.0),
    "summarised matrix": lambda L: L.tensor(np.arange(3000).reshape(100, 30)
                                            .astype(np.float32)),
    "summarised 3-d ints": lambda L: L.tensor(np.arange(2400).reshape(2, 600, 2)),
    "float64": lambda L: L.tensor([1.5], dtype=L.float64),
    "int32": lambda L: L.tensor([1, 2], dtype=L.int32),
    "empty": lambda L: L.zeros(0),
    "empty matrix": lambda L: L.zeros(0, 3),
    "empty int64": lambda L: L.zeros(0, dtype=L.int64),
    "grad_fn": lambda L: L.tensor([1.5], requires_grad=True) * 2,
    "leaf": lambda L: L.ones(2, requires_grad=True),
    "suffixes wrapped": lambda L: L.tensor(_values(1, 7, np.float64), requires_grad=True) * 2,
    "negative zero": lambda L: L.tensor([-0.0, 1.5]),
    "small": lambda L: L.tensor([0.0001, 0.5]),
    "float16": lambda L: L.tensor([1.5, 2.25], dtype=L.float16),
    "parameter": lambda L: L.nn.Parameter(L.ones(2)),
}


def test_literal_reprs():
    assert repr(fnn.tensor([1.5, 2.0])) == "tensor([1.5000, 2.0000])"
    assert repr(fnn.tensor([1.0, -3.0])) == "tensor([ 1., -3.])"
    assert repr(fnn.tensor(2.5)) == "tensor(2.5000)"
    assert repr(fnn.tensor([1e-5, 1.0])) == "tensor([1.0000e-05, 1.0000e+00])"
    assert repr(fnn.zeros(3)) == "tensor([0., 0., 0.])"
    assert repr(fnn.zeros(0, 3)) == "tensor([], size=(0, 3))"
    assert repr(fnn.zeros(0, dtype=fnn.int64)) == "tensor([], dtype=int64)"
    assert repr(fnn.tensor([1, 2], dtype=fnn.int32)) == "tensor([1, 2], dtype=int32)"
    assert repr(fnn.arange(1000.0, 2001.0)) == ("tensor([1000., 1001., 1002.,  ..., 1998., "
                                                "1999., 2000.])")
    assert repr(fnn.tensor([[1.5, -2.0], [3.0, 4.25]])) == ("tensor([[ 1.5000, -2.0000],\n"
                                                             "        [ 3.0000,  4.2500]])")
    assert repr(fnn.nn.Parameter(fnn.ones(2))) == ("Parameter containing:\n"
                                                   "tensor([1., 1.], requires_grad=True)")


def test_set_printoptions_sci_mode_and_short_profile():
    try:
        fnn.set_printoptions(sci_mode=True)
        assert repr(fnn.tensor([1.5])) == "tensor([1.5000e+00])"
        fnn.set_printoptions(profile="short", sci_mode=False)
        assert repr(fnn.tensor([1e-5, 1.0])) == "tensor([0.00, 1.00])"
    finally:
        printing._options.clear()


@pytest.mark.parametrize("name", list(CASES))
def test_repr_is_pytorchs(name):
    torch = pytest.importorskip("torch")
    ours = repr(CASES[name](fnn))
    theirs = repr(CASES[name](torch)).replace("dtype=torch.", "dtype=")
    assert ours == theirs
