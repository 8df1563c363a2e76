"""The window functions against SciPy's (``sym=False`` is PyTorch's periodic window) and
against torch where it is installed; dtypes, devices and bad arguments."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn

signal = pytest.importorskip("scipy.signal")

WINDOWS = {  # fastnn name -> (its extra args, SciPy's window spec for them)
    "hann_window": ((), "hann"),
    "hamming_window": ((), "hamming"),
    "blackman_window": ((), "blackman"),
    "bartlett_window": ((), "bartlett"),
    "kaiser_window": ((7.5,), ("kaiser", 7.5)),
}


@pytest.mark.parametrize("name", sorted(WINDOWS))
@pytest.mark.parametrize("length", [0, 1, 2, 3, 8, 33])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows_match_scipy(name, length, periodic):
    extra, spec = WINDOWS[name]
    got = getattr(fnn, name)(length, periodic, *extra, dtype=fnn.float64)
    assert got.dtype == fnn.float64 and got.shape == (length,)
    if length == 0:
        return
    want = signal.get_window(spec, length, fftbins=periodic)  # fftbins: the periodic one
    np.testing.assert_allclose(got.numpy(), want, atol=1e-13)


def test_hamming_coefficients_default_dtype_and_device():
    got = fnn.hamming_window(6, False, 0.5, 0.5)
    assert got.dtype == fnn.float32
    np.testing.assert_allclose(got.numpy(), signal.get_window("hann", 6, fftbins=False),
                               atol=1e-7)
    try:
        fnn.Device("opencl")
    except fnn.BackendError:
        return
    on = fnn.hann_window(8, device="opencl")
    assert on.device == fnn.Device("opencl")
    np.testing.assert_allclose(on.numpy(), fnn.hann_window(8).numpy())


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="hann_window: expects a floating point dtype"):
        fnn.hann_window(4, dtype=fnn.int64)
    with pytest.raises((ValueError, TypeError), match="window_length"):
        fnn.hann_window(-1)
    with pytest.raises(TypeError, match="periodic must be True or False"):
        fnn.blackman_window(4, "yes")


@pytest.mark.parametrize("name", sorted(WINDOWS))
def test_windows_match_torch(name):
    torch = pytest.importorskip("torch")
    extra = WINDOWS[name][0]
    for length in (1, 5, 16):
        for periodic in (True, False):
            np.testing.assert_allclose(
                getattr(fnn, name)(length, periodic, *extra, dtype=fnn.float64).numpy(),
                getattr(torch, name)(length, periodic, *extra, dtype=torch.float64).numpy(),
                atol=1e-13)
