"""Conformance cases of the optional fused hooks (softmax family, rms_div, bias_act, and
the fused backward passes of bias_act and softmax cross-entropy).

A backend without a fused hook runs the core's composite default, so these
cases hold for every backend. The optimizer steps live in cases_io.py.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fastnn.functional as F
from fastnn.conformance.case import Case, Sample, magnitudes, register
from fastnn.conformance.cases_elementwise import (
    _dgelu,
    _dsilu,
    _ref_gelu,
    _ref_sigmoid,
    _ref_silu,
    _ref_softplus,
)
from fastnn.conformance.compare import (
    ACCUMULATING,
    GRADIENT,
    TRANSCENDENTAL,
    Mismatch,
    assert_close,
)

NAN = float("nan")
SOFTMAX_SHAPES = [((3, 5), -1), ((3, 5), 0), ((2, 3, 4), 1), ((4, 1), -1), ((0, 5), -1), ((7,), 0)]


def _softmax_ref(x, axis):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=axis, keepdims=True)


def _log_softmax_ref(x, axis):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def _softmax_grad(x, grad_out, axis):
    s = _softmax_ref(x, axis)
    return (s * (grad_out - (grad_out * s).sum(axis=axis, keepdims=True)),)


def _log_softmax_grad(x, grad_out, axis):
    return (grad_out - _softmax_ref(x, axis) * grad_out.sum(axis=axis, keepdims=True),)


def _softmax_family(name, run, ref, grad_ref):
    def samples(rng):
        return [Sample(f"shape {s} axis={a}", (rng.normal(scale=2.0, size=s),), {"axis": a})
                for s, a in SOFTMAX_SHAPES]

    def edges(rng, dtype):
        big = magnitudes(dtype)["large"]
        return [Sample("large logits (needs the max shift)",
                       (np.stack([big[:3], big[3:]]),), {"axis": -1}),
                Sample("a NaN poisons its row only",
                       (np.array([[1.0, NAN, 2.0], [0.0, 1.0, 2.0]]),), {"axis": -1})]

    def random(draw):
        shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
        axis = draw(st.integers(-len(shape), len(shape) - 1))
        rng = np.random.default_rng(draw(st.integers(0, 2**31)))
        return Sample(f"random shape {shape} axis={axis}",
                      (rng.normal(scale=3.0, size=shape),), {"axis": axis})

    register(Case(name, run=run, ref=ref, grad_ref=grad_ref, diff_args=(0,), samples=samples,
                  edges=edges, random=random, tol=dict(TRANSCENDENTAL)))


_softmax_family("softmax", lambda x, axis: F.softmax(x, axis), _softmax_ref, _softmax_grad)
_softmax_family("log_softmax", lambda x, axis: F.log_softmax(x, axis), _log_softmax_ref,
                _log_softmax_grad)


def _ce_ref(logits, targets):
    return -_log_softmax_ref(logits, 1)[np.arange(len(targets)), targets]


def _ce_grad(logits, targets, grad_out):
    probs = _softmax_ref(logits, 1)
    return (probs - np.eye(logits.shape[1])[targets]) * grad_out[:, None], None


def _ce_sample(rng, n, c, label=None, scale=2.0):
    return Sample(label or f"logits ({n}, {c})",
                  (rng.normal(scale=scale, size=(n, c)), rng.integers(0, c, n).astype(np.int64)))


def _ce_edges(rng, dtype):
    big = magnitudes(dtype)["large"]
    logits = np.stack([big[:3], big[3:], [1.0, NAN, 0.0]])
    return [Sample("large logits and a NaN row", (logits, np.array([0, 2, 1], dtype=np.int64)))]


def _ce_random(draw):
    n, c = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    return _ce_sample(np.random.default_rng(draw(st.integers(0, 2**31))), n, c,
                      f"random logits ({n}, {c})")


register(Case("softmax_cross_entropy",
              run=lambda logits, targets: F.cross_entropy(logits, targets, reduction="none"),
              ref=_ce_ref, grad_ref=_ce_grad, diff_args=(0,),
              samples=lambda rng: [_ce_sample(rng, n, c) for n, c in [(4, 5), (1, 3), (6, 1),
                                                                     (0, 3)]],
              edges=_ce_edges, random=_ce_random, tol=dict(TRANSCENDENTAL)))


def _ce_loss_ref(logits, targets, ignore_index, reduction="none", label_smoothing=0.0):
    """PyTorch's cross_entropy without weights, in float64: (1 - s) nll + s / C * sum of
    -log p over the classes per row, 0 on the ignored rows, reduced."""
    keep = targets != ignore_index
    safe = np.where(keep, targets, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        per = _ce_ref(logits, safe)
        if label_smoothing:
            spread = -_log_softmax_ref(logits, 1).sum(axis=1)
            per = (1 - label_smoothing) * per + label_smoothing / logits.shape[1] * spread
        per = np.where(keep, per, 0.0)
        if reduction == "none":
            return per
        return per.sum() / (keep.sum() if reduction == "mean" else 1.0)


def _ce_loss_row_grads(targets, grad_out, ignore_index, reduction):
    """The gradient each row's loss gets (0 on the ignored rows)."""
    keep = targets != ignore_index
    with np.errstate(invalid="ignore", divide="ignore"):
        if reduction == "mean":
            grad_out = grad_out / keep.sum()
        return np.where(keep, np.broadcast_to(grad_out, keep.shape), 0.0)


