"""fastnn_cpu.native: the LSTM's and GRU's time loops in C agree with the NumPy loops
they replace (forward and backward, float32 and float64, every layout the hooks are
given, through MKL's GEMM and through NumPy's own BLAS), its float32 tanh is within a
few ulps of the float64 one with NaN, Inf and -0.0 kept, and FASTNN_CPU_NATIVE chooses
or refuses."""

import numpy as np
import pytest
from fastnn_cpu import mkl_gemm, native, recurrent, recurrent_gru

from tests.backends.cpu.native_switch import off

needs_c = pytest.mark.skipif(native.library() is None,
                             reason=f"no C loops here: {native.status()}")


def _numpy_loops(fn):
    """``fn()`` with the C loops switched off."""
    with off("_LOADED"):
        return fn()


def _inputs(rng, shape, dtype, kind="lstm"):
    """x, the states (h0, and c0 for the LSTM), the weights and the biases (one for the
    LSTM, as the hook takes them; b_ih and b_hh for the GRU)."""
    t_len, n, size, hid = shape
    gates = 4 if kind == "lstm" else 3
    s = 1 / np.sqrt(hid)

    def draw(*dims, scale):
        return rng.uniform(-scale, scale, dims).astype(dtype)

    states = [draw(n, hid, scale=0.5) for _ in range(2 if kind == "lstm" else 1)]
    biases = [draw(gates * hid, scale=s) for _ in range(1 if kind == "lstm" else 2)]
    return (rng.normal(size=(t_len, n, size)).astype(dtype), *states,
            draw(gates * hid, size, scale=2 * s), draw(gates * hid, hid, scale=2 * s),
            *biases)


def _lstm_inputs(rng, shape, dtype):
    return _inputs(rng, shape, dtype, "lstm")


def _close(got, want, dtype, what):
    tol = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=what)


SHAPES = [(64, 32, 16, 64), (1, 1, 1, 1), (5, 3, 4, 2), (7, 1, 3, 9), (3, 17, 5, 33)]


@needs_c
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_c_loops_agree_with_the_numpy_loops(shape, dtype):
    """Forward outputs and every gradient of the C loops against the NumPy loops', on
    the forward's own outputs and on copies of them (the backward then rebuilds the
    rows and cells it would have found behind the views), with a batch-first (strided)
    x and a broadcast output gradient."""
    rng = np.random.default_rng(sum(shape))
    x, h0, c0, w_ih, w_hh, bias = _lstm_inputs(rng, shape, dtype)
    x_strided = np.ascontiguousarray(x.transpose(1, 0, 2)).transpose(1, 0, 2)
    got = recurrent.lstm_impl(x_strided, h0, c0, w_ih, w_hh, bias)
    want = _numpy_loops(lambda: recurrent.lstm_impl(x, h0, c0, w_ih, w_hh, bias))
    for name, g, w in zip(("out", "gates", "cells"), got, want):
        _close(g, w, dtype, f"forward {name} {shape}")
    grad_c = rng.normal(size=h0.shape).astype(dtype)
    for grad in (rng.normal(size=got[0].shape).astype(dtype),
                 np.broadcast_to(dtype(0.7), got[0].shape)):
        for outputs in (got, tuple(np.array(a) for a in got)):  # views, then copies
            back = recurrent.lstm_backward_impl(x, h0, c0, w_ih, w_hh, *outputs, grad,
                                                grad_c, True)
            ref = _numpy_loops(lambda outputs=outputs, grad=grad: recurrent.
                               lstm_backward_impl(x, h0, c0, w_ih, w_hh, *outputs, grad,
                                                  grad_c, True))
            for k, (g, w) in enumerate(zip(back, ref)):
                assert g.dtype == dtype and g.shape == w.shape
                _close(g, w, dtype, f"backward gradient {k} {shape}")


@needs_c
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_gru_c_loops_agree_with_the_numpy_loops(shape, dtype):
    """As the LSTM's: the forward's (out, saved) and every gradient, on the forward's
    own outputs and on copies, with a strided x and a broadcast gradient."""
    rng = np.random.default_rng(sum(shape) + 1)
    x, h0, w_ih, w_hh, b_ih, b_hh = _inputs(rng, shape, dtype, "gru")
    x_strided = np.ascontiguousarray(x.transpose(1, 0, 2)).transpose(1, 0, 2)
    got = recurrent_gru.gru_impl(x_strided, h0, w_ih, w_hh, b_ih, b_hh)
    want = _numpy_loops(lambda: recurrent_gru.gru_impl(x, h0, w_ih, w_hh, b_ih, b_hh))
    for name, g, w in zip(("out", "saved"), got, want):
        _close(g, w, dtype, f"GRU forward {name} {shape}")
    for grad in (rng.normal(size=got[0].shape).astype(dtype),
                 np.broadcast_to(dtype(0.7), got[0].shape)):
        for outputs in (got, tuple(np.array(a) for a in got)):
            back = recurrent_gru.gru_backward_impl(x, h0, w_ih, w_hh, *outputs, grad, True)
            ref = _numpy_loops(lambda outputs=outputs, grad=grad: recurrent_gru.
                               gru_backward_impl(x, h0, w_ih, w_hh, *outputs, grad, True))
            for k, (g, w) in enumerate(zip(back, ref)):
                assert g.dtype == dtype and g.shape == w.shape
                _close(g, w, dtype, f"GRU backward gradient {k} {shape}")


