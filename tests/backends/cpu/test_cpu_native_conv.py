"""fastnn_cpu.native's conv1d tap loops (native_conv.c, used by fastnn_cpu.conv_taps):
forward, input gradient and weight gradient agree with a float64 reference written
out and with the batched products they replace, in both orientations of the weight
gradient's blocks, with dilation, every padding the tap path takes, one sample, strided
inputs and gradients, and NaN where it stays put."""

import numpy as np
import pytest
from fastnn_cpu import conv, conv_taps, native

from tests.backends.cpu.native_switch import c_or_not, off, spy


@pytest.fixture(params=["C", "batched"])
def loops(request, monkeypatch):
    """Each test runs with the C loops (where they build) and with the batched products."""
    return c_or_not(request, monkeypatch, "_CONV", native.conv_library)


def _reference(x, w, g, padding, dilation):
    """(out, grad_input, grad_weight) in float64, by the definition."""
    x, w, g = (a.astype(np.float64) for a in (x, w, g))
    n, c_in, length = x.shape
    c_out, _, k = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding)))
    length_out = length + 2 * padding - dilation * (k - 1)
    out = np.zeros((n, c_out, length_out))
    dxp = np.zeros_like(xp)
    dw = np.zeros_like(w)
    for tap in range(k):
        window = xp[:, :, tap * dilation: tap * dilation + length_out]
        out += np.einsum("oc,nct->not", w[:, :, tap], window)
        dxp[:, :, tap * dilation: tap * dilation + length_out] += np.einsum(
            "oc,not->nct", w[:, :, tap], g)
        dw[:, :, tap] = np.einsum("not,nct->oc", g, window)
    return out, dxp[:, :, padding: padding + length], dw


CASES = [  # (n, c_in, c_out, length, kernel, padding, dilation)
    (32, 16, 32, 256, 5, 2, 1),  # bench_models' Conv1d first layer: (C_out, C_in) blocks
    (32, 32, 32, 256, 5, 2, 1),
    (4, 16, 8, 70, 3, 1, 1),  # 16 inputs, fewer outputs: (C_in, C_out) blocks
    (3, 24, 5, 68, 3, 0, 2),
    (1, 3, 7, 100, 7, 6, 1),
    (2, 1, 4, 80, 9, 4, 2),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_tap_loops_match_the_definition(case, dtype, loops):
    n, c_in, c_out, length, k, padding, dilation = case
    rng = np.random.default_rng(sum(case))
    x = rng.standard_normal((n, c_in, length)).astype(dtype)
    w = rng.standard_normal((c_out, c_in, k)).astype(dtype)
    length_out = length + 2 * padding - dilation * (k - 1)
    assert conv_taps.applies(length_out, k, 1, padding, dilation, 1)
    g = rng.standard_normal((n, c_out, length_out)).astype(dtype)
    out, dx, dw = _reference(x, w, g, padding, dilation)
    tol = dict(rtol=2e-4, atol=2e-4 * np.sqrt(c_in * k)) if dtype == np.float32 else \
        dict(rtol=1e-10, atol=1e-10)
    got = conv.conv1d(x, w, 1, padding, dilation, 1)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, out, **tol)
    got = conv.conv1d_grad_input(g, w, length, 1, padding, dilation, 1)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, dx, **tol)
    got = conv.conv1d_grad_weight(x, g, k, 1, padding, dilation, 1)
    assert got.dtype == dtype and got.shape == w.shape
    np.testing.assert_allclose(got, dw, rtol=tol["rtol"], atol=tol["atol"] * np.sqrt(n))


def test_strided_inputs_and_gradients_give_the_same(loops):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 16, 128)).astype(np.float32)
    w = rng.standard_normal((32, 16, 5)).astype(np.float32)
    g = rng.standard_normal((6, 32, 128)).astype(np.float32)
    x_t = np.ascontiguousarray(x.transpose(2, 0, 1)).transpose(1, 2, 0)  # another layout
    g_b = np.broadcast_to(g[:1], g.shape)  # a broadcast gradient
    np.testing.assert_array_equal(conv.conv1d(x_t, w, 1, 2, 1, 1), conv.conv1d(x, w, 1, 2, 1, 1))
    np.testing.assert_array_equal(conv.conv1d_grad_weight(x, g_b, 5, 1, 2, 1, 1),
                                  conv.conv1d_grad_weight(x, np.array(g_b), 5, 1, 2, 1, 1))
    np.testing.assert_array_equal(conv.conv1d_grad_input(g_b, w, 128, 1, 2, 1, 1),
                                  conv.conv1d_grad_input(np.array(g_b), w, 128, 1, 2, 1, 1))


