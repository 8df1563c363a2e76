"""fastnn.tensor, the creation functions and manual_seed (fastnn/ops/tensor.py, convert.py):
each bad input raises TypeError or ValueError naming the function, the argument, what was
given and the fix. Before, these gave NumPy's own message, or were accepted: None in a list
became NaN, "1.5" became 1.5, NaN and 2**40 cast to int32 became garbage."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from tests.bad_inputs import check, rows


def _nested(depth: int) -> list:
    """``[[...[1.0]...]]``: ``depth`` lists, each with one item."""
    data = [1.0]
    for _ in range(depth - 1):
        data = [data]
    return data

BAD = [
    # (id, call, exception, fragment of the message)
    ("ragged list", lambda: fnn.tensor([[1.0, 2.0], [3.0]]), ValueError,
     r"tensor: data is ragged: data\[1\] has 1 items, data\[0\] has 2 items; .*pad them"),
    ("too deep", lambda: fnn.tensor(_nested(70)), ValueError,
     r"tensor: data is nested 70 lists deep; a tensor has at most \d+ dimensions"),
    ("too many elements", lambda: fnn.zeros((2**63,)), ValueError,
     r"zeros: shape \(9223372036854775808,\) has 9223372036854775808 elements; a tensor "
     r"holds at most 9223372036854775807"),
    ("ragged depth", lambda: fnn.tensor([1.0, [2.0]]), ValueError,
     r"tensor: data is ragged: data\[1\] has 1 items, data\[0\] is not a list"),
    ("object", lambda: fnn.tensor(object()), TypeError,
     r"tensor: data holds object <object object .*; it must be numbers"),
    ("None in a list", lambda: fnn.tensor([1.0, None]), TypeError,
     r"tensor: data holds NoneType None at \[1\]"),
    ("a string", lambda: fnn.tensor("1.5"), TypeError, r"tensor: data must be numbers.*got a str"),
    ("strings in a list", lambda: fnn.tensor([["1.5", "2"]]), TypeError,
     r"tensor: data holds strings \(\['1.5'\]\.\.\.\).*convert them with float\(\)"),
    ("a dict", lambda: fnn.tensor({"a": 1.0}), TypeError, r"tensor: data must be .*got a dict"),
    ("a set", lambda: fnn.tensor({1.0, 2.0}), TypeError, r"tensor: data must be .*got a set"),
    ("a generator", lambda: fnn.tensor(float(i) for i in range(3)), TypeError,
     r"got a generator; pass list\(\.\.\.\) of it"),
    ("complex numbers", lambda: fnn.tensor([1 + 2j]), TypeError,
     r"tensor: data holds complex numbers"),
    ("NaN to int64", lambda: fnn.tensor([1.0, float("nan")], dtype=fnn.int64), ValueError,
     r"tensor: data holds nan, which int64 cannot hold; use a floating dtype"),
    ("inf to int32", lambda: fnn.tensor(np.array([np.inf]), dtype=fnn.int32), ValueError,
     r"tensor: data holds inf, which int32 cannot hold"),
    ("2**40 to int32", lambda: fnn.tensor([2**40], dtype=fnn.int32), OverflowError,
     r"tensor: 1099511627776 does not fit in int32 \(\[-2147483648, 2147483647\]\); use "
     r"dtype=fnn.int64"),
    ("array to int32", lambda: fnn.tensor(np.array([-2**40]), dtype=fnn.int32), OverflowError,
     r"tensor: -1099511627776 does not fit in int32"),
    ("2**70 to int64", lambda: fnn.tensor([2**70], dtype=fnn.int64), OverflowError,
     r"tensor: data holds an integer that int64 cannot hold .*use float values"),
    ("requires_grad='yes'", lambda: fnn.tensor([1.0], requires_grad="yes"), TypeError,
     r"tensor: requires_grad must be True or False, got str 'yes'"),
    ("zeros requires_grad=1", lambda: fnn.zeros(2, requires_grad=1), TypeError,
     r"full: requires_grad must be True or False, got int 1"),
    ("randn requires_grad='x'", lambda: fnn.randn(2, requires_grad="x"), TypeError,
     r"tensor: requires_grad must be True or False"),
    ("requires_grad attribute", lambda: setattr(fnn.ones(2), "requires_grad", "no"), TypeError,
     r"requires_grad: the value must be True or False, got str 'no'"),
    ("negative size", lambda: fnn.zeros((2, -1)), ValueError,
     r"zeros: negative dimension in shape \(2, -1\); sizes must be >= 0"),
    ("randn negative size", lambda: fnn.randn((-2,)), ValueError,
     r"randn: negative dimension in shape \(-2,\)"),
    ("full 2**40 in int32", lambda: fnn.full(2, 2**40, dtype=fnn.int32), OverflowError,
     r"full: fill value 1099511627776 does not fit in int32 .*use dtype=fnn.int64"),
    ("full 2**70 in int64", lambda: fnn.full(2, 2**70, dtype=fnn.int64), OverflowError,
     r"full: fill value 1180591620717411303424 does not fit in int64 .*use a floating dtype"),
    ("manual_seed(1.5)", lambda: fnn.manual_seed(1.5), TypeError,
     r"manual_seed: seed must be an int, got float"),
    ("manual_seed('7')", lambda: fnn.manual_seed("7"), TypeError,
     r"manual_seed: seed must be an int, got str"),
    ("manual_seed(None)", lambda: fnn.manual_seed(None), TypeError,
     r"manual_seed: seed must be an int, got NoneType"),
    ("manual_seed(True)", lambda: fnn.manual_seed(True), TypeError,
     r"manual_seed: seed must be an int, got bool"),
    ("backward grad", lambda: fnn.ones(2, requires_grad=True).sum().backward("1"), TypeError,
     r"backward: grad must be a Tensor or array-like of numbers shaped \(\)"),
]


@pytest.mark.parametrize("call, error, match", rows(BAD))
def test_bad_input_is_named(call, error, match):
    check(call, error, match)


GOOD = [  # (data, dtype, the array it must give), the expected values written out
    ([[1, 2], [3, 4]], fnn.float32, np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)),
    ([True, False], fnn.float32, np.array([1.0, 0.0], np.float32)),
    ([1.7, -2.7], fnn.int64, np.array([1, -2], np.int64)),  # truncated, as NumPy
    ((0.1, 1e30), fnn.float64, np.array([0.1, 1e30])),
    (np.arange(3, dtype=np.int32), None, np.array([0, 1, 2], np.int32)),
    ([2**62], fnn.float32, np.array([4.611686e18], np.float32)),
    ([2**40], fnn.int64, np.array([1099511627776], np.int64)),
    ([2**70], fnn.float64, np.array([1.1805916207174113e21])),
    (3, fnn.int32, np.array(3, np.int32)),
    ([[fnn.tensor(1.0)], [np.float32(2.0)]], fnn.float32, np.array([[1.0], [2.0]], np.float32)),
    (np.array([[0.0, 2.0]]), fnn.bool_, np.array([[False, True]])),
    ([-2147483648, 2147483647], fnn.int32, np.array([-2147483648, 2147483647], np.int32)),
]


@pytest.mark.parametrize("data, dtype, expected", GOOD)
def test_good_data_converts_as_before(data, dtype, expected):
    got = fnn.tensor(data, dtype=dtype).numpy()
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
