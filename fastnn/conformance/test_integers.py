"""Integer, bool and overflow semantics, where backends once disagreed on valid programs.

The references are NumPy's results (PyTorch's where NumPy refuses to answer:
integers to negative integer powers). Integer results must be exact.
"""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn.api.dtypes import integer_names
from fastnn.conformance.compare import TRANSCENDENTAL, assert_close, cast_like

INTS = integer_names()
MATMUL_SHAPES = [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (3, 4, 2)), ((4,), (4, 5)),
                 ((3, 4), (4,)), ((4,), (4,)), ((0, 4), (4, 3)), ((3, 0), (0, 2)),
                 ((17, 33), (33, 9))]


def _needs(device, dtype):
    if dtype not in device.backend.record.dtypes:
        pytest.skip(f"backend {device.type!r} does not support {dtype}")


def _full_range(rng, shape, dtype):
    if dtype == "bool":
        return rng.random(shape) < 0.4
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def _on(device, array):
    return fnn.tensor(array, device=device)


@pytest.mark.conformance_row("matmul")
@pytest.mark.parametrize("dtype", INTS + ["bool"])
def test_integer_matmul_wraps_as_numpy(device, dtype, rng):
    """int32/int64 products wrap modulo 2**bits; bool @ bool is an OR of ANDs."""
    _needs(device, dtype)
    for sa, sb in MATMUL_SHAPES:
        a, b = _full_range(rng, sa, dtype), _full_range(rng, sb, dtype)
        want = np.matmul(a, b)
        tb = _on(device, b)
        if b.ndim == 2:  # also read B through a transposed view
            assert_close((_on(device, a) @ _on(device, np.ascontiguousarray(b.T)).T).numpy(),
                         want, 0, 0, f"{dtype} matmul {sa} @ transposed {sb} on {device}")
        got = (_on(device, a) @ tb).numpy()
        assert got.dtype == want.dtype, f"{dtype} matmul on {device} gave {got.dtype}"
        assert_close(got, want, 0, 0, f"{dtype} matmul {sa} @ {sb} on {device}")


def _pow_reference(a, b):
    """NumPy's integer power for b >= 0 (wrapping); PyTorch's truncation for b < 0."""
    with np.errstate(all="ignore"):
        out = np.power(a, np.where(b < 0, 0, b))
    unit = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
    return np.where(b < 0, unit, out).astype(a.dtype)


@pytest.mark.conformance_row("pow")
@pytest.mark.parametrize("dtype", INTS)
def test_integer_pow(device, dtype, rng):
    """x ** y for integer tensors stays integer (x ** 2 too), wrapping on overflow."""
    _needs(device, dtype)
    low, high = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
    # (as the dtype holds them: uint8's -1 is 255, and it has no negative exponents)
    a = np.array([0, 1, -1, 2, -3, 5, 7, high, low, 3, -2, 0, 1, -1, 9]).astype(dtype)
    b = np.array([0, 3, 5, 31, 7, 0, 40, 2, 2, -1, -3, -2, -7, -8, 1]).astype(dtype)
    got = (_on(device, a) ** _on(device, b)).numpy()
    assert_close(got, _pow_reference(a, b), 0, 0, f"{dtype} ** {dtype} on {device}")
    for exponent in (0, 1, 2, 3):
        got = (_on(device, a) ** exponent).numpy()
        assert got.dtype == a.dtype, f"{dtype} ** {exponent} on {device} gave {got.dtype}"
        assert_close(got, _pow_reference(a, np.full_like(a, exponent)), 0, 0,
                     f"{dtype} ** {exponent} on {device}")
    with pytest.raises(ValueError, match="negative integer powers"):
        _on(device, a) ** -1
    with pytest.raises(TypeError, match="bool"):
        _on(device, a > 0) ** _on(device, a < 0)


@pytest.mark.conformance_row("add")
@pytest.mark.parametrize("dtype", INTS)
def test_integer_arithmetic_wraps(device, dtype, rng):
    _needs(device, dtype)
    a, b = _full_range(rng, (64,), dtype), _full_range(rng, (64,), dtype)
    with np.errstate(all="ignore"):
        for name, want in [("add", a + b), ("sub", a - b), ("mul", a * b),
                           ("maximum", np.maximum(a, b))]:
            got = getattr(F, name)(_on(device, a), _on(device, b)).numpy()
            assert_close(got, want, 0, 0, f"{dtype} {name} on {device}")


@pytest.mark.conformance_row("add")
@pytest.mark.parametrize("dtype", ["bool"])
def test_bool_with_an_int_scalar_is_int64(device, dtype):
    """True + 2 is 3, as in NumPy and PyTorch (not True, nor int64 data under a bool label)."""
    _needs(device, "bool")
    x = np.array([True, False, True])
    for name, scalar in [("add", 2), ("mul", -3), ("maximum", -1), ("minimum", 5), ("pow", 2)]:
        got = getattr(F, name)(_on(device, x), scalar)
        assert got.dtype is fnn.int64, f"bool {name} {scalar} on {device} gave {got.dtype}"
        want = getattr(np, {"add": "add", "mul": "multiply", "pow": "power"}.get(name, name))(
            x.astype(np.int64), scalar)
        assert_close(got.numpy(), want, 0, 0, f"bool {name} {scalar} on {device}")
    for name, scalar in [("__gt__", 2), ("__gt__", -1), ("__lt__", 1), ("__eq__", 1)]:
        got = getattr(_on(device, x), name)(scalar).numpy()
        assert_close(got, getattr(x.astype(np.int64), name)(scalar), 0, 0,
                     f"bool {name} {scalar} on {device}")


