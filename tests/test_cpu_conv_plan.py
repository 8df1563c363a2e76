"""The cpu backend's planned stride-1 convolutions (fastnn_cpu.conv_plan) against a float64
reference made another way (a loop over kernel taps), called repeatedly with one layout
(the plans' work arrays are reused: their zero padding must stay zero)."""

from collections import OrderedDict

import numpy as np
import pytest

conv_2d = pytest.importorskip("fastnn_cpu.conv_2d")
conv_1d = pytest.importorskip("fastnn_cpu.conv")


def _reference(x, w, padding, dilation, groups):
    """conv2d in float64 by a loop over taps: x (N, C, H, W), w (O, C/g, KH, KW)."""
    (top, bottom), (left, right) = padding
    dh, dw = dilation
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    n, c, hp, wp = x.shape
    o, cg, kh, kw = w.shape
    h_out, w_out = hp - dh * (kh - 1), wp - dw * (kw - 1)
    out = np.zeros((n, o, h_out, w_out))
    og = o // groups
    for g in range(groups):
        xs = x[:, g * cg : (g + 1) * cg]
        for a in range(kh):
            for b in range(kw):
                patch = xs[:, :, a * dh : a * dh + h_out, b * dw : b * dw + w_out]
                out[:, g * og : (g + 1) * og] += np.einsum(
                    "nchw,oc->nohw", patch, w[g * og : (g + 1) * og, :, a, b].astype(np.float64))
    return out


CASES = [  # (x shape, weight shape, padding, dilation, groups)
    ((3, 4, 9, 7), (6, 4, 3, 3), ((1, 1), (1, 1)), (1, 1), 1),
    ((2, 6, 8, 11), (4, 3, 3, 2), ((2, 0), (1, 3)), (1, 2), 2),
    ((5, 3, 6, 6), (3, 1, 3, 3), ((1, 1), (1, 1)), (2, 1), 3),
    ((40, 2, 5, 5), (3, 2, 2, 2), ((0, 0), (0, 0)), (1, 1), 1),  # many samples a chunk
]


@pytest.mark.parametrize("case", CASES)
def test_conv2d_plan_forward_and_gradients(case):
    xs, ws, padding, dilation, groups = case
    rng = np.random.default_rng(0)
    attrs = ((1, 1), padding, dilation, groups)
    for _ in range(3):  # the same plan, new data each time
        x = rng.standard_normal(xs).astype(np.float32)
        w = rng.standard_normal(ws).astype(np.float32)
        out = conv_2d.conv2d(x[..., ::-1].copy()[..., ::-1], w, *attrs)  # non-contiguous x
        ref = _reference(x, w, padding, dilation, groups)
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
        g = rng.standard_normal(ref.shape).astype(np.float32)
        # <g, conv(x, w)> is linear in x and in w: its gradients from the reference
        x64, w64 = x.astype(np.float64), w.astype(np.float64)
        eps = 1e-3
        dx = conv_2d.conv2d_grad_input(g, w, xs[2:], *attrs)
        dw = conv_2d.conv2d_grad_weight(x, g, ws[2:], *attrs)
        direction = rng.standard_normal(xs)
        expect = (np.sum(g * _reference(x64 + eps * direction, w64, padding, dilation, groups))
                  - np.sum(g * ref)) / eps
        np.testing.assert_allclose(np.sum(dx * direction), expect, rtol=1e-3, atol=1e-3)
        direction = rng.standard_normal(ws)
        expect = (np.sum(g * _reference(x64, w64 + eps * direction, padding, dilation, groups))
                  - np.sum(g * ref)) / eps
        np.testing.assert_allclose(np.sum(dw * direction), expect, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("channels", [2, 4])  # by im2col chunks, by taps
def test_conv2d_plan_weight_gradient_ignores_nan_outside_the_kept_columns(channels):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, channels, 5, 5)).astype(np.float32)
    g = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    attrs = ((1, 1), ((0, 0), (0, 0)), (1, 1), 1)
    assert conv_2d.conv_plan.TAP_MIN_CHANNELS in (3, 4)
    clean = conv_2d.conv2d_grad_weight(x, g, (3, 3), *attrs)
    # column 4 is read by kept outputs only through tap b = 2, but by the flat layout's
    # thrown-away columns through every tap
    x[0, :, :, 4] = np.nan
    dw = conv_2d.conv2d_grad_weight(x, g, (3, 3), *attrs)
    assert np.isnan(dw[:, :, :, 2]).all() and np.isfinite(dw[:, :, :, :2]).all()
    np.testing.assert_allclose(dw[:, :, :, :2], clean[:, :, :, :2], rtol=1e-5, atol=1e-5)


