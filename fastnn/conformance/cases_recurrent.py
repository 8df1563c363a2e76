"""Conformance cases of the fused recurrent-layer hooks, at the hook: ``lstm_layer`` and
``gru_layer`` against a float64 reference of PyTorch's equations, their backward hooks
against central finite differences of that reference, and both against the core's
composites (fastnn.api.composite_recurrent) on the same device. Inputs include a
batch-first sequence seen time-major (a transposed, strided x), a broadcast gradient, one
step, a batch of one and one input feature; a backward hook asked for no input gradient
(``needs_dx`` False) returns None for it and the same other gradients."""

from __future__ import annotations

import numpy as np

from fastnn.api import composite_recurrent
from fastnn.conformance.case import Case, register
from fastnn.conformance.compare import GRADIENT, assert_close

SHAPES = [(5, 3, 4, 2), (1, 2, 3, 3), (4, 1, 1, 5), (3, 2, 3, 2)]  # (T, N, I, H)


def _sig(a):
    return 1.0 / (1.0 + np.exp(-a))


def lstm_ref(x, h0, c0, w_ih, w_hh, bias):
    hid = h0.shape[1]
    h, c, outs, cells = h0, c0, [], []
    for xt in x:
        a = xt @ w_ih.T + h @ w_hh.T + bias
        i, f, g, o = (a[:, k * hid:(k + 1) * hid] for k in range(4))
        c = _sig(f) * c + _sig(i) * np.tanh(g)
        h = _sig(o) * np.tanh(c)
        outs.append(h)
        cells.append(c)
    return np.stack(outs), np.stack(cells)


def gru_ref(x, h0, w_ih, w_hh, b_ih, b_hh):
    hid = h0.shape[1]
    h, outs = h0, []
    for xt in x:
        p, q = xt @ w_ih.T + b_ih, h @ w_hh.T + b_hh
        r = _sig(p[:, :hid] + q[:, :hid])
        z = _sig(p[:, hid:2 * hid] + q[:, hid:2 * hid])
        n = np.tanh(p[:, 2 * hid:] + r * q[:, 2 * hid:])
        h = (1 - z) * n + z * h
        outs.append(h)
    return np.stack(outs)


def _numeric_grads(loss, args, step=1e-6):
    grads = []
    for a in args:
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            keep = a[idx]
            a[idx] = keep + step
            up = loss()
            a[idx] = keep - step
            down = loss()
            a[idx] = keep
            g[idx] = (up - down) / (2 * step)
        grads.append(g)
    return grads


def _inputs(rng, shape, kind, dtype):
    t_len, n, size, hid = shape
    gates = 4 if kind == "lstm" else 3
    scale = 1 / np.sqrt(hid)

    def draw(*dims, s=1.0):
        return (rng.uniform(-s, s, dims)).astype(dtype).astype(np.float64)

    x = draw(t_len, n, size)
    weights = [draw(gates * hid, size, s=scale), draw(gates * hid, hid, s=scale)]
    states = [draw(n, hid, s=0.5)] + ([draw(n, hid, s=0.5)] if kind == "lstm" else [])
    biases = [draw(gates * hid, s=scale)] if kind == "lstm" else [
        draw(gates * hid, s=scale), draw(gates * hid, s=scale)]
    return x, states, weights, biases


def _check(device, dtype, rng, kind, part):
    ops = device.ops
    rtol, atol = GRADIENT[dtype]

    def put(a):
        return ops.from_numpy(np.ascontiguousarray(a, dtype=dtype), device.index)

    def host(a):
        return np.asarray(ops.to_numpy(a), dtype=np.float64)

    for shape in SHAPES:
        for layout in ("contiguous", "batch first", "broadcast grad"):
            x, states, weights, biases = _inputs(rng, shape, kind, dtype)
            dx = (ops.transpose(put(x.transpose(1, 0, 2)), (1, 0, 2))
                  if layout == "batch first" else put(x))
            args = [dx] + [put(s) for s in states] + [put(w) for w in weights] + \
                [put(b) for b in biases]
            host_args = [x] + states + weights + biases
            what = f"{kind}_layer {shape} {layout}, {dtype}"
            hook = getattr(ops, f"{kind}_layer")
            composed = getattr(composite_recurrent, f"{kind}_layer")
            got, again = hook(*args), composed(ops, *args)
            ref = lstm_ref(*host_args) if kind == "lstm" else gru_ref(*host_args)
            ref = ref if kind == "lstm" else (ref,)
            for k, want in enumerate(ref):
                j = 0 if k == 0 else 2  # out, then (LSTM) the cells
                if part == "forward":
                    assert_close(host(got[j]), want.astype(dtype), rtol, atol, what)
                    assert_close(host(got[j]), host(again[j]).astype(dtype), rtol, atol,
                                 what + " vs the composite")
            for j in range(len(got)):
                if part == "forward":
                    assert_close(host(got[j]), host(again[j]).astype(dtype), rtol, atol,
                                 f"{what}: output {j} vs the composite")
            if part != "backward":
                continue
            g = rng.normal(size=(shape[0], shape[1], shape[3]))
            if layout == "broadcast grad":
                g[:] = g.flat[0]
            g = g.astype(dtype).astype(np.float64)
            gc = rng.normal(size=(shape[1], shape[3])).astype(dtype).astype(np.float64)
            grad = (ops.broadcast_to(ops.reshape(put(g.flat[:1]), (1, 1, 1)), g.shape)
                    if layout == "broadcast grad" else put(g))
            if kind == "lstm":
                back = (*args[:5], *got, grad, put(gc))

                def loss(host_args=host_args, g=g, gc=gc):
                    out, cells = lstm_ref(*host_args)
                    return float((out * g).sum() + (cells[-1] * gc).sum())
            else:
                back = (*args[:4], *got, grad)

                def loss(host_args=host_args, g=g):
                    return float((gru_ref(*host_args) * g).sum())

            want = _numeric_grads(loss, host_args)
            hook_b = getattr(ops, f"{kind}_layer_backward")(*back, True)
            comp_b = getattr(composite_recurrent, f"{kind}_layer_backward")(ops, *back, True)
            slack = max(atol, 1e-6 if dtype == "float64" else atol)
            for j, (a, b, w) in enumerate(zip(hook_b, comp_b, want)):
                name = f"{what} backward: gradient {j}"
                assert_close(host(a), w.astype(dtype), rtol, slack, name)
                assert_close(host(a), host(b).astype(dtype), rtol, slack,
                             name + " vs the composite")
            no_dx = getattr(ops, f"{kind}_layer_backward")(*back, False)
            assert no_dx[0] is None, f"{what} backward: needs_dx=False returned a dx"
            for j, (a, b) in enumerate(zip(no_dx[1:], hook_b[1:]), 1):
                assert_close(host(a), host(b), rtol, slack,
                             f"{what} backward without dx: gradient {j}")


for _kind in ("lstm", "gru"):
    for _part, _name in (("forward", f"{_kind}_layer"), ("backward", f"{_kind}_layer_backward")):
        register(Case(_name, check=lambda device, dtype, rng, k=_kind, p=_part:
                      _check(device, dtype, rng, k, p), tol=dict(GRADIENT)))
