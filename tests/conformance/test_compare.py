"""The comparison at the heart of the suite: it must catch what it claims to catch."""

import numpy as np
import pytest

from fastnn.conformance.compare import Mismatch, assert_close

NAN, INF = float("nan"), float("inf")


def test_names_the_worst_element_and_the_context():
    expected = np.arange(12.0).reshape(3, 4)
    actual = expected.copy()
    actual[1, 2] *= 1.001
    actual[2, 3] *= 1.0001
    with pytest.raises(Mismatch) as info:
        assert_close(actual, expected, 1e-5, 0.0, "exp forward on cpu, float32")
    message = str(info.value)
    assert "exp forward on cpu, float32" in message
    assert "(1, 2)" in message and "2 of 12" in message


def test_nan_and_inf_must_sit_where_the_reference_has_them():
    assert_close(np.array([NAN, INF, -INF, 1.0]), np.array([NAN, INF, -INF, 1.0]), 0, 0, "ok")
    for bad in ([1.0, INF, -INF, 1.0], [NAN, -INF, -INF, 1.0], [NAN, INF, -INF, NAN]):
        with pytest.raises(Mismatch, match="NaN/Inf placement"):
            assert_close(np.array(bad), np.array([NAN, INF, -INF, 1.0]), 1.0, 1.0, "x")


def test_shapes_and_integers_are_exact():
    with pytest.raises(Mismatch, match="shape"):
        assert_close(np.zeros((2, 3)), np.zeros((3, 2)), 1.0, 1.0, "x")
    with pytest.raises(Mismatch, match="1 of 3 elements differ"):
        assert_close(np.array([0, 1, 2]), np.array([0, 1, 3]), 1.0, 1.0, "argmax")


def test_bfloat16_tolerances_are_float16s_times_8_unless_given():
    from fastnn.conformance.compare import ELEMENTWISE, GRADIENT, Tolerances

    assert ELEMENTWISE["bfloat16"] == (8 * ELEMENTWISE["float16"][0],
                                       8 * ELEMENTWISE["float16"][1])
    assert GRADIENT["bfloat16"] == (0.24, 0.24)
    assert Tolerances({"float16": (1.0, 2.0), "bfloat16": (3.0, 4.0)})["bfloat16"] == (3.0, 4.0)
    with pytest.raises(KeyError):
        Tolerances({"float32": (1.0, 1.0)})["bfloat16"]  # no float16 to derive it from
