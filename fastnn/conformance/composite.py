"""Helpers for the cases of composite ops (ops built from primitives, with no hook of their
own): a case registered here runs through the same harness as a hook's, on every backend.

:func:`op_case` derives what a table row leaves out: the hypothesis generator draws fresh
values for one of the samples' shapes, and for ops that are linear in each differentiable
argument (structure ops, products), :func:`multilinear_grad` derives the analytic gradient
from the NumPy reference itself: for ``f`` affine in ``x``, ``d/dx sum(f(x) * g)`` at
element ``i`` is ``sum((f(e_i) - f(0)) * g)``, ``e_i`` the unit array (other arguments
fixed).
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from fastnn.conformance.case import Case, Sample, register
from fastnn.conformance.compare import EXACT


def multilinear_grad(ref, diff_args, joint=False):
    """The analytic gradient of a reference affine in each of ``diff_args`` (the others
    fixed): ``f(e_i) - f(0)`` weighted by the upstream gradient; ``joint``: affine in all
    of them together (``cat``-like; the other float arguments are zeroed)."""

    def grad_ref(*args, grad_out, **params):
        out = [None] * len(args)
        for i in diff_args:
            x = np.asarray(args[i], dtype=np.float64)
            g = np.zeros(x.shape)
            trial = list(args)
            if joint:
                trial = [np.zeros(a.shape) if isinstance(a, np.ndarray) and
                         a.dtype.kind == "f" else a for a in args]
            trial[i] = np.zeros(x.shape)
            offset = np.asarray(ref(*trial, **params), np.float64)  # the affine part
            for index in np.ndindex(x.shape):
                unit = np.zeros(x.shape)
                unit[index] = 1.0
                trial[i] = unit
                g[index] = np.sum((np.asarray(ref(*trial, **params), np.float64) - offset)
                                  * grad_out)
            out[i] = g
        return out

    return grad_ref


def fresh(rng, sample: Sample) -> Sample:
    """``sample`` with new normal values in its float arrays (shapes and params kept)."""
    args = tuple(rng.normal(size=a.shape) if isinstance(a, np.ndarray) and a.dtype.kind == "f"
                 else a for a in sample.args)
    return Sample(sample.label + " (random values)", args, dict(sample.params))


def op_case(name, run, ref, samples, *, diff_args=(), grad_ref=None, edges=None,
            tol=None, grad_check="both", joint=False) -> Case:
    """Register the case of a composite op (see the module docstring); ``samples(rng)``
    gives its typical inputs, ``edges(rng, dtype)`` the empty, 0-d, negative-dim ones;
    ``joint``: see :func:`multilinear_grad`."""

    def random(draw):
        rng = np.random.default_rng(draw(st.integers(0, 2**31)))
        listed = samples(rng)
        return fresh(rng, listed[draw(st.integers(0, len(listed) - 1))])

    if diff_args and grad_ref is None:
        grad_ref = multilinear_grad(ref, diff_args, joint)
    return register(Case(name, run=run, ref=ref, samples=samples, grad_ref=grad_ref,
                         diff_args=tuple(diff_args), edges=edges or (lambda rng, dtype: []),
                         random=random, tol=dict(tol or EXACT), grad_check=grad_check,
                         composite=True))