@pytest.mark.conformance_row("sum")
@pytest.mark.parametrize("dtype", [d for d in INTS if d != "int64"] + ["bool"])
def test_small_integer_sums_are_int64(device, dtype):
    """As NumPy and PyTorch: sums of bool and the integers narrower than int64 are int64
    (no overflow in the narrow type)."""
    _needs(device, dtype)
    if dtype == "bool":
        x = np.array([[True, True, False], [False, True, True]])
    else:
        low, high = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
        x = np.array([[high, high, 5], [low, -1 if low else 0, high]], dtype)
    for axis in (None, 0, 1):
        got = F.sum(_on(device, x), axis)
        want = np.sum(x.astype(np.int64), axis=axis)
        assert got.dtype is fnn.int64, f"sum of {dtype} on {device} gave {got.dtype}"
        assert_close(got.numpy(), want, 0, 0, f"sum of {dtype} axis={axis} on {device}")


@pytest.mark.conformance_row("greater")
@pytest.mark.parametrize("dtype", INTS)
def test_comparisons_with_integers_outside_the_dtype(device, dtype):
    """int32 x > 2**40 is all False (NumPy's answer), not an error or a wrapped compare."""
    _needs(device, dtype)
    info = np.iinfo(dtype)
    x = np.array([v for v in (info.min, -1, 0, 1, info.max) if v >= info.min], dtype)
    for scalar in (2**70, -(2**70), int(info.max) + 1, int(info.min) - 1):
        for name in ("__gt__", "__lt__", "__eq__"):
            got = getattr(_on(device, x), name)(scalar).numpy()
            want = getattr(x.astype(object), name)(scalar).astype(bool)
            assert_close(got, want, 0, 0, f"{dtype} {name} {scalar} on {device}")


@pytest.mark.conformance_row("full")
@pytest.mark.parametrize("dtype", INTS)
def test_integers_outside_the_dtype_raise_overflow_naming_the_op(device, dtype):
    _needs(device, dtype)
    big = int(np.iinfo(dtype).max) + 1
    x = _on(device, np.array([1, 2], dtype))
    for op, call in [("full", lambda: fnn.full((2,), big, dtype=dtype, device=device)),
                     ("add", lambda: x + big), ("mul", lambda: x * (-big - 1)),
                     ("where", lambda: F.where(x > 1, x, big))]:
        with pytest.raises(OverflowError, match=f"{op}: .*does not fit in {dtype}"):
            call()


@pytest.mark.conformance_row("mean")
@pytest.mark.parametrize("dtype", ["float32"])
def test_mean_overflows_where_its_sum_does(device, dtype):
    """mean([3e38, 3e38]) in float32 is inf, as NumPy and PyTorch give, however the backend
    accumulates; a mean whose sum fits stays exact."""
    for values in ([3e38, 3e38], [1e38, 1e38], [3e38, -3e38, 1.0]):
        x = np.array(values, dtype)
        with np.errstate(over="ignore"):
            want = np.mean(x)
        assert_close(F.mean(_on(device, x)).numpy(), want, 1e-6, 0,
                     f"mean({values}) in {dtype} on {device}")
    x = np.full((3, 4), 3e38, dtype)
    with np.errstate(over="ignore"):
        assert_close(F.mean(_on(device, x), 1).numpy(), np.mean(x, axis=1), 0, 0,
                     f"mean over rows of 3e38 in {dtype} on {device}")


@pytest.mark.conformance_row("sign")
@pytest.mark.parametrize("dtype", ["bool"])
def test_sign_of_bool_is_the_bool(device, dtype):
    _needs(device, "bool")
    x = np.array([True, False, True])
    got = F.sign(_on(device, x)) if hasattr(F, "sign") else _on(device, x).sign()
    assert_close(got.numpy(), x, 0, 0, f"sign of bool on {device}")


@pytest.mark.conformance_row("sigmoid")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sigmoid_keeps_relative_precision_for_negative_inputs(device, dtype):
    """sigmoid(-20) is 2.06e-9, not 0: 0.5 * (1 + tanh(x / 2)) cancels there."""
    _needs(device, dtype)
    x = cast_like(np.concatenate([-np.geomspace(2.0, 80.0, 40), np.linspace(-2, 0, 9)]), dtype)
    want = np.exp(x) / (1 + np.exp(x))
    rtol, _ = TRANSCENDENTAL[dtype]
    for name, got in [("sigmoid", F.sigmoid(_on(device, x.astype(dtype)))),
                      ("silu", F.silu(_on(device, x.astype(dtype))))]:
        expected = cast_like(want * (x if name == "silu" else 1), dtype)
        assert_close(got.numpy(), expected, rtol, 0, f"{name} of negative {dtype} on {device}")
