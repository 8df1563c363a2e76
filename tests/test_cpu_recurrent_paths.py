"""The cpu backend's fused LSTM and GRU layers on their two backward paths (the forward's
own buffers found again through ``out`` and ``cells``, or plain arrays from elsewhere), in
float32 against the float64 composite, with reused work arrays across shapes and threads;
each test with the C loops (fastnn_cpu.native, where they build) and the NumPy loops."""

import threading

import numpy as np
import pytest

rec = pytest.importorskip("fastnn_cpu.recurrent")
gru = pytest.importorskip("fastnn_cpu.recurrent_gru")
native = pytest.importorskip("fastnn_cpu.native")


@pytest.fixture(autouse=True, params=["C", "NumPy"])
def loops(request, monkeypatch):
    if request.param == "C":
        if native.library() is None:
            pytest.skip(f"no C loops here: {native.status()}")
    else:
        monkeypatch.setattr(native, "_LOADED", [(None, "off for a test")])
    return request.param


def _ops():
    from fastnn.api.device import as_device

    return as_device("cpu").ops


def _lstm_args(rng, t_len, n, size, hid, dtype):
    x = rng.uniform(-1, 1, (n, t_len, size)).transpose(1, 0, 2)  # time-major, strided
    h0, c0 = rng.uniform(-0.5, 0.5, (2, n, hid))
    w_ih = rng.uniform(-0.5, 0.5, (4 * hid, size))
    w_hh = rng.uniform(-0.5, 0.5, (4 * hid, hid))
    bias = rng.uniform(-0.5, 0.5, 4 * hid)
    return [a.astype(dtype) for a in (x, h0, c0, w_ih, w_hh, bias)]


def _gru_args(rng, t_len, n, size, hid, dtype):
    x = rng.uniform(-1, 1, (t_len, n, size))
    h0 = rng.uniform(-0.5, 0.5, (n, hid))
    w_ih = rng.uniform(-0.5, 0.5, (3 * hid, size))
    w_hh = rng.uniform(-0.5, 0.5, (3 * hid, hid))
    b_ih, b_hh = rng.uniform(-0.5, 0.5, (2, 3 * hid))
    return [a.astype(dtype) for a in (x, h0, w_ih, w_hh, b_ih, b_hh)]


def _reference(kind, args, grads):
    """Forward outputs and backward gradients of the core's composite in float64."""
    from fastnn.api import composite_recurrent

    ops = _ops()
    wide = [np.asarray(a, np.float64) for a in args]
    layer = getattr(composite_recurrent, f"{kind}_layer")
    backward = getattr(composite_recurrent, f"{kind}_layer_backward")
    outs = [np.asarray(o) for o in layer(ops, *wide)]
    keep = 5 if kind == "lstm" else 4
    back = backward(ops, *wide[:keep], *outs, *[np.asarray(g, np.float64) for g in grads],
                    True)
    return outs, [np.asarray(b) for b in back]


def _run(kind, args, grads, copy_outputs=False):
    module = rec if kind == "lstm" else gru
    layer = getattr(module, f"{kind}_layer")
    backward = getattr(module, f"{kind}_layer_backward")
    outs = layer(*args)
    given = [np.array(o) for o in outs] if copy_outputs else list(outs)
    keep = 5 if kind == "lstm" else 4
    return outs, backward(*args[:keep], *given, *grads, True)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("shape", [(9, 4, 3, 5), (1, 1, 2, 3), (3, 2, 1, 1)])
@pytest.mark.parametrize("copy_outputs", [False, True])
def test_float32_layers_match_the_float64_composite(kind, shape, copy_outputs):
    rng = np.random.default_rng(sum(shape))
    t_len, n, _, hid = shape
    make = _lstm_args if kind == "lstm" else _gru_args
    args = make(rng, *shape, np.float32)
    grads = [rng.normal(size=(t_len, n, hid)).astype(np.float32)]
    if kind == "lstm":
        grads.append(rng.normal(size=(n, hid)).astype(np.float32))
    outs, back = _run(kind, args, grads, copy_outputs)
    want_outs, want_back = _reference(kind, args, grads)
    for got, want in zip(outs, want_outs):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
    assert len(back) == len(want_back)
    for got, want in zip(back, want_back):
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_gradients_do_not_share_the_reused_work_arrays(kind):
    """A second backward (other shapes, then the same) leaves the first one's results."""
    rng = np.random.default_rng(3)
    make = _lstm_args if kind == "lstm" else _gru_args

    def one(shape):
        args = make(rng, *shape, np.float64)
        t_len, n, _, hid = shape
        grads = [rng.normal(size=(t_len, n, hid))] + (
            [rng.normal(size=(n, hid))] if kind == "lstm" else [])
        return args, grads

    args, grads = one((6, 3, 2, 4))
    _, first = _run(kind, args, grads)
    kept = [np.array(b) for b in first]
    _run(kind, *one((5, 2, 3, 7)))
    _run(kind, *one((6, 3, 2, 4)))
    for a, b in zip(first, kept):
        np.testing.assert_array_equal(a, b)
    _, want = _reference(kind, args, grads)
    for a, b in zip(first, want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_threads_get_their_own_work_arrays():
    """Threads running the same layers at once get what one thread gets alone."""
    rng = np.random.default_rng(5)
    cases = []
    for kind, shape in (("lstm", (40, 3, 2, 4)), ("lstm", (40, 3, 2, 4)), ("gru", (40, 2, 3, 5)),
                        ("gru", (40, 2, 3, 5))):
        make = _lstm_args if kind == "lstm" else _gru_args
        args = make(rng, *shape, np.float64)
        grads = [rng.normal(size=(shape[0], shape[1], shape[3]))] + (
            [rng.normal(size=(shape[1], shape[3]))] if kind == "lstm" else [])
        cases.append((kind, args, grads))
    alone = [_run(*case)[1] for case in cases]
    results, errors = [None] * len(cases), []

    def work(k):
        try:
            for _ in range(20):
                results[k] = _run(*cases[k])[1]
                for a, b in zip(results[k], alone[k]):
                    np.testing.assert_array_equal(a, b)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(cases))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