def _ce_loss_grad_rows(probs, safe, rows, label_smoothing):
    """(p - (1 - s) one_hot - s / C) * the rows' gradients."""
    c = probs.shape[1]
    return (probs - (1 - label_smoothing) * np.eye(c)[safe] - label_smoothing / c) * rows[:, None]


def _ce_loss_grad(logits, targets, grad_out, ignore_index, reduction="none",
                  label_smoothing=0.0):
    keep = targets != ignore_index
    rows = _ce_loss_row_grads(targets, grad_out, ignore_index, reduction)
    return _ce_loss_grad_rows(_softmax_ref(logits, 1), np.where(keep, targets, 0), rows,
                              label_smoothing), None


def _ce_loss_sample(rng, n, c, ignore_index, reduction, smoothing=0.0, every=3, label=None):
    sample = _ce_sample(rng, n, c, label)
    targets = sample.args[1]
    targets[::every] = ignore_index  # (a positive ignore_index may also be a class)
    return Sample(sample.label + f", ignore_index={ignore_index}, {reduction}, "
                  f"label_smoothing={smoothing}", sample.args,
                  {"ignore_index": ignore_index, "reduction": reduction,
                   "label_smoothing": smoothing})


def _ce_loss_edges(rng, dtype):
    (edge,) = _ce_edges(rng, dtype)
    logits, targets = edge.args
    ignored_nan = targets.copy()
    ignored_nan[2] = -100  # the NaN row ignored: its loss is 0, its gradient NaN
    every = np.full(3, 7, np.int64)

    def sample(label, targets, ignore_index, reduction, smoothing=0.0):
        return Sample(label, (logits, targets), {"ignore_index": ignore_index,
                                                 "reduction": reduction,
                                                 "label_smoothing": smoothing})

    return [sample("large logits and a NaN row", targets, 0, "none"),
            sample("large logits and a NaN row, smoothed", targets, 0, "none", 0.2),
            sample("the NaN row ignored", ignored_nan, -100, "mean"),
            sample("the NaN row ignored, smoothed", ignored_nan, -100, "mean", 0.3),
            sample("every row ignored (a NaN mean, as PyTorch)", every, 7, "mean"),
            sample("every row ignored, summed and smoothed", every, 7, "sum", 0.1)]


def _ce_loss_random(draw):
    n, c = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    ignore_index = draw(st.sampled_from([-100, -1, 0, c - 1]))
    every = draw(st.integers(2, 4))
    reduction = draw(st.sampled_from(["none", "sum", "mean"]))
    smoothing = draw(st.sampled_from([0.0, 0.1, 0.5, 1.0]))
    return _ce_loss_sample(np.random.default_rng(draw(st.integers(0, 2**31))), n, c,
                           ignore_index, reduction, smoothing, every,
                           f"random logits ({n}, {c})")


register(Case("cross_entropy_loss",
              run=lambda logits, targets, ignore_index, reduction, label_smoothing:
              F.cross_entropy(logits, targets, ignore_index=ignore_index, reduction=reduction,
                              label_smoothing=label_smoothing),
              ref=_ce_loss_ref, grad_ref=_ce_loss_grad, diff_args=(0,),
              samples=lambda rng: [_ce_loss_sample(rng, n, c, ii, r, ls) for n, c, ii, r, ls in
                                   [(4, 5, -100, "none", 0.0), (6, 3, 1, "mean", 0.0),
                                    (1, 3, -100, "sum", 0.0), (0, 3, -100, "none", 0.1),
                                    (40, 300, -100, "mean", 0.0), (9, 4, 3, "sum", 0.0),
                                    (5, 4, -100, "none", 0.1), (7, 6, 2, "mean", 0.25),
                                    (3, 200, -100, "sum", 1.0)]],
              edges=_ce_loss_edges, random=_ce_loss_random, tol=dict(ACCUMULATING)))


