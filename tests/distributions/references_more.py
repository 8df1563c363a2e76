"""Float64 references for the continuous families of test_distributions_more.py: for each,
random parameters (batch (3,)), values in the support, and the expected log_prob, cdf,
icdf, moments and entropy from scipy.stats, or, for the laws scipy lacks (Kumaraswamy,
ContinuousBernoulli), from their closed-form densities integrated numerically."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import integrate, optimize, special, stats

BATCH = (3,)


def _uniform(rng, low, high, shape=BATCH):
    return rng.uniform(low, high, shape)


@dataclass
class Ref:
    """``params(rng)`` -> float64 parameters; ``values(params, rng, shape)`` -> values;
    ``expected(params, value, quantile)`` -> {method: expected float64 array}."""

    params: object
    values: object
    expected: object
    tol: dict = field(default_factory=dict)  # per-method overrides of rtol=1e-9
    torch_skip: tuple = ()  # methods where PyTorch 2.13 is wrong (see the module docstrings)


def _scipy(frozen, value, quantile, methods):
    table = {"log_prob": lambda: frozen.logpdf(value), "cdf": lambda: frozen.cdf(value),
             "icdf": lambda: frozen.ppf(quantile), "mean": frozen.mean,
             "variance": frozen.var, "entropy": frozen.entropy}
    return {m: np.asarray(table[m](), np.float64) for m in methods}


def _elementwise(fn, *arrays):
    arrays = np.broadcast_arrays(*arrays)
    return np.array([fn(*items) for items in zip(*(a.ravel() for a in arrays))]).reshape(
        arrays[0].shape)


def _quad(fn, low=0.0, high=1.0):
    return integrate.quad(fn, low, high, epsabs=1e-13, epsrel=1e-12, limit=200)[0]


# ------------------------------------------------------------ Kumaraswamy, by quadrature
def _kumaraswamy_logpdf(a, b, x):
    return np.log(a) + np.log(b) + (a - 1) * np.log(x) + (b - 1) * np.log1p(-x ** a)


def _kumaraswamy(params, value, quantile):
    a, b = params["concentration1"], params["concentration0"]

    def moment(ai, bi, n):
        return _quad(lambda x: x ** n * np.exp(_kumaraswamy_logpdf(ai, bi, x)))

    def entropy(ai, bi):
        return _quad(lambda x: -np.exp(_kumaraswamy_logpdf(ai, bi, x))
                     * _kumaraswamy_logpdf(ai, bi, x))

    mean = _elementwise(lambda ai, bi: moment(ai, bi, 1), a, b)
    return {"log_prob": _kumaraswamy_logpdf(a, b, value),
            "cdf": 1 - (1 - value ** a) ** b,
            "icdf": (1 - (1 - quantile) ** (1 / b)) ** (1 / a),
            "mean": mean,
            "variance": _elementwise(lambda ai, bi: moment(ai, bi, 2), a, b) - mean ** 2,
            "entropy": _elementwise(entropy, a, b),
            "mode": np.where((a >= 1) & (b >= 1), ((a - 1) / (a * b - 1)) ** (1 / a), np.nan)}


# ------------------------------------------------------ ContinuousBernoulli, by quadrature
def _cb_unnormalised(p, x):
    return p ** x * (1 - p) ** (1 - x)


def _cb_norm(p):
    return 1 / _quad(lambda x: _cb_unnormalised(p, x))


def _cb_cdf(p, x):
    return _cb_norm(p) * _quad(lambda t: _cb_unnormalised(p, t), 0.0, x)


def _continuous_bernoulli(params, value, quantile):
    p = params["probs"]

    def moment(pi, n):
        c = _cb_norm(pi)
        return _quad(lambda x: x ** n * c * _cb_unnormalised(pi, x))

    def entropy(pi):
        c = _cb_norm(pi)
        return _quad(lambda x: -c * _cb_unnormalised(pi, x) * np.log(c * _cb_unnormalised(pi, x)))

    mean = _elementwise(lambda pi: moment(pi, 1), p)
    return {"log_prob": np.log(_elementwise(_cb_norm, p)) + np.log(_cb_unnormalised(p, value)),
            "cdf": _elementwise(_cb_cdf, p, value),
            "icdf": _elementwise(lambda pi, q: optimize.brentq(
                lambda x: _cb_cdf(pi, x) - q, 0.0, 1.0, xtol=1e-14), p, quantile),
            "mean": mean,
            "variance": _elementwise(lambda pi: moment(pi, 2), p) - mean ** 2,
            "entropy": _elementwise(entropy, p)}


def _cb_params(rng):
    return {"probs": np.array([rng.uniform(0.05, 0.3), 0.4995, rng.uniform(0.6, 0.95)])}


# ------------------------------------------------------------------------- the table
def _positive_values(params, rng, shape):
    return rng.gamma(2.0, 1.0, shape)


def _unit_values(params, rng, shape):
    return rng.uniform(0.02, 0.98, shape)


def _weibull(params, value, quantile):
    k, scale = params["concentration"], params["scale"]
    out = _scipy(stats.weibull_min(k, scale=scale), value, quantile,
                 ("log_prob", "cdf", "icdf", "mean", "variance", "entropy"))
    out["mode"] = np.where(k > 1, scale * ((k - 1) / k) ** (1 / k), 0.0)
    return out


def _pareto(params, value, quantile):
    out = _scipy(stats.pareto(params["alpha"], scale=params["scale"]), value, quantile,
                 ("log_prob", "cdf", "icdf", "mean", "variance", "entropy"))
    out["mode"] = params["scale"]
    return out


def _half_cauchy(params, value, quantile):
    return _scipy(stats.halfcauchy(scale=params["scale"]), value, quantile,
                  ("log_prob", "cdf", "icdf", "entropy"))


def _inverse_gamma(params, value, quantile):
    c, rate = params["concentration"], params["rate"]
    out = _scipy(stats.invgamma(c, scale=rate), value, quantile,
                 ("log_prob", "cdf", "mean", "variance", "entropy"))
    out["mode"] = rate / (c + 1)
    return out


def _fisher_snedecor(params, value, quantile):
    d1, d2 = params["df1"], params["df2"]
    out = _scipy(stats.f(d1, d2), value, quantile, ("log_prob", "mean", "variance"))
    out["mode"] = np.where(d1 > 2, (d1 - 2) / d1 * d2 / (d2 + 2), np.nan)
    return out


def _generalized_pareto(params, value, quantile):
    frozen = stats.genpareto(params["concentration"], loc=params["loc"], scale=params["scale"])
    out = _scipy(frozen, value, quantile,
                 ("log_prob", "cdf", "icdf", "mean", "variance", "entropy"))
    out["mode"] = params["loc"]
    return out


def _gp_values(params, rng, shape):
    c, loc, scale = params["concentration"], params["loc"], params["scale"]
    return stats.genpareto(c, loc=loc, scale=scale).ppf(rng.uniform(0.02, 0.98, shape))


def _von_mises(params, value, quantile):
    kappa, loc = params["concentration"], params["loc"]
    return {"log_prob": stats.vonmises(kappa, loc=loc).logpdf(value),
            "variance": 1 - special.i1e(kappa) / special.i0e(kappa),
            "mean": loc, "mode": loc}


def _angles(params, rng, shape):
    return params["loc"] + rng.uniform(-3.0, 3.0, shape)


PPF = {  # quartiles for the sample checks of the laws without icdf (as PyTorch's)
    "InverseGamma": lambda params, q: stats.invgamma(params["concentration"],
                                                     scale=params["rate"]).ppf(q),
    "FisherSnedecor": lambda params, q: stats.f(params["df1"], params["df2"]).ppf(q),
}

REFS = {
    "Weibull": Ref(lambda rng: {"scale": _uniform(rng, 0.5, 2.0),
                                "concentration": np.array([0.7, 1.6, 3.0])},
                   _positive_values, _weibull, torch_skip=("mode",)),
    "Pareto": Ref(lambda rng: {"scale": _uniform(rng, 0.5, 2.0),
                               "alpha": _uniform(rng, 2.5, 6.0)},
                  lambda params, rng, shape: params["scale"] * (1 + rng.gamma(2.0, 1.0, shape)),
                  _pareto),
    "HalfCauchy": Ref(lambda rng: {"scale": _uniform(rng, 0.5, 2.0)}, _positive_values,
                      _half_cauchy),
    "Kumaraswamy": Ref(lambda rng: {"concentration1": np.array([0.6, 1.5, 3.0]),
                                    "concentration0": np.array([2.0, 0.8, 4.0])},
                       _unit_values, _kumaraswamy, torch_skip=("mode",)),
    "InverseGamma": Ref(lambda rng: {"concentration": np.array([0.8, 2.5, 4.0]),
                                     "rate": _uniform(rng, 0.5, 2.0)},
                        _positive_values, _inverse_gamma),
    "FisherSnedecor": Ref(lambda rng: {"df1": np.array([1.5, 4.0, 9.0]),
                                       "df2": np.array([5.0, 9.0, 12.0])},
                          _positive_values, _fisher_snedecor),
    "GeneralizedPareto": Ref(lambda rng: {"loc": rng.normal(size=BATCH),
                                          "scale": _uniform(rng, 0.5, 2.0),
                                          "concentration": np.array([-0.3, 0.0, 0.3])},
                             _gp_values, _generalized_pareto),
    "VonMises": Ref(lambda rng: {"loc": rng.normal(size=BATCH),
                                 "concentration": np.array([0.3, 2.0, 8.0])},
                    _angles, _von_mises,
                    tol={"log_prob": {"rtol": 1e-6, "atol": 1e-6},
                         "variance": {"rtol": 1e-6, "atol": 1e-7}}),
    "ContinuousBernoulli": Ref(_cb_params, _unit_values, _continuous_bernoulli,
                               # the uniform's cdf stands in inside lims, as PyTorch's
                               tol={"cdf": {"atol": 1e-3}, "icdf": {"atol": 1e-3},
                                    "log_prob": {"rtol": 1e-8}, "entropy": {"rtol": 1e-7,
                                                                            "atol": 1e-9}}),
}
