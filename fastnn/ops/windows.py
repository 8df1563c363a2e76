"""PyTorch's window functions (``hann_window``, ``hamming_window``, ``blackman_window``,
``bartlett_window``, ``kaiser_window``): creation ops, computed on the host in float64 and
made in the requested float dtype on the requested device. ``periodic=True`` (the default)
is the symmetric window of length N + 1 without its last value, for spectral analysis."""

from __future__ import annotations

import numpy as np

from fastnn.api import dtypes
from fastnn.api.args import flag, integer, real
from fastnn.api.dtypes import as_dtype
from fastnn.ops.creation import _make
from fastnn.ops.table import public


def _window(op: str, length, periodic, dtype, device, requires_grad, shape) -> object:
    """The window ``shape(n)`` (a float64 array of n symmetric values) of ``length``."""
    length = integer(op, "window_length", length, 0)
    flag(op, "periodic", periodic)
    dtype = as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    if not dtype.is_floating:
        raise ValueError(f"{op}: expects a floating point dtype, got {dtype.name}")
    if length <= 1:
        values = np.ones(length)
    else:
        values = shape(length + 1)[:-1] if periodic else shape(length)
    return _make(values.astype(dtype.numpy), dtype, device, requires_grad)


def _cosines(n: int, *weights) -> np.ndarray:
    """sum_k (-1)^k weights[k] cos(2 pi k i / (n - 1)), i = 0..n-1."""
    phase = 2 * np.pi * np.arange(n) / (n - 1)
    return sum((-1) ** k * w * np.cos(k * phase) for k, w in enumerate(weights))


@public(top=True, functional=False)
def hann_window(window_length, periodic=True, *, dtype=None, device=None,
                requires_grad=False):
    """0.5 - 0.5 cos(2 pi i / (N - 1))."""
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n: _cosines(n, 0.5, 0.5))


@public(top=True, functional=False)
def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   device=None, requires_grad=False):
    """alpha - beta cos(2 pi i / (N - 1))."""
    alpha = real("hamming_window", "alpha", alpha)
    beta = real("hamming_window", "beta", beta)
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n: _cosines(n, alpha, beta))


@public(top=True, functional=False)
def blackman_window(window_length, periodic=True, *, dtype=None, device=None,
                    requires_grad=False):
    """0.42 - 0.5 cos(2 pi i / (N - 1)) + 0.08 cos(4 pi i / (N - 1))."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n: _cosines(n, 0.42, 0.5, 0.08))


@public(top=True, functional=False)
def bartlett_window(window_length, periodic=True, *, dtype=None, device=None,
                    requires_grad=False):
    """The triangle 1 - |2 i / (N - 1) - 1|."""
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n: 1 - np.abs(2 * np.arange(n) / (n - 1) - 1))


@public(top=True, functional=False)
def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, device=None,
                  requires_grad=False):
    """I0(beta sqrt(1 - (2 i / (N - 1) - 1)^2)) / I0(beta), I0 the modified Bessel function
    of order 0."""
    beta = real("kaiser_window", "beta", beta)
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n: np.i0(beta * np.sqrt(np.clip(
                       1 - (2 * np.arange(n) / (n - 1) - 1) ** 2, 0, None))) / np.i0(beta))