def test_conv1d_plan_matches_the_reference():
    rng = np.random.default_rng(2)
    pad, dil = ((0, 0), (2, 2)), (1, 2)
    for _ in range(2):
        x = rng.standard_normal((4, 6, 23)).astype(np.float32)
        w = rng.standard_normal((4, 3, 5)).astype(np.float32)
        out = conv_1d.conv1d(x, w, 1, 2, 2, 2)
        x64, w64 = x[:, :, None].astype(np.float64), w[:, :, None].astype(np.float64)
        ref = _reference(x64, w64, pad, dil, 2)
        np.testing.assert_allclose(out, ref[:, :, 0], rtol=1e-4, atol=1e-4)
        g = rng.standard_normal(ref.shape).astype(np.float32)
        dx = conv_1d.conv1d_grad_input(g[:, :, 0], w, 23, 1, 2, 2, 2)
        dw = conv_1d.conv1d_grad_weight(x, g[:, :, 0], 5, 1, 2, 2, 2)
        eps = 1e-3
        d = rng.standard_normal(x.shape)
        expect = (np.sum(g * _reference(x64 + eps * d[:, :, None], w64, pad, dil, 2))
                  - np.sum(g * ref)) / eps
        np.testing.assert_allclose(np.sum(dx * d), expect, rtol=1e-3, atol=1e-3)
        d = rng.standard_normal(w.shape)
        expect = (np.sum(g * _reference(x64, w64 + eps * d[:, :, None], pad, dil, 2))
                  - np.sum(g * ref)) / eps
        np.testing.assert_allclose(np.sum(dw * d), expect, rtol=1e-3, atol=1e-3)


