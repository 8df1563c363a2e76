"""uint8, int8 and int16 (with int32 and int64 where the rule is shared): wrapping unary
ops, shifts, floor division, reductions, casts, mixed promotion and uint8 masks.

The references are NumPy's results on the same dtypes (NumPy's promotion of two integer
arrays is PyTorch's: uint8 with int8 is int16); where PyTorch differs from NumPy, as in
any/all of uint8 (uint8, not bool) and uint8 index tensors (read as masks), PyTorch's.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fastnn as fnn
from fastnn.api.dtypes import integer_names
from fastnn.conformance.compare import assert_close

INTS = integer_names()
SMALL = [d for d in INTS if np.dtype(d).itemsize < 4]


def _needs(device, *names):
    for dtype in names:
        if dtype not in device.backend.record.dtypes:
            pytest.skip(f"backend {device.type!r} does not support {dtype}")


def _full_range(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def _on(device, array):
    return fnn.tensor(array, device=device)


def _same(got, want, what):
    got = got.numpy()
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    assert_close(got, want, 0, 0, what)


@pytest.mark.conformance_row("neg")
@pytest.mark.parametrize("dtype", SMALL)
def test_unary_ops_wrap(device, dtype, rng):
    """-x, abs(x) and ~x wrap modulo 2**bits: -uint8(250) is 6, abs(int8(-128)) is -128."""
    _needs(device, dtype)
    info = np.iinfo(dtype)
    x = np.concatenate([np.array([info.min, info.max, 0, 1], dtype),
                        _full_range(rng, (40,), dtype)])
    with np.errstate(all="ignore"):
        for name, got, want in [("neg", -_on(device, x), np.negative(x)),
                                ("abs", abs(_on(device, x)), np.abs(x)),
                                ("bitwise_not", ~_on(device, x), np.invert(x))]:
            _same(got, want, f"{name} of {dtype} on {device}")


@pytest.mark.conformance_row("bitwise_and")
@pytest.mark.parametrize("dtype", SMALL)
def test_shifts_and_bitwise_ops(device, dtype, rng):
    """<< wraps, >> is arithmetic (the sign fills in); & | ^ with a Python int operand
    take its bits as the dtype holds them (uint8 & -1 is uint8 & 255)."""
    _needs(device, dtype)
    bits = 8 * np.dtype(dtype).itemsize
    x = _full_range(rng, (48,), dtype)
    n = rng.integers(0, bits, (48,)).astype(dtype)
    _same(_on(device, x) << _on(device, n), np.left_shift(x, n), f"{dtype} << on {device}")
    _same(_on(device, x) >> _on(device, n), np.right_shift(x, n), f"{dtype} >> on {device}")
    for k in (0, 1, bits - 1):
        _same(_on(device, x) >> k, np.right_shift(x, np.array(k, dtype)),
              f"{dtype} >> {k} on {device}")
    mask = int(np.array(-1).astype(dtype))  # all bits set, as the dtype holds -1
    _same(_on(device, x) & -1, np.bitwise_and(x, np.array(mask, dtype)),
          f"{dtype} & -1 on {device}")


@pytest.mark.conformance_row("floor_divide")
@pytest.mark.parametrize("dtype", SMALL)
def test_floor_division_and_remainder(device, dtype, rng):
    """// and % as Python's (floor, the sign of the divisor) over the whole range."""
    _needs(device, dtype)
    a, b = _full_range(rng, (64,), dtype), _full_range(rng, (64,), dtype)
    b = np.where(b == 0, np.array(3, dtype), b)
    if np.iinfo(dtype).min < 0:  # (min // -1 overflows: NumPy warns, PyTorch wraps)
        b = np.where((a == np.iinfo(dtype).min) & (b == np.array(-1).astype(dtype)),
                     np.array(2, dtype), b)
    _same(_on(device, a) // _on(device, b), np.floor_divide(a, b), f"{dtype} // on {device}")
    _same(_on(device, a) % _on(device, b), np.remainder(a, b), f"{dtype} % on {device}")


@pytest.mark.conformance_row("max")
@pytest.mark.parametrize("dtype", SMALL)
def test_reductions(device, dtype, rng):
    """max, min, argmax and argmin keep the dtype (index int64); sums and running sums of
    the small integers are int64, as PyTorch's; any/all of uint8 are uint8, as PyTorch's."""
    _needs(device, dtype)
    x = _full_range(rng, (5, 7), dtype)
    for axis in (0, 1):
        _same(fnn.amax(_on(device, x), axis), x.max(axis), f"amax {dtype} on {device}")
        _same(fnn.amin(_on(device, x), axis), x.min(axis), f"amin {dtype} on {device}")
        _same(_on(device, x).argmax(axis), x.argmax(axis), f"argmax {dtype} on {device}")
        _same(_on(device, x).argmin(axis), x.argmin(axis), f"argmin {dtype} on {device}")
        _same(_on(device, x).cumsum(axis), np.cumsum(x.astype(np.int64), axis),
              f"cumsum {dtype} on {device}")
    _same(_on(device, x).sum(), np.sum(x, dtype=np.int64), f"sum {dtype} on {device}")
    truth = np.uint8 if dtype == "uint8" else np.bool_
    _same(_on(device, x).any(1), x.any(1).astype(truth), f"any {dtype} on {device}")
    _same(_on(device, x).all(0), x.all(0).astype(truth), f"all {dtype} on {device}")


@pytest.mark.conformance_row("astype")
@pytest.mark.parametrize("dtype", SMALL)
def test_casts(device, dtype, rng):
    """Floats truncate toward zero; integers convert modulo 2**bits (int16 300 -> uint8
    44), as NumPy's astype; to bool is x != 0."""
    _needs(device, dtype, "float32")
    info = np.iinfo(dtype)
    floats = rng.uniform(info.min, info.max, (32,)).astype(np.float32)
    _same(_on(device, floats).to(dtype), np.trunc(floats).astype(dtype),
          f"float32 to {dtype} on {device}")
    for other in INTS:
        if other in device.backend.record.dtypes:
            x = _full_range(rng, (32,), other)
            _same(_on(device, x).to(dtype), x.astype(dtype), f"{other} to {dtype} on {device}")
            y = _full_range(rng, (32,), dtype)
            _same(_on(device, y).to(other), y.astype(other), f"{dtype} to {other} on {device}")
    y = _full_range(rng, (32,), dtype)
    _same(_on(device, y).float(), y.astype(np.float32), f"{dtype} to float32 on {device}")
    _same(_on(device, y).bool(), y != 0, f"{dtype} to bool on {device}")


@pytest.mark.conformance_row("add")
@pytest.mark.parametrize("dtype", SMALL)
def test_mixed_integer_promotion(device, dtype, rng):
    """PyTorch's table, which NumPy's integer arrays share: uint8 with int8 is int16, the
    wider type otherwise; with bool the integer; true division gives the default float."""
    _needs(device, dtype)
    x = _full_range(rng, (3, 4), dtype)
    for other in [d for d in INTS if d in device.backend.record.dtypes] + ["bool"]:
        y = rng.random((3, 4)) < 0.5 if other == "bool" else _full_range(rng, (3, 4), other)
        with np.errstate(all="ignore"):
            for name, got, want in [("add", _on(device, x) + _on(device, y), x + y),
                                    ("mul", _on(device, y) * _on(device, x), y * x),
                                    ("greater", _on(device, x) > _on(device, y), x > y)]:
                _same(got, want, f"{dtype} {name} {other} on {device}")
    got = (_on(device, x) / 255).numpy()
    assert got.dtype == np.float32, f"{dtype} / 255 on {device} gave {got.dtype}"
    assert_close(got, x.astype(np.float32) / np.float32(255), 1e-6, 0,
                 f"{dtype} / 255 on {device}")


@pytest.mark.conformance_row("greater")
@pytest.mark.parametrize("dtype", ["uint8"])
def test_uint8_index_is_a_mask(device, dtype, rng):
    """x[m] and x[m] = values with a uint8 m read m as a bool mask, with PyTorch's
    deprecation warning; x[m] = scalar and int8 and int16 index tensors are refused, as
    PyTorch 2.13 refuses them."""
    _needs(device, dtype, "float32")
    x = rng.normal(size=(4, 5)).astype(np.float32)
    m = (rng.random((4, 5)) < 0.5).astype(np.uint8)
    with pytest.warns(UserWarning, match="uint8 is deprecated"):
        got = _on(device, x)[_on(device, m)]
    _same(got, x[m.astype(bool)], f"x[uint8 mask] on {device}")
    values = np.arange(int(m.sum()), dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = _on(device, x)
        t[_on(device, m)] = _on(device, values)
    want = x.copy()
    want[m.astype(bool)] = values
    _same(t, want, f"x[uint8 mask] = values on {device}")
    with pytest.raises(RuntimeError, match="only supports boolean masks"):
        t[_on(device, m)] = 7.0  # (PyTorch's masked_fill_ takes bool masks only)
    for other in [d for d in SMALL if d != "uint8" and d in device.backend.record.dtypes]:
        with pytest.raises(IndexError, match="indices must be"):
            _on(device, x)[_on(device, np.array([0, 1], other))]

