"""The cpu backend's batched conv2d chunks (fastnn_cpu.conv_batched) against its planned
chunks (fastnn_cpu.conv_plan, checked against a float64 reference in
tests/test_cpu_conv_plan.py) and a float64 reference: forward, input gradient and the
shared backward, repeated on one layout (the work arrays' padding must stay zero), with
batches of one to four chunks, dilation, uneven padding, and NaN inputs."""

from __future__ import annotations

import numpy as np
import pytest
from fastnn_cpu import conv_2d, conv_batched, conv_plan

CASES = [  # x shape, weight shape, padding, dilation
    ((3, 8, 12, 11), (9, 8, 3, 3), ((1, 1), (1, 1)), (1, 1)),  # two batches of four
    ((2, 8, 9, 10), (8, 8, 3, 2), ((2, 2), (1, 1)), (2, 1)),  # one batch of three
    ((1, 12, 5, 6), (8, 12, 2, 3), ((0, 1), (2, 0)), (1, 1)),  # one chunk
    ((9, 16, 16, 16), (16, 16, 3, 3), ((1, 1), (1, 1)), (1, 1)),  # 11 batches
]


def _reference(x, w, padding, dilation):
    (top, bottom), (left, right) = padding
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    kh, kw = w.shape[2:]
    h_out = x.shape[2] - dilation[0] * (kh - 1)
    w_out = x.shape[3] - dilation[1] * (kw - 1)
    out = 0
    for a in range(kh):
        for b in range(kw):
            patch = x[:, :, a * dilation[0] : a * dilation[0] + h_out,
                      b * dilation[1] : b * dilation[1] + w_out]
            out = out + np.einsum("nchw,oc->nohw", patch, w[:, :, a, b].astype(np.float64))
    return out


@pytest.mark.parametrize("case", CASES)
def test_batched_matches_the_plans_and_the_reference(case):
    xs, ws, padding, dilation = case
    lay = conv_2d._Layout2d(xs[0], xs[2:], ws[2:], (1, 1), padding, dilation)
    assert lay.flat and conv_batched.applies(np.dtype(np.float32), ws, 1)
    rng = np.random.default_rng(0)
    attrs = ((1, 1), padding, dilation, 1)
    for _ in range(3):
        x = rng.standard_normal(xs).astype(np.float32)
        w = rng.standard_normal(ws).astype(np.float32)
        ref = _reference(x, w, padding, dilation)
        out = conv_2d.conv2d(x[..., ::-1].copy()[..., ::-1], w, *attrs)
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
        g = rng.standard_normal(ref.shape).astype(np.float32)
        dx = conv_2d.conv2d_grad_input(g, w, xs[2:], *attrs)
        np.testing.assert_allclose(dx, conv_plan.grad_input(g, w, lay, 1), rtol=1e-4,
                                   atol=1e-4)
        both = conv_2d.conv2d_backward(x, w, g, *attrs)
        np.testing.assert_allclose(both[0], dx, rtol=1e-5, atol=1e-5)
        dw = conv_plan.grad_weight(x, g, lay, 1, taps=False)
        np.testing.assert_allclose(both[1], dw, rtol=1e-4, atol=1e-3)
        # <g, conv(x, w)> is linear in w: the weight gradient against the reference
        direction = rng.standard_normal(ws)
        eps = 1e-3
        expect = (np.sum(g * _reference(x, w + eps * direction, padding, dilation))
                  - np.sum(g * ref)) / eps
        np.testing.assert_allclose(np.sum(both[1] * direction), expect, rtol=1e-3, atol=1e-3)


def test_batched_backward_with_nan_inputs_matches_the_two_hooks():
    xs, ws, padding, dilation = CASES[0]
    rng = np.random.default_rng(1)
    attrs = ((1, 1), padding, dilation, 1)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    g = rng.standard_normal((xs[0], ws[0], *xs[2:])).astype(np.float32)
    x[1, 2, 0, 10] = np.nan  # a corner: the padding columns beside it read it too
    dx, dw = conv_2d.conv2d_backward(x, w, g, *attrs)
    np.testing.assert_array_equal(np.isnan(dw),
                                  np.isnan(conv_2d.conv2d_grad_weight(x, g, ws[2:], *attrs)))
    np.testing.assert_allclose(dx, conv_2d.conv2d_grad_input(g, w, xs[2:], *attrs),
                               rtol=1e-5, atol=1e-5)
    x[1, 2, 0, 10] = 0.0  # the same plan afterwards: nothing of the NaN left
    dx, dw = conv_2d.conv2d_backward(x, w, g, *attrs)
    assert np.isfinite(dw).all() and np.isfinite(dx).all()
