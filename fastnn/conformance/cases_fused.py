"""Conformance cases of the optional fused hooks (softmax family, rms_div, bias_act, and
the fused backward pass of bias_act); cross-entropy's are in cases_cross_entropy.py.

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
# Custom cases: the tape reaches this hook through the bias_act case above; here it is
# called directly, on layouts
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


register(Case("bias_act_backward", check=_check_bias_act_backward, tol=dict(GRADIENT)))