@needs_c
def test_c_loops_match_a_float64_reference():
    """The C loops' float32 forwards against PyTorch's equations in float64 (the
    conformance suite's reference and finite differences check the same hooks, and
    their backwards)."""
    from fastnn.conformance.cases_recurrent import gru_ref, lstm_ref

    rng = np.random.default_rng(3)
    args = _lstm_inputs(rng, (6, 4, 3, 5), np.float32)
    out, _, cells = recurrent.lstm_impl(*args)
    want_out, want_cells = lstm_ref(*(a.astype(np.float64) for a in args))
    np.testing.assert_allclose(out, want_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cells, want_cells, rtol=1e-5, atol=1e-6)
    args = _inputs(rng, (6, 4, 3, 5), np.float32, "gru")
    np.testing.assert_allclose(recurrent_gru.gru_impl(*args)[0],
                               gru_ref(*(a.astype(np.float64) for a in args)),
                               rtol=1e-5, atol=1e-6)


@needs_c
def test_through_numpys_own_blas(monkeypatch):
    """The GEMM found in NumPy's BLAS library (the route without MKL: ILP64 OpenBLAS in
    NumPy's wheels) gives the same loops as the one in use."""
    monkeypatch.setattr(mkl_gemm, "VERSION", None)
    found = native._gemms()
    assert found is not None, "no cblas_sgemm in NumPy's BLAS"
    lib = native.library()
    other = native._Native(native.build.load(native._SOURCE, "FASTNN_CPU_NATIVE", "")[0],
                           *found)
    rng = np.random.default_rng(5)
    for dtype in (np.float32, np.float64):
        args = _lstm_inputs(rng, (9, 6, 4, 7), dtype)
        want = recurrent.lstm_impl(*args)
        monkeypatch.setattr(native, "_LOADED", [(other, "numpy's BLAS")])
        got = recurrent.lstm_impl(*args)
        monkeypatch.setattr(native, "_LOADED", [(lib, "in use")])
        for g, w in zip(got, want):
            _close(g, w, dtype, "NumPy's BLAS against the GEMM in use")
        gru_args = _inputs(rng, (9, 6, 4, 7), dtype, "gru")
        want = recurrent_gru.gru_impl(*gru_args)
        want_back = recurrent_gru.gru_backward_impl(*gru_args[:4], *want, want[0] * 0 + 1, True)
        monkeypatch.setattr(native, "_LOADED", [(other, "numpy's BLAS")])
        got = recurrent_gru.gru_impl(*gru_args)
        got_back = recurrent_gru.gru_backward_impl(*gru_args[:4], *got, got[0] * 0 + 1, True)
        monkeypatch.setattr(native, "_LOADED", [(lib, "in use")])
        for g, w in zip(got + got_back, want + want_back):
            _close(g, w, dtype, "GRU: NumPy's BLAS against the GEMM in use")


@needs_c
def test_float32_tanh_within_a_few_ulps():
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.normal(0, s, 20000) for s in (1e-6, 1e-2, 0.3, 1, 3, 10)]
                       + [np.linspace(-12, 12, 20001)]).astype(np.float32)
    x = np.concatenate([x, np.float32([0.625, -0.625, 1e-38, 1e-45, 88.0, 1e30])])
    out = np.empty_like(x)
    native.library().tanh_f32(native.address(x), native.address(out), x.size)
    want = np.tanh(x.astype(np.float64))
    ulps = np.abs(out - want) / np.spacing(np.abs(want.astype(np.float32)))
    assert ulps.max() <= 3, f"{ulps.max()} ulps at x = {x[ulps.argmax()]}"
    special = np.float32([np.nan, np.inf, -np.inf, -0.0, 0.0, -30.0])
    got = np.empty_like(special)
    native.library().tanh_f32(native.address(special), native.address(got), special.size)
    assert np.isnan(got[0]) and list(got[1:3]) == [1.0, -1.0] and got[5] == -1.0
    assert np.signbit(got[3]) and got[3] == 0 and not np.signbit(got[4])


def test_the_mode_is_checked_and_off_turns_the_c_loops_off(monkeypatch):
    monkeypatch.setenv("FASTNN_CPU_NATIVE", "sometimes")
    with pytest.raises(ValueError, match="FASTNN_CPU_NATIVE must be one of auto, on, off"):
        native._load()
    monkeypatch.setenv("FASTNN_CPU_NATIVE", "off")
    assert native._load() == (None, "off (FASTNN_CPU_NATIVE=off)")
    assert native.library() is None or "recurrent layers: C (" in native.status()


def test_on_without_a_compiler_says_what_failed(monkeypatch, tmp_path):
    monkeypatch.setenv("FASTNN_CACHE", str(tmp_path))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    monkeypatch.setenv("FASTNN_CPU_NATIVE", "on")
    with pytest.raises(RuntimeError, match="FASTNN_CPU_NATIVE=on, but the cpu backend's C "
                                           "loops cannot be built: .*no-such-cc"):
        native._load()
    monkeypatch.setenv("FASTNN_CPU_NATIVE", "auto")  # auto: NumPy's loops, and why
    lib, why = native._load()
    assert lib is None and why.startswith("NumPy (")
    assert not list(tmp_path.rglob("*.so")), "a failed build left a library behind"