def test_a_nan_stays_where_the_definition_puts_it(loops):
    x = np.ones((2, 16, 64), np.float32)
    x[1, 3, 10] = np.nan
    w = np.ones((32, 16, 3), np.float32)
    out = conv.conv1d(x, w, 1, 1, 1, 1)
    assert np.isnan(out[1, :, 9:12]).all() and not np.isnan(out[0]).any()
    assert np.isnan(out[1]).sum() == 32 * 3
    dw = conv.conv1d_grad_weight(x, np.ones((2, 32, 64), np.float32), 3, 1, 1, 1, 1)
    assert np.isnan(dw[:, 3]).all() and np.isfinite(np.delete(dw, 3, axis=1)).all()


@pytest.fixture
def spied(monkeypatch):
    """The names of the C tap loops called, in order (the library wrapped)."""
    return spy(monkeypatch, "_CONV", native.conv_library, keep=("gemm", "ilp64"))


def test_the_c_loops_are_what_runs(spied):
    x = np.ones((2, 16, 64), np.float32)
    w = np.ones((32, 16, 3), np.float32)
    g = np.ones((2, 32, 64), np.float32)
    conv.conv1d(x, w, 1, 1, 1, 1)
    conv.conv1d_grad_input(g, w, 64, 1, 1, 1, 1)
    conv.conv1d_grad_weight(x, g, 3, 1, 1, 1, 1)
    assert spied == ["conv1d_taps", "conv1d_taps", "conv1d_taps_weight"]


# ---------------------------------------------------------------- conv2d (conv_taps2d)

def _reference2d(x, w, g, pads, dilation):
    """(out, grad_input, grad_weight) of a stride-1 conv2d in float64, by the definition."""
    x, w, g = (a.astype(np.float64) for a in (x, w, g))
    (top, bottom), (left, right) = pads
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    _, _, kh, kw = w.shape
    dh, dw = dilation
    ho, wo = xp.shape[2] - dh * (kh - 1), xp.shape[3] - dw * (kw - 1)
    out = np.zeros((x.shape[0], w.shape[0], ho, wo))
    dxp, dw_ = np.zeros_like(xp), np.zeros_like(w)
    for a in range(kh):
        for b in range(kw):
            window = xp[:, :, a * dh: a * dh + ho, b * dw: b * dw + wo]
            out += np.einsum("oc,nchw->nohw", w[:, :, a, b], window)
            dxp[:, :, a * dh: a * dh + ho, b * dw: b * dw + wo] += np.einsum(
                "oc,nohw->nchw", w[:, :, a, b], g)
            dw_[:, :, a, b] = np.einsum("nohw,nchw->oc", g, window)
    h, w_in = x.shape[2:]
    return out, dxp[:, :, top: top + h, left: left + w_in], dw_


CASES_2D = [  # (n, c_in, c_out, h, w, kernel, pads, dilation)
    (2, 16, 32, 9, 7, 3, ((1, 1), (1, 1)), (1, 1)),  # (C_out, C_in) blocks
    (3, 16, 8, 10, 12, 3, ((0, 2), (1, 0)), (1, 1)),  # uneven padding
    (2, 20, 5, 11, 9, 3, ((2, 1), (0, 2)), (2, 1)),  # dilation
    (1, 24, 4, 8, 8, 5, ((2, 2), (2, 2)), (1, 1)),
]


