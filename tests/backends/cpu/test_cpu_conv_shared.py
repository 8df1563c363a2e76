"""The NumPy backend's conv plans share the padded input and the padded gradient of one
layout: the weight gradient skips the copy of an array that the forward (input) or the
input gradient (gradient) has just written, and only then. Checked against the float64
loops of the conformance suite, in a training step's order of calls, with the same arrays
refilled in place between steps (as a compiled step's kept buffers are), and with the
orders that must not skip."""

from __future__ import annotations

import numpy as np
from fastnn_cpu import conv

from fastnn.conformance.cases_conv import conv1d_grads, conv1d_ref

N, C_IN, C, L, K, PAD = 4, 3, 5, 19, 5, 2
RTOL = 2e-5


def _close(got, ref):
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=RTOL * 10)


def test_a_training_steps_calls_with_arrays_refilled_in_place():
    rng = np.random.default_rng(0)
    x = np.empty((N, C_IN, L), np.float32)
    h = np.empty((N, C, L), np.float32)
    g1, g2 = np.empty((N, C, L), np.float32), np.empty((N, C, L), np.float32)
    w1 = rng.normal(size=(C, C_IN, K)).astype(np.float32)
    w2 = rng.normal(size=(C, C, K)).astype(np.float32)
    for _ in range(3):
        x[...] = rng.normal(size=x.shape)
        _close(conv.conv1d(x, w1, 1, PAD, 1, 1), conv1d_ref(x, w1, 1, PAD))
        h[...] = rng.normal(size=h.shape)
        _close(conv.conv1d(h, w2, 1, PAD, 1, 1), conv1d_ref(h, w2, 1, PAD))
        g2[...] = rng.normal(size=g2.shape)
        gh_ref, gw2_ref = conv1d_grads(h.astype(np.float64), w2, g2, 1, PAD, 1, 1)
        _close(conv.conv1d_grad_input(g2, w2, L, 1, PAD, 1, 1), gh_ref)
        _close(conv.conv1d_grad_weight(h, g2, K, 1, PAD, 1, 1), gw2_ref)  # both skipped
        g1[...] = rng.normal(size=g1.shape)
        _, gw1_ref = conv1d_grads(x.astype(np.float64), w1, g1, 1, PAD, 1, 1)
        _close(conv.conv1d_grad_weight(x, g1, K, 1, PAD, 1, 1), gw1_ref)


def test_a_second_weight_gradient_of_a_changed_array_copies_it_again():
    """A mark serves one read: the same arrays, changed in place, read twice by the weight
    gradient with nothing between (no forward, no input gradient) are copied again."""
    rng = np.random.default_rng(1)
    h = rng.normal(size=(N, C, L)).astype(np.float32)
    w = rng.normal(size=(C, C, K)).astype(np.float32)
    g = rng.normal(size=(N, C, L)).astype(np.float32)
    conv.conv1d(h, w, 1, PAD, 1, 1)
    conv.conv1d_grad_input(g, w, L, 1, PAD, 1, 1)
    conv.conv1d_grad_weight(h, g, K, 1, PAD, 1, 1)
    for _ in range(2):
        h *= 2.0
        g[...] = rng.normal(size=g.shape)
        _, gw_ref = conv1d_grads(h.astype(np.float64), w, g, 1, PAD, 1, 1)
        _close(conv.conv1d_grad_weight(h, g, K, 1, PAD, 1, 1), gw_ref)


def test_another_array_of_the_same_layout_in_between_is_copied():
    """Two layers of one layout: the forward of the second writes the shared input after
    the first's, so the first layer's weight gradient copies its own input again."""
    rng = np.random.default_rng(2)
    a, b = (rng.normal(size=(N, C, L)).astype(np.float32) for _ in range(2))
    w = rng.normal(size=(C, C, K)).astype(np.float32)
    g = rng.normal(size=(N, C, L)).astype(np.float32)
    conv.conv1d(a, w, 1, PAD, 1, 1)
    conv.conv1d(b, w, 1, PAD, 1, 1)
    for src in (b, a):
        _, gw_ref = conv1d_grads(src.astype(np.float64), w, g, 1, PAD, 1, 1)
        _close(conv.conv1d_grad_weight(src, g, K, 1, PAD, 1, 1), gw_ref)
    # a view of the array the forward read is another array: never taken for it
    conv.conv1d(a, w, 1, PAD, 1, 1)
    view = a[:, :, :]
    a += 1.0  # the view sees the change; the forward's copy does not
    view_ref = conv1d_grads(view.astype(np.float64), w, g, 1, PAD, 1, 1)[1]
    _close(conv.conv1d_grad_weight(view, g, K, 1, PAD, 1, 1), view_ref)
