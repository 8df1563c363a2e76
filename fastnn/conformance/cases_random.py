"""Conformance cases of the random samplers of ``fastnn/ops/random_ops.py`` (custom checks:
a sample has no reference value): shapes, dtypes and support, the same draws under the same
generator seed, and the first two moments within 5 standard errors (a correct sampler fails
about once in 10**6 runs)."""

from __future__ import annotations

import numpy as np

import fastnn as fnn
from fastnn.conformance.case import Case, composite, register
from fastnn.conformance.compare import Mismatch, assert_close


def _twice(draw):
    first = draw(fnn.Generator().manual_seed(5)).numpy()
    again = draw(fnn.Generator().manual_seed(5)).numpy()
    return first, again


def _moments(name, a, mean, var, n):
    mean_err, var_err = 5 * np.sqrt(var / n), 5 * var * np.sqrt(2 / n) + 1e-12
    if abs(a.mean() - mean) > mean_err or abs(a.var() - var) > 3 * var_err:
        raise Mismatch(f"{name}: mean {a.mean():.4f} (want {mean:.4f} +- {mean_err:.4f}), "
                       f"variance {a.var():.4f} (want {var:.4f})")


def _check_bernoulli(device, dtype, rng):
    n, p = 4096, 0.3
    probs = fnn.full((n,), p, dtype=dtype, device=device)
    a, b = _twice(lambda g: fnn.bernoulli(probs, generator=g))
    assert_close(a, b, 0.0, 0.0, f"bernoulli, {dtype}: one seed, one draw")
    if a.dtype != np.dtype(dtype) or not np.isin(a, (0.0, 1.0)).all():
        raise Mismatch(f"bernoulli, {dtype}: values must be 0 or 1 of {dtype}, got {a.dtype}")
    _moments(f"bernoulli(p={p}), {dtype}", a.astype(np.float64), p, p * (1 - p), n)
    edges = fnn.bernoulli(fnn.tensor([0.0, 1.0], dtype=dtype, device=device)).numpy()
    assert_close(edges, np.array([0.0, 1.0]), 0.0, 0.0, f"bernoulli at p 0 and 1, {dtype}")


def _check_normal(device, dtype, rng):
    n = 4096
    mean = fnn.full((n,), 2.0, dtype=dtype, device=device)
    a, b = _twice(lambda g: fnn.normal(mean, 3.0, generator=g))
    assert_close(a, b, 0.0, 0.0, f"normal, {dtype}: one seed, one draw")
    _moments(f"normal(2, 3), {dtype}", a.astype(np.float64), 2.0, 9.0, n)


def _check_multinomial(device, dtype, rng):
    weights = fnn.tensor([[1.0, 0.0, 3.0], [1.0, 1.0, 1.0]], dtype=dtype, device=device)
    a, b = _twice(lambda g: fnn.multinomial(weights, 2000, replacement=True, generator=g))
    assert_close(a, b, 0.0, 0.0, f"multinomial, {dtype}: one seed, one draw")
    if a.shape != (2, 2000) or a.dtype != np.int64 or (a[0] == 1).any():
        raise Mismatch(f"multinomial, {dtype}: int64 (2, 2000) indices never drawing a zero "
                       f"weight, got {a.dtype} {a.shape}")
    _moments(f"multinomial row [1, 0, 3], {dtype}", (a[0] == 2).astype(float), 0.75, 0.1875,
             2000)
    once = fnn.multinomial(weights, 2).numpy()
    if sorted(once[1]) != sorted(set(once[1])) or 1 in once[0]:
        raise Mismatch(f"multinomial without replacement, {dtype}: repeated {once}")


def _check_poisson(device, dtype, rng):
    n = 4096
    a, b = _twice(lambda g: fnn.poisson(fnn.full((n,), 4.0, dtype=dtype, device=device), g))
    assert_close(a, b, 0.0, 0.0, f"poisson, {dtype}: one seed, one draw")
    _moments(f"poisson(4), {dtype}", a.astype(np.float64), 4.0, 4.0, n)


for _name, _check in [("bernoulli", _check_bernoulli), ("normal", _check_normal),
                      ("multinomial", _check_multinomial), ("poisson", _check_poisson)]:
    composite(register(Case(_name, check=_check)))
