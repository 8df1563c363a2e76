"""The cpu backend's fused LSTM and GRU layers' NumPy loops over sequences longer than
one block of their backward (fastnn_cpu.recurrent.BLOCK_BYTES), against the core's
step-by-step composite in float64 (the C loops, which have no blocks, are off here)."""

import numpy as np
import pytest

rec = pytest.importorskip("fastnn_cpu.recurrent")
gru = pytest.importorskip("fastnn_cpu.recurrent_gru")
native = pytest.importorskip("fastnn_cpu.native")


@pytest.fixture(autouse=True)
def numpy_loops(monkeypatch):
    monkeypatch.setattr(native, "_LOADED", [(None, "off: the blocks are the NumPy loops'")])


@pytest.mark.parametrize("block_bytes", [1, 3 * 5 * 4 * 6 * 8, 2**20])
def test_lstm_layer_and_backward_match_the_composite(monkeypatch, block_bytes):
    from fastnn.api import composite_recurrent
    from fastnn.api.device import as_device

    ops = as_device("cpu").ops
    monkeypatch.setattr(rec, "BLOCK_BYTES", block_bytes)  # blocks of 1, 3 and all 7 steps
    rng = np.random.default_rng(0)
    t_len, n, size, hid = 7, 5, 3, 6
    x = rng.uniform(-1, 1, (n, t_len, size)).transpose(1, 0, 2)  # time-major, strided
    h0, c0 = rng.uniform(-0.5, 0.5, (2, n, hid))
    w_ih = rng.uniform(-0.4, 0.4, (4 * hid, size))
    w_hh = rng.uniform(-0.4, 0.4, (4 * hid, hid))
    bias = rng.uniform(-0.4, 0.4, 4 * hid)
    got = rec.lstm_layer(x, h0, c0, w_ih, w_hh, bias)
    want = composite_recurrent.lstm_layer(ops, x, h0, c0, w_ih, w_hh, bias)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-12, atol=1e-12)
    grad_out = rng.normal(size=(t_len, n, hid))
    grad_c = rng.normal(size=(n, hid))
    back = rec.lstm_layer_backward(x, h0, c0, w_ih, w_hh, *got, grad_out, grad_c, True)
    ref = composite_recurrent.lstm_layer_backward(ops, x, h0, c0, w_ih, w_hh, *got, grad_out,
                                                  grad_c, True)
    for a, b in zip(back, ref):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("block_bytes", [1, 3 * 5 * 4 * 6 * 8, 2**20])
def test_gru_layer_and_backward_match_the_composite(monkeypatch, block_bytes):
    from fastnn.api import composite_recurrent
    from fastnn.api.device import as_device

    ops = as_device("cpu").ops
    monkeypatch.setattr(rec, "BLOCK_BYTES", block_bytes)
    rng = np.random.default_rng(1)
    t_len, n, size, hid = 7, 5, 3, 6
    x = rng.uniform(-1, 1, (n, t_len, size)).transpose(1, 0, 2)
    h0 = rng.uniform(-0.5, 0.5, (n, hid))
    w_ih = rng.uniform(-0.4, 0.4, (3 * hid, size))
    w_hh = rng.uniform(-0.4, 0.4, (3 * hid, hid))
    b_ih, b_hh = rng.uniform(-0.4, 0.4, (2, 3 * hid))
    got = gru.gru_layer(x, h0, w_ih, w_hh, b_ih, b_hh)
    want = composite_recurrent.gru_layer(ops, x, h0, w_ih, w_hh, b_ih, b_hh)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-12, atol=1e-12)
    grad_out = rng.normal(size=(t_len, n, hid))
    back = gru.gru_layer_backward(x, h0, w_ih, w_hh, *got, grad_out, True)
    ref = composite_recurrent.gru_layer_backward(ops, x, h0, w_ih, w_hh, *got, grad_out, True)
    for a, b in zip(back, ref):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-10, atol=1e-12)