def test_conv2d_plans_over_the_budget_are_not_kept(monkeypatch):
    conv_plan = conv_2d.conv_plan
    monkeypatch.setattr(conv_plan, "BUDGET_BYTES", 4 * 2**10)
    # this thread's plans start empty: one an earlier test kept under the normal budget
    # would be found here (the suite runs in two processes, in an order that varies)
    monkeypatch.setattr(conv_plan._local, "plans", OrderedDict(), raising=False)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    padding = ((1, 1), (1, 1))
    for _ in range(2):
        out = conv_2d.conv2d(x, w, (1, 1), padding, (1, 1), 1)
        np.testing.assert_allclose(out, _reference(x, w, padding, (1, 1), 1), rtol=1e-4,
                                   atol=1e-4)
    kept = getattr(conv_plan._local, "plans", {})
    assert not any(key[1:4] == (2, (8, 8), (3, 3)) for key in kept)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, padding, dilation", [
    ((3, 5, 80), 2, 1),  # "same" padding, kernel 5; forward by per-sample im2col
    ((2, 16, 70), 2, 1),  # forward by per-sample im2col, the gradients by taps
    ((2, 32, 66), 2, 1),  # everything by taps
    ((1, 23, 1600), 2, 1),  # per-sample im2col, its GEMM split in columns
    ((2, 4, 90), 0, 2),  # no padding
    ((2, 3, 64), 8, 2),  # padding as wide as the span
    ((0, 3, 70), 1, 1),  # an empty batch
])
def test_conv1d_taps_matches_the_reference(dtype, shape, padding, dilation):
    taps = pytest.importorskip("fastnn_cpu.conv_taps")
    rng = np.random.default_rng(4)
    n, c, length = shape
    length_out = length + 2 * padding - dilation * 4
    assert taps.applies(length_out, 5, 1, padding, dilation, 1)
    pad = ((0, 0), (padding, padding))
    for _ in range(2):  # the work arrays' zero padding reused
        x = rng.standard_normal(shape).astype(dtype)
        w = rng.standard_normal((6, c, 5)).astype(dtype)
        x64, w64 = x[:, :, None].astype(np.float64), w[:, :, None].astype(np.float64)
        ref = _reference(x64, w64, pad, (1, dilation), 1)
        out = conv_1d.conv1d(x[:, :, ::-1].copy()[:, :, ::-1], w, 1, padding, dilation, 1)
        assert out.dtype == dtype and out.shape == ref[:, :, 0].shape
        np.testing.assert_allclose(out, ref[:, :, 0], rtol=1e-4, atol=1e-4)
        g = rng.standard_normal(ref.shape).astype(dtype)
        dx = conv_1d.conv1d_grad_input(g[:, :, 0], w, length, 1, padding, dilation, 1)
        dw = conv_1d.conv1d_grad_weight(x, g[:, :, 0], 5, 1, padding, dilation, 1)
        assert dx.shape == x.shape and dw.shape == w.shape
        eps = 1e-3
        d = rng.standard_normal(x.shape)
        expect = (np.sum(g * _reference(x64 + eps * d[:, :, None], w64, pad, (1, dilation), 1))
                  - np.sum(g * ref)) / eps
        np.testing.assert_allclose(np.sum(dx * d), expect, rtol=1e-3, atol=1e-3)
        d = rng.standard_normal(w.shape)
        expect = (np.sum(g * _reference(x64, w64 + eps * d[:, :, None], pad, (1, dilation), 1))
                  - np.sum(g * ref)) / eps
        np.testing.assert_allclose(np.sum(dw * d), expect, rtol=1e-3, atol=1e-3)


def test_conv1d_taps_gradients_of_a_broadcast_gradient():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 32, 70)).astype(np.float32)
    w = rng.standard_normal((8, 32, 5)).astype(np.float32)
    g = np.broadcast_to(rng.standard_normal((3, 8, 1)).astype(np.float32), (3, 8, 70))
    dense = np.ascontiguousarray(g)
    for hook, args in ((conv_1d.conv1d_grad_weight, (x, g, 5)),
                       (conv_1d.conv1d_grad_input, (g, w, 70))):
        dense_args = tuple(dense if a is g else a for a in args)
        np.testing.assert_allclose(hook(*args, 1, 2, 1, 1), hook(*dense_args, 1, 2, 1, 1),
                                   rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("chunk_bytes", [1, 2 * 5 * 5 * 70 * 8, 10**9])
def test_conv1d_taps_forward_in_chunks_of_samples(monkeypatch, chunk_bytes):
    # the forward's im2col a few samples at a time: chunks of 1, of 2 (a last one of 1)
    # and the whole batch; non-contiguous input, a NaN sample, bit for bit alike
    taps = pytest.importorskip("fastnn_cpu.conv_taps")
    rng = np.random.default_rng(6)
    x = rng.standard_normal((5, 5, 140))[:, :, ::2]
    x[3, 1, 7] = np.nan
    w = rng.standard_normal((4, 5, 5))
    monkeypatch.setattr(taps, "COLUMNS_CHUNK_BYTES", chunk_bytes)
    out = taps.forward(x, w, 2, 1)
    ref = _reference(x[:, :, None], w[:, :, None], ((0, 0), (2, 2)), (1, 1), 1)[:, :, 0]
    nan = np.isnan(ref)
    assert nan.any() and np.array_equal(np.isnan(out), nan)
    np.testing.assert_allclose(out[~nan], ref[~nan], rtol=1e-12, atol=1e-12)
    monkeypatch.setattr(taps, "COLUMNS_CHUNK_BYTES", 10**9)
    np.testing.assert_array_equal(out, taps.forward(x, w, 2, 1))