def _rms_ref(x, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)


def _rms_grad(x, grad_out, eps):
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    y = x * r
    return (r * (grad_out - y * np.mean(grad_out * y, axis=-1, keepdims=True)),)


def _rms_magnitudes(dtype):
    # NOTE: the contract squares x in the input dtype, so |x| must stay below
    # sqrt(max / n) for mean(x**2) to be finite; the reference only defines that
    big = float(np.finfo(dtype).max)
    values = magnitudes(dtype)
    large = np.array([100.0, big**0.25, (big / 8) ** 0.5])
    values["large"] = np.concatenate([large, -large])
    return values


def _rms_random(draw):
    # NOTE: with one feature y = x / sqrt(x**2 + eps) is ~sign(x) and the gradient
    # eps / (x**2 + eps)**1.5 is all cancellation: hopeless in float16, so the
    # random shapes have >= 2 features (the fixed samples still cover (4, 1)).
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    shape = shape[:-1] + (max(shape[-1], 2),)
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    return Sample(f"random shape {shape}", (rng.normal(size=shape),), {"eps": 1e-6})


register(Case("rms_div", run=lambda x, eps: F.rms_div(x, eps), ref=_rms_ref, grad_ref=_rms_grad,
              diff_args=(0,), random=_rms_random, tol=dict(ACCUMULATING),
              samples=lambda rng: [Sample(f"shape {s} eps={e}", (rng.normal(size=s),), {"eps": e})
                                   for s, e in [((3, 5), 1e-6), ((2, 3, 4), 1e-6), ((4, 1), 0.1),
                                                ((0, 4), 1e-6), ((6,), 1e-6)]],
              edges=lambda rng, dtype: [
                  Sample(f"{k} magnitudes", (v.reshape(2, 3),), {"eps": 1e-6})
                  for k, v in _rms_magnitudes(dtype).items()] + [
                  Sample("a NaN poisons its row only", (np.array([[1.0, NAN], [1.0, 2.0]]),),
                         {"eps": 1e-6})]))


# (activation, its derivative) for bias_act; z = x + bias
ACTIVATIONS = {
    "identity": (lambda z, s: z, lambda z, s: np.ones_like(z)),
    "relu": (lambda z, s: np.maximum(z, 0.0), lambda z, s: np.where(z <= 0, 0.0, 1.0)),
    "leaky_relu": (lambda z, s: np.where(z > 0, z, s * z), lambda z, s: np.where(z > 0, 1.0, s)),
    "sigmoid": (lambda z, s: _ref_sigmoid(z), lambda z, s: _ref_sigmoid(z) * (1 - _ref_sigmoid(z))),
    "tanh": (lambda z, s: np.tanh(z), lambda z, s: 1.0 - np.tanh(z) ** 2),
    "silu": (lambda z, s: _ref_silu(z), lambda z, s: _dsilu(z)),
    "gelu": (lambda z, s: _ref_gelu(z), lambda z, s: _dgelu(z)),
    "softplus": (lambda z, s: _ref_softplus(z), lambda z, s: _ref_sigmoid(z)),
}


def _bias_act_ref(x, bias, kind, slope):
    with np.errstate(all="ignore"):
        return ACTIVATIONS[kind][0](x + bias, slope)


def _bias_act_grad(x, bias, grad_out, kind, slope):
    dz = grad_out * ACTIVATIONS[kind][1](x + bias, slope)
    return dz, dz.reshape(-1, bias.shape[0]).sum(axis=0)


