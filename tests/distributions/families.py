"""The families added after the first round (Gamma, Chi2, Beta, Dirichlet, the count
distributions and the heavier-tailed continuous ones) as declarative cases: random
parameters, valid values to score and which methods PyTorch has, for the shared checks of
test_families.py."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

BATCH = (3, 4)


def _positive(rng, dtype, shape=BATCH, *, low=0.3, high=3.0):
    return rng.uniform(low, high, shape).astype(dtype)


@dataclass
class Case:
    """One family: ``params(rng, dtype)`` -> NumPy parameters, ``values(params, rng,
    shape)`` -> values in the support (shape = sample shape + batch + event)."""

    name: str
    params: object
    values: object
    methods: tuple = ("mean", "variance", "entropy")
    event: tuple = ()
    moments: bool = True  # False for tails too heavy for a sample variance
    f32_tol: dict = field(default_factory=lambda: {"rtol": 1e-4, "atol": 1e-5})


def _gamma_values(params, rng, shape):
    dtype = next(iter(params.values())).dtype
    return rng.gamma(2.0, 1.0, shape).astype(dtype)


def _unit_values(params, rng, shape):
    dtype = next(iter(params.values())).dtype
    return rng.uniform(0.02, 0.98, shape).astype(dtype)


def _real_values(params, rng, shape):
    dtype = next(iter(params.values())).dtype
    return (2 * rng.standard_t(3, shape)).astype(dtype)


def _normal_values(params, rng, shape):
    dtype = next(iter(params.values())).dtype
    return rng.normal(size=shape).astype(dtype)


def _loc_scale(rng, dt):
    return {"loc": rng.normal(size=BATCH).astype(dt), "scale": _positive(rng, dt)}


def _count_values(params, rng, shape):
    dtype = next(v for v in params.values() if np.issubdtype(v.dtype, np.floating)).dtype
    values = rng.poisson(2.0, shape)
    if "total_count" in params:
        values = np.minimum(values, params["total_count"])
    return values.astype(dtype)


def _simplex_values(params, rng, shape):
    dtype = params["concentration"].dtype
    return rng.dirichlet(np.ones(shape[-1]), shape[:-1]).astype(dtype)


CASES = {
    "Gamma": Case("Gamma", lambda rng, dt: {"concentration": _positive(rng, dt, low=0.2),
                                            "rate": _positive(rng, dt)},
                  _gamma_values, ("mean", "mode", "variance", "entropy", "cdf")),
    "Chi2": Case("Chi2", lambda rng, dt: {"df": _positive(rng, dt, low=0.5, high=6.0)},
                 _gamma_values, ("mean", "mode", "variance", "entropy", "cdf")),
    "Beta": Case("Beta", lambda rng, dt: {"concentration1": _positive(rng, dt, low=0.2),
                                          "concentration0": _positive(rng, dt, low=0.2)},
                 _unit_values, ("mean", "mode", "variance", "entropy")),
    "Poisson": Case("Poisson", lambda rng, dt: {"rate": _positive(rng, dt, high=6.0)},
                    _count_values, ("mean", "mode", "variance")),
    "Geometric": Case("Geometric", lambda rng, dt: {
        "probs": _positive(rng, dt, low=0.05, high=0.95)},
                      _count_values, ("mean", "mode", "variance", "entropy")),
    "Geometric-logits": Case("Geometric", lambda rng, dt: {"logits": rng.normal(
        size=BATCH).astype(dt)}, _count_values, ("mean", "variance", "entropy")),
    "Binomial": Case("Binomial", lambda rng, dt: {
        "total_count": np.full(BATCH, 7), "probs": _positive(rng, dt, low=0.05, high=0.95)},
        _count_values, ("mean", "mode", "variance", "entropy")),
    "Binomial-logits": Case("Binomial", lambda rng, dt: {
        "total_count": rng.integers(0, 9, BATCH), "logits": 2 * rng.normal(
            size=BATCH).astype(dt)}, _count_values, ("mean", "mode", "variance")),
    "LogNormal": Case("LogNormal", lambda rng, dt: {
        "loc": rng.normal(size=BATCH).astype(dt), "scale": _positive(rng, dt, low=0.1, high=0.6)},
        _gamma_values, ("mean", "mode", "variance", "entropy", "cdf", "icdf")),
    "HalfNormal": Case("HalfNormal", lambda rng, dt: {"scale": _positive(rng, dt)},
                       _gamma_values, ("mean", "mode", "variance", "entropy", "cdf", "icdf")),
    "Cauchy": Case("Cauchy", _loc_scale, _real_values,
                   ("mean", "mode", "variance", "entropy", "cdf", "icdf")),
    "Gumbel": Case("Gumbel", _loc_scale, _normal_values,
                   ("mean", "mode", "variance", "stddev", "entropy", "cdf", "icdf")),
    "StudentT": Case("StudentT", lambda rng, dt: {
        "df": _positive(rng, dt, low=0.5, high=6.0), **_loc_scale(rng, dt)},
        _real_values, ("mean", "mode", "variance", "entropy"), moments=False),
    "Dirichlet": Case("Dirichlet",
                      lambda rng, dt: {"concentration": _positive(rng, dt, BATCH + (3,), low=0.2)},
                      _simplex_values, ("mean", "mode", "variance", "entropy"), event=(3,)),
}