@pytest.mark.parametrize("case", CASES_2D, ids=lambda c: "x".join(map(str, c[:6])))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_2d_tap_loops_match_the_definition(case, dtype, loops):
    n, c_in, c_out, h, w, k, pads, dilation = case
    from fastnn_cpu import conv_2d, conv_taps2d

    rng = np.random.default_rng(n + c_in + h)
    x = rng.standard_normal((n, c_in, h, w)).astype(dtype)
    wt = rng.standard_normal((c_out, c_in, k, k)).astype(dtype)
    assert conv_taps2d.applies(dtype, wt.shape, (1, 1), pads, dilation, 1) == (loops == "C")
    ho = h + sum(pads[0]) - dilation[0] * (k - 1)
    wo = w + sum(pads[1]) - dilation[1] * (k - 1)
    g = rng.standard_normal((n, c_out, ho, wo)).astype(dtype)
    out, dx, dwt = _reference2d(x, wt, g, pads, dilation)
    tol = dict(rtol=2e-4, atol=2e-4 * np.sqrt(c_in * k * k)) if dtype == np.float32 else \
        dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(conv_2d.conv2d(x, wt, (1, 1), pads, dilation, 1), out, **tol)
    got_dx = conv_2d.conv2d_grad_input(g, wt, (h, w), (1, 1), pads, dilation, 1)
    np.testing.assert_allclose(got_dx, dx, **tol)
    got_dw = conv_2d.conv2d_grad_weight(x, g, (k, k), (1, 1), pads, dilation, 1)
    np.testing.assert_allclose(got_dw, dwt, rtol=tol["rtol"], atol=tol["atol"] * np.sqrt(n * h))
    both = conv_2d.conv2d_backward(x, wt, g, (1, 1), pads, dilation, 1)
    np.testing.assert_allclose(both[0], dx, **tol)
    np.testing.assert_allclose(both[1], dwt, rtol=tol["rtol"], atol=tol["atol"] * np.sqrt(n * h))


def test_2d_nan_and_inf_give_what_the_im2col_path_gives():
    """A NaN only the dropped columns read (the C weight gradient's 0 * NaN), and a NaN
    weight (the C input gradient's padding times it), are left to the im2col path."""
    from fastnn_cpu import conv_2d

    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 16, 6, 6)).astype(np.float32)
    x[1, 2, 3, 5] = np.nan  # the last column: read by dropped columns of tap (., 0)
    w = rng.standard_normal((8, 16, 3, 3)).astype(np.float32)
    w_nan = w.copy()
    w_nan[2, 5, 0, 0] = np.inf
    g = rng.standard_normal((2, 8, 6, 6)).astype(np.float32)
    pads = ((1, 1), (1, 1))
    got = (conv_2d.conv2d_grad_weight(x, g, (3, 3), (1, 1), pads, (1, 1), 1),
           conv_2d.conv2d_grad_input(g, w_nan, (6, 6), (1, 1), pads, (1, 1), 1))
    with off("_CONV"):
        want = (conv_2d.conv2d_grad_weight(x, g, (3, 3), (1, 1), pads, (1, 1), 1),
                conv_2d.conv2d_grad_input(g, w_nan, (6, 6), (1, 1), pads, (1, 1), 1))
    for a, b in zip(got, want):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    assert not np.isnan(got[0]).all() and np.isnan(got[0]).any()


def test_the_2d_c_loops_are_what_runs(spied):
    from fastnn_cpu import conv_2d

    x = np.ones((2, 16, 8, 8), np.float32)
    w = np.ones((8, 16, 3, 3), np.float32)
    g = np.ones((2, 8, 8, 8), np.float32)
    conv_2d.conv2d(x, w, (1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    conv_2d.conv2d_backward(x, w, g, (1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    assert spied == ["conv2d_taps", "conv2d_taps", "conv2d_taps_weight"]


def test_an_empty_batch_gives_zero_weight_gradients(loops):
    from fastnn_cpu import conv_2d

    pads = ((1, 1), (1, 1))
    x, g = np.ones((0, 16, 8, 8), np.float32), np.ones((0, 8, 8, 8), np.float32)
    w = np.ones((8, 16, 3, 3), np.float32)
    assert conv_2d.conv2d(x, w, (1, 1), pads, (1, 1), 1).shape == (0, 8, 8, 8)
    for dw in (conv_2d.conv2d_grad_weight(x, g, (3, 3), (1, 1), pads, (1, 1), 1),
               conv_2d.conv2d_backward(x, w, g, (1, 1), pads, (1, 1), 1)[1]):
        np.testing.assert_array_equal(dw, np.zeros_like(w))
    x1, g1 = np.ones((0, 16, 70), np.float32), np.ones((0, 32, 70), np.float32)
    np.testing.assert_array_equal(conv.conv1d_grad_weight(x1, g1, 3, 1, 1, 1, 1),
                                  np.zeros((32, 16, 3), np.float32))
