"""The fused LSTM/GRU kernels run a sequence one launch per step, as one work-group launch
with barriers between steps (GPUs), or (the LSTM and the GRU on CPU devices) in one
work-item: every way against the cpu backend's hooks, forward and backward, at hidden
sizes that take 8- and 1-lane vectors."""

import numpy as np
import pytest


def _inputs(rng, kind, t_len, n, size, hid):
    gates = 4 if kind == "lstm" else 3
    s = 1 / np.sqrt(hid)
    x = rng.uniform(-1, 1, (t_len, n, size))
    h0 = [rng.uniform(-0.5, 0.5, (n, hid)) for _ in range(2 if kind == "lstm" else 1)]
    w = [rng.uniform(-s, s, (gates * hid, size)), rng.uniform(-s, s, (gates * hid, hid))]
    b = [rng.uniform(-s, s, gates * hid) for _ in range(1 if kind == "lstm" else 2)]
    return [x, *h0, *w, *b]


def _run(kind, args, grad, grad_c, hooks, put, host):
    fwd = getattr(hooks, f"{kind}_layer")(*[put(a) for a in args])
    if kind == "lstm":
        x, h0, c0, w_ih, w_hh, _ = args
        back = hooks.lstm_layer_backward(*[put(a) for a in (x, h0, c0, w_ih, w_hh)], *fwd,
                                         put(grad), put(grad_c), True)
    else:
        x, h0, w_ih, w_hh, _, _ = args
        back = hooks.gru_layer_backward(*[put(a) for a in (x, h0, w_ih, w_hh)], *fwd,
                                        put(grad), True)
    return [host(a) for a in (*fwd, *back)]


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("hid,dtype,n", [(8, np.float32, 3), (3, np.float32, 3),
                                         (8, np.float64, 3), (24, np.float32, 6),
                                         (16, np.float64, 9)])
@pytest.mark.parametrize("way", ["step", "group", "serial"])
def test_fused_recurrent_matches_the_cpu_backend(ocl, monkeypatch, kind, hid, dtype, n, way):
    """float64 at 8 lanes is the case that once built no kernels (8 doubles: 64 bytes); 6
    and 9 batch rows take the serial LSTM's blocks of 4 rows and a remainder, 24 hidden
    units (3 vectors of 8) its pairs of vectors and a last single one."""
    import fastnn_cpu
    from fastnn_opencl.misc import from_numpy, to_numpy

    from fastnn.api.registry import hook_namespace

    cpu = hook_namespace(fastnn_cpu)  # (its LSTM and GRU hooks live in two modules)

    monkeypatch.setenv("FASTNN_OPENCL_RNN", "" if way == "serial" else way)
    rng = np.random.default_rng(hid)
    t_len = 5
    args = [a.astype(dtype) for a in _inputs(rng, kind, t_len, n, 4, hid)]
    grad = rng.normal(size=(t_len, n, hid)).astype(dtype)
    grad_c = rng.normal(size=(n, hid)).astype(dtype)
    got = _run(kind, args, grad, grad_c, ocl, lambda a: from_numpy(a, 0), to_numpy)
    want = _run(kind, args, grad, grad_c, cpu, np.asarray, np.asarray)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5, err_msg=f"output {i}")
