"""The composites of the fused recurrent-layer hooks (LSTM and GRU over a sequence),
written with primitives: the input projection of every step is one matmul, then one
matmul and a few elementwise ops per step; the backward pass walks the steps in reverse
and makes the weight gradients one matmul each over all steps."""

from __future__ import annotations


def _step(ops, a, t):
    """a[t] of a (T, N, F) array, as (N, F)."""
    _, n, f = a.shape
    return ops.reshape(ops.slice(a, (t, 0, 0), (t + 1, n, f), (1, 1, 1)), (n, f))


def _cols(ops, a, start, stop):
    n = a.shape[0]
    return ops.slice(a, (0, start), (n, stop), (1, 1))


def _one_minus(ops, a):
    return ops.add(ops.neg(a), 1.0)


def _zeros_like(ops, a):
    return ops.where(ops.greater(a, a), a, 0.0)  # greater(a, a) is False, even for NaN


def _stack(ops, steps):
    """(N, F) arrays as one (T, N, F)."""
    return ops.cat([ops.reshape(s, (1,) + tuple(s.shape)) for s in steps], 0)


def _projection(ops, x, w, bias):
    t_len, n, size = x.shape
    flat = ops.matmul(ops.reshape(x, (t_len * n, size)), ops.transpose(w, (1, 0)))
    return ops.reshape(ops.add(flat, bias), (t_len, n, w.shape[0]))


def _previous(ops, h0, out):
    """(T * N, H): the state each step starts from (h0, then out[:-1])."""
    t_len, n, hid = out.shape
    earlier = ops.slice(out, (0, 0, 0), (t_len - 1, n, hid), (1, 1, 1))
    return ops.reshape(ops.cat([ops.reshape(h0, (1, n, hid)), earlier], 0), (t_len * n, hid))


def _weight_grads(ops, d, inputs, w):
    """(d input, d w, d bias) for a projection inputs (T*N, F) @ w^T with gradient d; d
    input is None where w is None (not asked for)."""
    dt = ops.transpose(d, (1, 0))
    d_in = None if w is None else ops.matmul(d, w)
    return d_in, ops.matmul(dt, inputs), ops.sum(d, (0,), False)


def lstm_layer(ops, x, h0, c0, w_ih, w_hh, bias):
    hid = h0.shape[1]
    xp = _projection(ops, x, w_ih, bias)
    w_t = ops.transpose(w_hh, (1, 0))
    h, c = h0, c0
    outs, gates, cells = [], [], []
    for t in range(x.shape[0]):
        a = ops.add(_step(ops, xp, t), ops.matmul(h, w_t))
        i, f, o = (ops.sigmoid(_cols(ops, a, k * hid, (k + 1) * hid)) for k in (0, 1, 3))
        g = ops.tanh(_cols(ops, a, 2 * hid, 3 * hid))
        c = ops.add(ops.mul(f, c), ops.mul(i, g))
        h = ops.mul(o, ops.tanh(c))
        outs.append(h)
        gates.append(ops.cat([i, f, g, o], 1))
        cells.append(c)
    return _stack(ops, outs), _stack(ops, gates), _stack(ops, cells)


