"""The NumPy backend's conv1d on its flat layout, with reused work arrays.

Calls the hooks directly, many times in a row with fresh data and changing
layouts (so a reused work array with stale data or stale padding would show),
and from several threads at once; every result is compared with the float64
loops of the conformance suite.
"""

from __future__ import annotations

import threading
import tracemalloc

import numpy as np
import pytest
from fastnn_cpu import conv, scratch

from fastnn.conformance.cases_conv import conv1d_grads, conv1d_ref

# (n, c_in, length, c_out, k, stride, padding, dilation, groups)
CONFIGS = [
    (2, 3, 11, 4, 3, 1, 1, 1, 1),
    (2, 3, 11, 4, 3, 1, 2, 1, 1),  # same input and weight shapes, other padding
    (2, 3, 13, 4, 3, 1, 1, 1, 1),  # same padded length as the one above
    (3, 4, 17, 6, 5, 2, 2, 1, 2),
    (3, 4, 17, 6, 5, 3, 0, 2, 1),
    (1, 2, 9, 2, 3, 4, 3, 1, 1),  # stride above the padded length's remainder
    (4, 1, 40, 8, 9, 1, 4, 1, 1),
    (2, 6, 15, 6, 2, 1, 0, 3, 3),
    (5, 2, 5, 3, 5, 1, 0, 1, 1),  # a single output position
    (0, 2, 8, 3, 3, 1, 1, 1, 1),  # an empty batch
    (0, 2, 8, 3, 3, 3, 1, 1, 1),  # an empty batch with a stride
    # The per-sample layout: the flat one would throw most of its columns away.
    (2, 2, 12, 3, 10, 1, 0, 1, 1),  # a kernel nearly as long as the signal
    (2, 3, 7, 2, 2, 20, 1, 1, 1),  # a stride past the padded length
    (3, 4, 20, 4, 5, 1, 0, 4, 2),  # dilation * (K - 1) near the length, two groups
    (0, 2, 8, 3, 8, 1, 0, 1, 1),  # an empty batch
]


def _check(cfg, rng, dtype=np.float64, rtol=1e-10):
    n, c_in, length, c_out, k, stride, padding, dilation, groups = cfg
    x = rng.normal(size=(n, c_in, length))
    w = rng.normal(size=(c_out, c_in // groups, k))
    out_ref = conv1d_ref(x, w, stride, padding, dilation, groups)
    g = rng.normal(size=out_ref.shape)
    gx_ref, gw_ref = conv1d_grads(x, w, g, stride, padding, dilation, groups)
    xs, ws, gs = (a.astype(dtype) for a in (x, w, g))
    out = conv.conv1d(xs, ws, stride, padding, dilation, groups)
    gx = conv.conv1d_grad_input(gs, ws, length, stride, padding, dilation, groups)
    gw = conv.conv1d_grad_weight(xs, gs, k, stride, padding, dilation, groups)
    for got, ref in ((out, out_ref), (gx, gx_ref), (gw, gw_ref)):
        assert got.dtype == dtype and got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol * 10)
    return out, gx, gw


def test_repeated_calls_with_changing_layouts_match_the_reference():
    rng = np.random.default_rng(0)
    for _ in range(3):
        for cfg in CONFIGS:
            _check(cfg, rng)


def test_float32_matches_the_reference():
    rng = np.random.default_rng(1)
    for cfg in CONFIGS:
        _check(cfg, rng, np.float32, rtol=2e-5)


def test_results_do_not_alias_reused_work_arrays():
    rng = np.random.default_rng(2)
    cfg = CONFIGS[3]
    first = [a.copy() for a in _check(cfg, rng)]
    kept = _check(cfg, rng)  # same layout: the work arrays are reused
    again = _check(cfg, np.random.default_rng(2))  # the first call's data, a third time
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert not any(np.shares_memory(a, b) for a, b in zip(kept, again))


def test_threads_share_no_work_arrays():
    errors = []

    def work(seed):
        try:
            rng = np.random.default_rng(seed)
            for _ in range(20):
                _check(CONFIGS[seed % 2], rng)
        except Exception as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_scratch_keeps_at_most_its_budget(monkeypatch):
    monkeypatch.setattr(scratch, "BUDGET_BYTES", 4096)
    monkeypatch.setattr(scratch._local, "arrays", None, raising=False)
    a = scratch.zeros("a", (128,), np.float64)  # 1 KiB: kept
    assert scratch.zeros("a", (128,), np.float64) is a
    big = scratch.zeros("b", (1024,), np.float64)  # 8 KiB, over a quarter: never kept
    assert scratch.zeros("b", (1024,), np.float64) is not big
    for i in range(8):  # 1 KiB each: the oldest go
        scratch.zeros(f"c{i}", (128,), np.float64)
    assert sum(v.nbytes for v in scratch._local.arrays.values()) <= 4096
    assert scratch.zeros("a", (128,), np.float64) is not a
    with pytest.raises(TypeError):
        scratch.zeros("d", (4,), "not a dtype")


def test_configs_cover_both_layouts():
    flat = {conv._Layout(n, length, k, stride, padding, dilation).flat
            for n, _, length, _, k, stride, padding, dilation, _ in CONFIGS}
    assert flat == {True, False}


def test_unread_nan_and_inf_stay_out_of_the_gradients():
    """A NaN or Inf that no kept output reads must not reach a gradient.

    The flat layout's thrown-away columns read such positions (and multiply
    them by a zero gradient, which gives NaN).
    """
    rng = np.random.default_rng(3)
    # stride 4 over length 10 with k=3: no window reads positions 3, 7, 8, 9
    n, c_in, length, c_out, k, stride, padding, dilation, groups = 2, 2, 10, 3, 3, 4, 0, 1, 1
    x = rng.normal(size=(n, c_in, length))
    w = rng.normal(size=(c_out, c_in, k))
    g = rng.normal(size=(n, c_out, 2))
    x[0, 1, 9] = np.nan
    x[1, 0, 8] = np.inf
    with np.errstate(invalid="ignore"):  # inf * 0 in the thrown-away columns, then redone
        gw = conv.conv1d_grad_weight(x, g, k, stride, padding, dilation, groups)
    np.testing.assert_allclose(gw, conv1d_grads(x, w, g, stride, padding, dilation, groups)[1],
                               rtol=1e-12)
    x = rng.normal(size=(n, c_in, length))
    w[1, 0, 2] = np.inf
    with np.errstate(invalid="ignore"):
        gx = conv.conv1d_grad_input(g, w, length, stride, padding, dilation, groups)
        gx_ref = conv1d_grads(x, w, g, stride, padding, dilation, groups)[0]
    np.testing.assert_array_equal(np.isnan(gx), np.isnan(gx_ref))
    np.testing.assert_allclose(gx[:, :, 3], 0)  # read by no window


@pytest.mark.parametrize("cfg", [
    (2, 4, 400, 3, 390, 1, 0, 1, 1),  # the flat layout would compute ~40x the columns
    (2, 3, 10, 2, 3, 10**6, 0, 1, 1),  # its segments would be a million positions long
])
def test_long_kernels_and_strides_allocate_what_the_output_needs(cfg, monkeypatch):
    monkeypatch.setattr(scratch._local, "arrays", None, raising=False)
    tracemalloc.start()
    try:
        _check(cfg, np.random.default_rng(4))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # the exact im2col matrix is at most 4 * 390 * 22 * 8 bytes (~270 kB); the
    # reference's loops take a few hundred kB more
    assert peak < 2**20, peak
