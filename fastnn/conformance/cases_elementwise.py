"""Conformance cases of the elementwise primitives: unary math, activations, binary ops.

Each reference is NumPy in float64; each analytic gradient is the textbook
derivative. Inputs avoid kinks (|x| >= 0.2 for abs/relu) and ties
(maximum/minimum) so that finite differences are well defined there.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fastnn.functional as F
from fastnn.conformance.case import (
    CASES,
    Case,
    Sample,
    away_from_zero,
    composite,
    magnitudes,
    register,
    sum_to,
)
from fastnn.conformance.compare import EXACT, TRANSCENDENTAL

NAN, INF = float("nan"), float("inf")
SPECIALS = np.array([NAN, INF, -INF, 0.0, 1.0, -1.0])
UNARY_SHAPES = [(3, 4), (), (1,), (2, 1, 3), (0, 3)]
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _ref_sigmoid(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def _ref_gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _dgelu(x):
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    return 0.5 * (1.0 + _erf(x / math.sqrt(2.0))) + x * pdf


def _ref_silu(x):
    with np.errstate(over="ignore", invalid="ignore"):
        return x * _ref_sigmoid(x)


def _dsilu(x):
    s = _ref_sigmoid(x)
    return s * (1.0 + x * (1.0 - s))


def _ref_softplus(x):
    return np.logaddexp(0.0, x)


def _errstate(fn):
    def wrapped(*args, **kwargs):
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)

    return wrapped


def unary(name, run, ref, dref=None, low=-2.0, high=2.0, kink=False, specials=SPECIALS,
          tol=TRANSCENDENTAL, positive=False):
    """Register the case of a unary op ``y = ref(x)`` with derivative ``dref(x)``."""
    ref = _errstate(ref)

    def draw_values(rng, shape):
        if kink:
            return away_from_zero(rng, shape, max(low, 0.2), high)
        return rng.uniform(low, high, size=shape)

    def samples(rng):
        return [Sample(f"shape {s}", (draw_values(rng, s),)) for s in UNARY_SHAPES]

    def edges(rng, dtype):
        out = []
        for label, values in magnitudes(dtype).items():
            out.append(Sample(f"{label} magnitudes", (np.abs(values) if positive else values,)))
        if specials is not None:
            out.append(Sample("NaN/Inf/0 specials", (np.array(specials, dtype=np.float64),)))
        return out

    def random(draw):
        shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))
        seed = draw(st.integers(0, 2**31))
        return Sample(f"random shape {shape}", (draw_values(np.random.default_rng(seed), shape),))

    grad_ref = None
    if dref is not None:
        def grad_ref(x, grad_out):
            return (grad_out * dref(x),)

    return register(Case(name, run=run, ref=ref, samples=samples, edges=edges, random=random,
                         grad_ref=grad_ref, diff_args=(0,) if dref else (), tol=dict(tol)))


unary("neg", F.neg, np.negative, lambda x: -np.ones_like(x), tol=EXACT)
unary("exp", F.exp, np.exp, np.exp)
unary("log", F.log, np.log, lambda x: 1.0 / x, low=0.2, high=4.0, positive=True,
      specials=[NAN, INF, 0.0, 1.0, -1.0, 2.0])
unary("sqrt", F.sqrt, np.sqrt, lambda x: 0.5 / np.sqrt(x), low=0.2, high=4.0, positive=True,
      specials=[NAN, INF, 0.0, 1.0, -1.0, 4.0])
unary("abs", F.abs, np.abs, np.sign, kink=True, tol=EXACT)
unary("sign", lambda x: x.sign(), lambda x: np.where(np.isnan(x), 0.0, np.sign(x)),
      np.zeros_like, kink=True, tol=EXACT)  # as torch (0 at NaN)
unary("erf", F.erf, _erf, lambda x: 2.0 / math.sqrt(math.pi) * np.exp(-x * x))
unary("tanh", F.tanh, np.tanh, lambda x: 1.0 - np.tanh(x) ** 2)
unary("sigmoid", F.sigmoid, _ref_sigmoid, lambda x: _ref_sigmoid(x) * (1 - _ref_sigmoid(x)))
unary("relu", F.relu, lambda x: np.where(np.isnan(x), x, np.maximum(x, 0.0)),
      lambda x: (x > 0).astype(np.float64), kink=True, tol=EXACT)
unary("leaky_relu", lambda x: F.leaky_relu(x, 0.1), lambda x: np.where(x > 0, x, 0.1 * x),
      lambda x: np.where(x > 0, 1.0, 0.1), kink=True)
# NOTE: gelu(-inf) and silu(-inf) are -inf * 0 in their defining formulas: the
# reference does not define them, so only NaN and +inf are checked there.
unary("gelu", F.gelu, _ref_gelu, _dgelu, specials=[NAN, INF, 0.0, 1.0, -1.0])
unary("silu", F.silu, _ref_silu, _dsilu, specials=[NAN, INF, 0.0, 1.0, -1.0])
unary("softplus", F.softplus, _ref_softplus, _ref_sigmoid)


# ---------------------------------------------------------------- binary

BINARY_SHAPES = [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((4,), (2, 3, 4)), ((), (3,)),
                 ((0, 3), (1, 3)), ((2, 1, 1), (1, 1))]


def binary(name, run, ref, grads, a_range=(-2.0, 2.0), b_range=(-2.0, 2.0), b_kink=False,
           scalar=1.5, specials=(SPECIALS, SPECIALS), tol=None, magnitude=True):
    """Register a broadcasting binary op; ``grads(a, b, g)`` gives the unreduced (ga, gb)."""
    ref = _errstate(ref)

    def draw(rng, shape, which):
        low, high = a_range if which == 0 else b_range
        if which == 1 and b_kink:
            return away_from_zero(rng, shape, low, high)
        return rng.uniform(low, high, size=shape)

    def samples(rng):
        out = [Sample(f"shapes {sa} {sb}", (draw(rng, sa, 0), draw(rng, sb, 1)))
               for sa, sb in BINARY_SHAPES]
        if scalar is not None:
            out.append(Sample("python scalar b", (draw(rng, (2, 3), 0), scalar)))
        return out

    def edges(rng, dtype):
        out = []
        if magnitude:
            for label, values in magnitudes(dtype).items():
                out.append(Sample(f"{label} magnitudes", (values[:, None], values[None, :])))
        if specials is not None:
            a, b = (np.array(s, dtype=np.float64) for s in specials)
            out.append(Sample("NaN/Inf specials", (a[:, None], b[None, :])))
        return out

    def random(draw_):
        shapes = draw_(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4))
        seed = draw_(st.integers(0, 2**31))
        rng = np.random.default_rng(seed)
        sa, sb = shapes.input_shapes
        return Sample(f"random shapes {sa} {sb}", (draw(rng, sa, 0), draw(rng, sb, 1)))

    grad_ref = None
    if grads is not None:
        def grad_ref(a, b, grad_out):
            ga, gb = grads(a, b, grad_out)
            ga = sum_to(np.broadcast_to(ga, grad_out.shape), np.shape(a))
            if not isinstance(b, np.ndarray):
                return ga, None
            return ga, sum_to(np.broadcast_to(gb, grad_out.shape), b.shape)

    return register(Case(name, run=run, ref=ref, samples=samples, edges=edges, random=random,
                         grad_ref=grad_ref, diff_args=(0, 1) if grads else (),
                         tol=dict(tol or EXACT)))


def _ties_split(wins):
    """Gradient of maximum/minimum: to the winner; ties split it evenly (as PyTorch does)."""

    def grads(a, b, g):
        win = wins(a, b) + 0.5 * np.equal(a, b)
        return g * win, g * (1.0 - win)

    return grads


binary("add", F.add, np.add, lambda a, b, g: (g, g))
binary("sub", F.sub, np.subtract, lambda a, b, g: (g, -g))
binary("mul", F.mul, np.multiply, lambda a, b, g: (g * b, g * a))
binary("div", F.div, np.divide, lambda a, b, g: (g / b, -g * a / (b * b)), b_range=(0.5, 2.0),
       b_kink=True, scalar=0.75)
binary("pow", F.pow, np.power,
       lambda a, b, g: (g * b * np.power(a, b - 1.0), g * np.power(a, b) * np.log(a)),
       a_range=(0.5, 2.0), scalar=2.5, magnitude=False, tol=TRANSCENDENTAL,
       specials=([NAN, INF, 0.0, 1.0, 2.0], [NAN, INF, -INF, 0.0, 1.0, -1.0, 0.5]))
binary("maximum", F.maximum, np.maximum, _ties_split(np.greater))
binary("minimum", F.minimum, np.minimum, _ties_split(np.less))


def _compare_case(name, run, ref):
    def samples(rng):
        # small integers so that ties (a == b) really occur
        return [Sample(f"shapes {sa} {sb}", (rng.integers(-2, 3, sa).astype(np.float64),
                                             rng.integers(-2, 3, sb).astype(np.float64)))
                for sa, sb in BINARY_SHAPES] + [
            Sample("python scalar b", (rng.integers(-2, 3, (2, 3)).astype(np.float64), 1))]

    def edges(rng, dtype):
        s = SPECIALS
        return [Sample("NaN/Inf specials", (s[:, None], s[None, :]))]

    def random(draw):
        shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4))
        rng = np.random.default_rng(draw(st.integers(0, 2**31)))
        sa, sb = shapes.input_shapes
        return Sample(f"random shapes {sa} {sb}", (rng.integers(-2, 3, sa).astype(np.float64),
                                                   rng.integers(-2, 3, sb).astype(np.float64)))

    register(Case(name, run=run, ref=ref, samples=samples, edges=edges, random=random,
                  tol=dict(EXACT)))


_compare_case("greater", lambda a, b: a > b, np.greater)
_compare_case("less", lambda a, b: a < b, np.less)
_compare_case("equal", lambda a, b: a.eq(b), np.equal)


def _random_numbers(draw, what: str) -> Sample:
    """One array of a drawn shape, of small integers (zeros among them) as float64."""
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, max_side=4))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    return Sample(f"{what} random shape {shape}", (rng.integers(-2, 3, shape).astype(np.float64),))


# composites: the NOT of a bool mask is equal(mask, False) on the backend
_compare_case("not_equal", lambda a, b: a != b, np.not_equal)
register(Case("logical_not", run=lambda a: a.logical_not(), ref=np.logical_not,
              samples=lambda rng: [Sample("bool mask", (rng.random((3, 5)) < 0.5,)),
                                   Sample("numbers, zeros among them",
                                          (rng.integers(-2, 3, (4, 3)).astype(np.float64),))],
              edges=lambda rng, dtype: [Sample("NaN/Inf specials", (SPECIALS,))],
              random=lambda draw: _random_numbers(draw, "logical_not"), tol=dict(EXACT)))
composite(CASES["not_equal"], CASES["logical_not"])


def _where_samples(rng):
    out = []
    for sc, sa, sb in [((3, 4), (3, 4), (3, 4)), ((3, 1), (1, 4), (3, 4)), ((4,), (2, 4), (1,)),
                       ((0, 2), (1, 2), (0, 2))]:
        cond = rng.random(sc) < 0.5
        out.append(Sample(f"shapes {sc} {sa} {sb}", (cond, rng.normal(size=sa),
                                                     rng.normal(size=sb))))
    out.append(Sample("python scalar b", (rng.random((2, 3)) < 0.5, rng.normal(size=(2, 3)), 0.0)))
    return out


def _where_edges(rng, dtype):
    cond = np.array([True, False, True, False])
    a = np.array([NAN, NAN, INF, -INF])
    return [Sample("NaN/Inf not selected", (cond, a, np.array([1.0, 2.0, NAN, 3.0])))]


def _where_grad(cond, a, b, grad_out):
    ga = sum_to(np.where(cond, grad_out, 0.0), a.shape)
    gb = None
    if isinstance(b, np.ndarray):
        gb = sum_to(np.where(cond, 0.0, grad_out), b.shape)
    return None, ga, gb


def _where_random(draw):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=4))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    sc, sa, sb = shapes.input_shapes
    return Sample(f"random shapes {sc} {sa} {sb}",
                  (rng.random(sc) < 0.5, rng.normal(size=sa), rng.normal(size=sb)))


register(Case("where", run=F.where, ref=np.where, samples=_where_samples, edges=_where_edges,
              random=_where_random, grad_ref=_where_grad, diff_args=(1, 2), tol=dict(EXACT)))
