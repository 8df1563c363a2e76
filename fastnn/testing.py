"""``fastnn.testing.assert_close``, as ``torch.testing.assert_close``: values within
``atol + rtol * |expected|`` elementwise, with PyTorch's default tolerances per dtype,
shapes equal, and (by default) dtypes and devices equal."""

from __future__ import annotations

import numpy as np

from fastnn.ops.tensor import Tensor

DEFAULT_TOLERANCES = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5),
                      "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7)}
"""(rtol, atol) per floating dtype, PyTorch's; other dtypes compare exactly."""


def _host(value):
    if isinstance(value, Tensor):
        return value.detach().numpy(), value.dtype.name, value.device
    array = np.asarray(value)
    return array, None, None


def assert_close(actual, expected, *, rtol=None, atol=None, equal_nan: bool = False,
                 check_dtype: bool = True, check_device: bool = True, msg=None) -> None:
    """Raise AssertionError unless ``actual`` is close to ``expected`` (tensors, arrays,
    numbers, or lists/tuples/dicts of them, compared entry by entry)."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or set(actual) != set(expected):
            raise AssertionError(msg or f"keys differ: {sorted(actual)} != {sorted(expected)}")
        for key in expected:
            assert_close(actual[key], expected[key], rtol=rtol, atol=atol, equal_nan=equal_nan,
                         check_dtype=check_dtype, check_device=check_device, msg=msg)
        return
    if isinstance(expected, (list, tuple)) and not isinstance(actual, Tensor):
        if len(actual) != len(expected):
            raise AssertionError(msg or f"lengths differ: {len(actual)} != {len(expected)}")
        for a, e in zip(actual, expected):
            assert_close(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan,
                         check_dtype=check_dtype, check_device=check_device, msg=msg)
        return
    if (rtol is None) != (atol is None):
        raise ValueError("assert_close: give both rtol and atol, or neither (as PyTorch)")
    a, a_dtype, a_device = _host(actual)
    e, e_dtype, e_device = _host(expected)
    if check_dtype and a_dtype is not None and e_dtype is not None and a_dtype != e_dtype:
        raise AssertionError(msg or f"dtypes differ: {a_dtype} != {e_dtype}")
    if check_device and a_device is not None and e_device is not None and a_device != e_device:
        raise AssertionError(msg or f"devices differ: {a_device} != {e_device}")
    if a.shape != e.shape:
        raise AssertionError(msg or f"shapes differ: {a.shape} != {e.shape}")
    if rtol is None:
        names = [n for n in (a_dtype, e_dtype) if n is not None] or [a.dtype.name]
        rtol, atol = max((DEFAULT_TOLERANCES.get(n, (0.0, 0.0)) for n in names),
                         key=lambda pair: pair[0])
    a64, e64 = a.astype(np.float64), e.astype(np.float64)
    close = np.isclose(a64, e64, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if not close.all():
        bad = int((~close).sum())
        worst = np.unravel_index(np.argmax(np.where(close, 0.0, np.abs(a64 - e64))), a.shape)
        raise AssertionError(msg or (
            f"tensors are not close: {bad} of {a.size} elements differ beyond rtol={rtol} "
            f"atol={atol}; the worst at index {tuple(int(i) for i in worst)}: "
            f"{a64[worst]!r} != {e64[worst]!r}"))


__all__ = ["assert_close"]