def _bias_act_inputs(rng, shape):
    # keep z = x + bias away from the relu kink at 0
    x = rng.uniform(0.3, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    return x, np.zeros(shape[-1]) + rng.uniform(-0.1, 0.1, size=shape[-1])


def _bias_act_samples(rng):
    out = []
    for kind in ACTIVATIONS:
        for shape in [(3, 4), (2, 2, 3), (0, 4)]:
            out.append(Sample(f"{kind} shape {shape}", _bias_act_inputs(rng, shape),
                              {"kind": kind, "slope": 0.1}))
    return out


def _bias_act_edges(rng, dtype):
    out = []
    for kind in ACTIVATIONS:
        for label, values in magnitudes(dtype).items():
            out.append(Sample(f"{kind} {label} magnitudes", (values.reshape(2, 3), np.zeros(3)),
                              {"kind": kind, "slope": 0.1}))
        out.append(Sample(f"{kind} NaN", (np.array([[NAN, 1.0]]), np.zeros(2)),
                          {"kind": kind, "slope": 0.1}))
    return out


def _bias_act_random(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    kind = draw(st.sampled_from(sorted(ACTIVATIONS)))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    return Sample(f"random {kind} shape {shape}", _bias_act_inputs(rng, shape),
                  {"kind": kind, "slope": 0.1})


register(Case("bias_act", run=lambda x, bias, kind, slope: F.bias_act(x, bias, kind, slope),
              ref=_bias_act_ref, grad_ref=_bias_act_grad, diff_args=(0, 1),
              samples=_bias_act_samples, edges=_bias_act_edges, random=_bias_act_random,
              tol=dict(TRANSCENDENTAL)))


# ---------------------------------------------------------------- fused backward hooks
# Custom cases: the tape reaches these hooks through the bias_act and
# softmax_cross_entropy cases above; here each is called directly, on layouts
# the tape rarely produces (a transposed or stride-0 grad, many rows, wide rows)
# where a backend's kernel may switch paths.


def _sum_bound(dz, dtype):
    """Error allowed in a sum over the rows of ``dz``: a few ulp per term summed."""
    eps = float(np.finfo(dtype).eps)
    return 8 * eps * np.abs(dz).reshape(-1, dz.shape[-1]).sum(axis=0)


def _check_bias_act_backward(device, dtype, rng):
    ops = device.ops
    rtol, atol = GRADIENT[dtype]

    def put(a):
        return ops.from_numpy(np.ascontiguousarray(a, dtype=dtype), device.index)

    shapes = [(3, 4), (2, 2, 3), (5,), (0, 4), (37, 70), (9, 1)]
    plan = [(kind, shape, False) for kind in ACTIVATIONS for shape in shapes]
    plan += [("relu", (20000, 3), False), ("identity", (3000, 40), False),
             ("relu", (6, 33), True), ("gelu", (6, 33), True)]
    for kind, shape, transposed_grad in plan:
        x, bias = (a.astype(dtype).astype(np.float64) for a in _bias_act_inputs(rng, shape))
        g = rng.normal(size=shape).astype(dtype).astype(np.float64)
        dx, db = put(x), put(bias)
        out = ops.bias_act(dx, db, kind, 0.1)
        grad = ops.transpose(put(g.T), (1, 0)) if transposed_grad else put(g)
        got_dz, got_db = ops.bias_act_backward(dx, db, out, grad, kind, 0.1)
        with np.errstate(all="ignore"):
            want_dz = g * ACTIVATIONS[kind][1](x + bias, 0.1)
        want_db = want_dz.reshape(-1, shape[-1]).sum(axis=0)
        what = f"bias_act_backward {kind}, {dtype}, shape {shape}" + (
            ", transposed grad" if transposed_grad else "")
        assert_close(ops.to_numpy(got_dz), want_dz.astype(dtype), rtol, atol, what + ": dz")
        assert_close(ops.to_numpy(got_db), want_db.astype(dtype), rtol,
                     atol + _sum_bound(want_dz, dtype), what + ": dbias")


def _grad_rows(ops, put, rng, n, dtype, kind):
    """(values, device array) of a loss's gradient per row: "rows" (N,), "broadcast
    scalar" one value broadcast to (N,) with stride 0, or "0-d" (a reduced loss's)."""
    g = rng.normal(size=() if kind == "0-d" else n).astype(dtype).astype(np.float64)
    if kind == "0-d":
        return g, ops.reshape(put(g), ())  # (NumPy makes a 0-d array contiguous as (1,))
    if kind == "broadcast scalar":
        g[:] = g[0] if n else 0.0
        return g, ops.broadcast_to(ops.reshape(put(g[:1]), ()), (n,))
    return g, put(g)


def _check_xent_backward(device, dtype, rng):
    ops = device.ops
    rtol, atol = GRADIENT[dtype]

    def put(a, cast=dtype):
        return ops.from_numpy(np.ascontiguousarray(a, dtype=cast), device.index)

    for n, c, grad_kind in [(4, 5, "rows"), (1, 3, "rows"), (6, 1, "rows"), (0, 3, "rows"),
                            (33, 700, "rows"), (8, 10, "broadcast scalar")]:
        probs = _softmax_ref(rng.normal(size=(n, c)), 1).astype(dtype).astype(np.float64)
        targets = rng.integers(0, c, n).astype(np.int64)
        g, grad = _grad_rows(ops, put, rng, n, dtype, grad_kind)
        want = (probs - np.eye(c)[targets]) * g[:, None]
        got = ops.softmax_cross_entropy_backward(put(probs), put(targets, np.int64), grad)
        assert_close(ops.to_numpy(got), want.astype(dtype), rtol, atol,
                     f"softmax_cross_entropy_backward ({n}, {c}), {grad_kind} grad, {dtype}")


def _check_cross_entropy_loss(device, dtype, rng):
    """Both hooks called directly, for each reduction, with and without label smoothing:
    ignored rows, a target outside [0, C) that is not ignored (a NaN row, never an index),
    a broadcast grad and a 0-d one, rows of 700."""
    ops = device.ops
    rtol, atol = GRADIENT[dtype]

    def put(a, cast=dtype):
        return ops.from_numpy(np.ascontiguousarray(a, dtype=cast), device.index)

    plan = [(5, 4, -100, "none", "rows", 0.0), (6, 3, 2, "none", "broadcast scalar", 0.1),
            (3, 2, -100, "sum", "", 0.0), (0, 3, -1, "none", "rows", 0.2),
            (33, 700, 5, "mean", "", 0.0), (8, 6, -100, "mean", "", 0.3),
            (4, 3, 1, "sum", "", 1.0), (40, 300, -100, "mean", "", 0.1),
            (5, 7, -100, "none", "rows", 0.5)]
    for n, c, ignore_index, reduction, grad_kind, smoothing in plan:
        logits = rng.normal(scale=2.0, size=(n, c)).astype(dtype).astype(np.float64)
        targets = rng.integers(0, c, n).astype(np.int64)
        targets[::2] = ignore_index
        if n >= 3 and reduction == "none":
            targets[1] = c + 3 if ignore_index != c + 3 else -7  # out of range, kept
        what = (f"cross_entropy_loss ({n}, {c}), ignore_index={ignore_index}, {reduction}, "
                f"label_smoothing={smoothing}, {dtype}")
        keep = targets != ignore_index
        bad = keep & ((targets < 0) | (targets >= c))
        loss, probs, total = ops.cross_entropy_loss(
            put(logits), put(targets, np.int64), ignore_index, reduction, smoothing)
        want = _ce_loss_ref(logits, np.where(bad, 0, targets), ignore_index, reduction,
                            smoothing)
        if reduction == "none":
            want[bad] = NAN
            if total is not None:
                raise Mismatch(f"{what}: total must be None with reduction 'none'")
        else:
            assert_close(ops.to_numpy(total), np.asarray(keep.sum(), dtype), 0.0, 0.0,
                         what + ": total")
        assert_close(ops.to_numpy(loss), np.asarray(want, dtype), *ACCUMULATING[dtype],
                     what + ": loss")
        assert_close(ops.to_numpy(probs), _softmax_ref(logits, 1).astype(dtype),
                     *TRANSCENDENTAL[dtype], what + ": probs")
        p = _softmax_ref(logits, 1).astype(dtype).astype(np.float64)
        g, grad = _grad_rows(ops, put, rng, n, dtype, grad_kind if reduction == "none" else
                             "0-d")
        rows = _ce_loss_row_grads(targets, g, ignore_index, reduction)
        want = _ce_loss_grad_rows(p, np.where(keep & ~bad, targets, 0), rows, smoothing)
        want[bad] = NAN
        got = ops.cross_entropy_loss_backward(put(p), put(targets, np.int64), grad,
                                              ignore_index, reduction, smoothing, total)
        assert_close(ops.to_numpy(got), want.astype(dtype), rtol, atol, what + ": backward")


register(Case("bias_act_backward", check=_check_bias_act_backward))
register(Case("softmax_cross_entropy_backward", check=_check_xent_backward))
register(Case("cross_entropy_loss_backward", check=_check_cross_entropy_loss))