def lstm_layer_backward(ops, x, h0, c0, w_ih, w_hh, out, gates, cells, grad_out, grad_c,
                        needs_dx):
    t_len, n, size = x.shape
    hid = h0.shape[1]
    dh, dc = _zeros_like(ops, h0), grad_c
    das = [None] * t_len
    for t in reversed(range(t_len)):
        act = _step(ops, gates, t)
        i, f, g, o = (_cols(ops, act, k * hid, (k + 1) * hid) for k in range(4))
        c_prev = _step(ops, cells, t - 1) if t else c0
        dh = ops.add(dh, _step(ops, grad_out, t))
        tc = ops.tanh(_step(ops, cells, t))
        dc = ops.add(dc, ops.mul(ops.mul(dh, o), _one_minus(ops, ops.mul(tc, tc))))
        das[t] = ops.cat([ops.mul(ops.mul(dc, g), ops.mul(i, _one_minus(ops, i))),
                          ops.mul(ops.mul(dc, c_prev), ops.mul(f, _one_minus(ops, f))),
                          ops.mul(ops.mul(dc, i), _one_minus(ops, ops.mul(g, g))),
                          ops.mul(ops.mul(dh, tc), ops.mul(o, _one_minus(ops, o)))], 1)
        dc = ops.mul(dc, f)
        dh = ops.matmul(das[t], w_hh)
    flat = ops.reshape(_stack(ops, das), (t_len * n, 4 * hid))
    dx, dw_ih, dbias = _weight_grads(ops, flat, ops.reshape(x, (t_len * n, size)),
                                     w_ih if needs_dx else None)
    _, dw_hh, _ = _weight_grads(ops, flat, _previous(ops, h0, out), None)
    return _input_grad(ops, dx, x.shape), dh, dc, dw_ih, dw_hh, dbias


def gru_layer(ops, x, h0, w_ih, w_hh, b_ih, b_hh):
    hid = h0.shape[1]
    xp = _projection(ops, x, w_ih, b_ih)
    w_t = ops.transpose(w_hh, (1, 0))
    h = h0
    outs, saved = [], []
    for t in range(x.shape[0]):
        p = _step(ops, xp, t)
        q = ops.add(ops.matmul(h, w_t), b_hh)
        rz = ops.sigmoid(ops.add(_cols(ops, p, 0, 2 * hid), _cols(ops, q, 0, 2 * hid)))
        r, z = _cols(ops, rz, 0, hid), _cols(ops, rz, hid, 2 * hid)
        qn = _cols(ops, q, 2 * hid, 3 * hid)
        nn = ops.tanh(ops.add(_cols(ops, p, 2 * hid, 3 * hid), ops.mul(r, qn)))
        h = ops.add(nn, ops.mul(z, ops.sub(h, nn)))
        outs.append(h)
        saved.append(ops.cat([r, z, nn, qn], 1))
    return _stack(ops, outs), _stack(ops, saved)


def gru_layer_backward(ops, x, h0, w_ih, w_hh, out, saved, grad_out, needs_dx):
    t_len, n, size = x.shape
    hid = h0.shape[1]
    dh = _zeros_like(ops, h0)
    dps, dqs = [None] * t_len, [None] * t_len
    for t in reversed(range(t_len)):
        s = _step(ops, saved, t)
        r, z, nn, qn = (_cols(ops, s, k * hid, (k + 1) * hid) for k in range(4))
        h_prev = _step(ops, out, t - 1) if t else h0
        dh = ops.add(dh, _step(ops, grad_out, t))
        dan = ops.mul(ops.mul(dh, _one_minus(ops, z)), _one_minus(ops, ops.mul(nn, nn)))
        dar = ops.mul(ops.mul(dan, qn), ops.mul(r, _one_minus(ops, r)))
        daz = ops.mul(ops.mul(dh, ops.sub(h_prev, nn)), ops.mul(z, _one_minus(ops, z)))
        dps[t] = ops.cat([dar, daz, dan], 1)
        dqs[t] = ops.cat([dar, daz, ops.mul(dan, r)], 1)
        dh = ops.add(ops.mul(dh, z), ops.matmul(dqs[t], w_hh))
    dp = ops.reshape(_stack(ops, dps), (t_len * n, 3 * hid))
    dq = ops.reshape(_stack(ops, dqs), (t_len * n, 3 * hid))
    dx, dw_ih, db_ih = _weight_grads(ops, dp, ops.reshape(x, (t_len * n, size)),
                                     w_ih if needs_dx else None)
    _, dw_hh, db_hh = _weight_grads(ops, dq, _previous(ops, h0, out), None)
    return _input_grad(ops, dx, x.shape), dh, dw_ih, dw_hh, db_ih, db_hh


def _input_grad(ops, dx, shape):
    """dx (T N, I) as (T, N, I); None stays None (no input gradient was asked for)."""
    return None if dx is None else ops.reshape(dx, shape)
