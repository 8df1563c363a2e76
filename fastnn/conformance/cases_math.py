"""Conformance cases of the scans and newer math primitives: cumsum, prod, floor, sin, cos,
floor_divide and the bitwise operators."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fastnn.functional as F
from fastnn.api.dtypes import integer_names
from fastnn.conformance.case import Case, Sample, register
from fastnn.conformance.cases_elementwise import unary
from fastnn.conformance.cases_tensor import _reduction
from fastnn.conformance.compare import ACCUMULATING, EXACT

NAN, INF = float("nan"), float("inf")

unary("sin", F.sin, np.sin, np.cos, low=-4.0, high=4.0)
unary("cos", F.cos, np.cos, lambda x: -np.sin(x), low=-4.0, high=4.0)
# floor: away from the integers, where its derivative (0) is defined
unary("floor", F.floor, np.floor, lambda x: np.zeros_like(x), low=0.1, high=0.9,
      tol=EXACT, specials=[NAN, INF, -INF, 0.0, -0.0, -1.5, 2.5, -2.0])


def _prod_grad(x, g, axis, keepdims):
    axes = tuple(range(x.ndim)) if axis is None else (
        (axis,) if isinstance(axis, int) else tuple(axis))
    axes = tuple(a % x.ndim for a in axes) if x.ndim else ()
    out = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        others = np.array(x, copy=True)
        others[index] = 1.0
        sel = tuple(slice(None) if d in axes else index[d] for d in range(x.ndim))
        out[index] = np.prod(others[sel]) * g[index]
    return out


_reduction("prod", lambda x, axis, keepdims: F.prod(x, axis, keepdims),
           lambda x, axis, keepdims: np.prod(x, axis=axis, keepdims=keepdims), _prod_grad)


CUMSUM = [((3, 4), 1), ((3, 4), 0), ((2, 3, 4), -1), ((5,), 0), ((0, 3), 0), ((3, 0), 1),
          ((1,), 0), ((), 0)]


def _cumsum_grad(x, grad_out, axis):
    if x.ndim == 0:
        return (grad_out,)
    return (np.flip(np.cumsum(np.flip(grad_out, axis), axis), axis),)


def _cumsum_random(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    return Sample(f"random {shape} dim {axis}", (rng.normal(size=shape),), {"axis": axis})


register(Case(
    "cumsum", run=lambda x, axis: F.cumsum(x, axis),
    ref=lambda x, axis: np.cumsum(x, axis) if x.ndim else x,
    samples=lambda rng: [Sample(f"{s} dim {a}", (rng.normal(size=s),), {"axis": a})
                         for s, a in CUMSUM],
    edges=lambda rng, dtype: [
        Sample("NaN/Inf run on", (np.array([1.0, NAN, 2.0, INF]),), {"axis": 0}),
        Sample("Inf then finite", (np.array([1.0, INF, 2.0, 3.0]),), {"axis": 0}),
        # a running sum rounded to its own precision at each step drifts (0.1 * 2**15 in
        # float32: ~1e-3 relative); PyTorch's CPU kernel sums in double
        Sample("a long run", (np.full(1 << 15, 0.1),), {"axis": 0})],
    random=_cumsum_random, grad_ref=_cumsum_grad, diff_args=(0,), tol=dict(ACCUMULATING)))


# ---------------------------------------------------------------- integer binary ops

INT_SHAPES = [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((4,), (2, 3, 4)), ((), (3,)), ((0, 3), (1, 3))]


def _int_case(name, run, ref, low=-9, high=10, nonzero_b=False, dtypes=("int64",)):
    def draw(rng, shape, which, dtype):
        values = rng.integers(low, high, shape)
        if which == 1 and nonzero_b:
            values = np.where(values == 0, 3, values)
        return values.astype(dtype)

    def samples(rng):
        out = [Sample(f"{dt} shapes {sa} {sb}", (draw(rng, sa, 0, dt), draw(rng, sb, 1, dt)),
                      needs=(dt,)) for sa, sb in INT_SHAPES for dt in dtypes]
        out.append(Sample("python int b", (draw(rng, (2, 3), 0, "int64"), 3)))
        return out

    def edges(rng, dtype):
        big = np.array([2**62, -2**62, 2**31, -(2**31) - 1, 1, -1], np.int64)
        return [Sample("large int64", (big[:, None], np.array([7, -7, 1], np.int64)[None, :]))]

    def random(draw_):
        shapes = draw_(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4))
        rng = np.random.default_rng(draw_(st.integers(0, 2**31)))
        sa, sb = shapes.input_shapes
        return Sample(f"random {sa} {sb}", (draw(rng, sa, 0, "int64"), draw(rng, sb, 1,
                                                                            "int64")))

    register(Case(name, run=run, ref=ref, samples=samples, edges=edges, random=random,
                  tol=dict(EXACT)))


_INTS = tuple(integer_names())
_int_case("floor_divide", lambda a, b: a // b, np.floor_divide, nonzero_b=True, dtypes=_INTS)
_int_case("bitwise_and", lambda a, b: a & b, np.bitwise_and, dtypes=_INTS + ("bool",))
_int_case("bitwise_or", lambda a, b: a | b, np.bitwise_or, dtypes=_INTS + ("bool",))
_int_case("bitwise_xor", lambda a, b: a ^ b, np.bitwise_xor, dtypes=_INTS + ("bool",))
