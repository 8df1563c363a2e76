"""quantile, nanquantile, nanmedian, msort, dist, renorm, logit, cov and corrcoef:
NumPy float64 references (numpy's quantile methods, nanmedian, cov ...), and PyTorch's
values and gradients where it is installed."""

import numpy as np
import pytest

import fastnn as fnn
from tests.api.torch_names_check import check, torch

RNG = np.random.default_rng(7)
DATA = RNG.normal(size=(4, 7))
HOLES = DATA.copy()
HOLES[1, 3] = np.nan
HOLES[2, :] = np.nan
METHODS = ["linear", "lower", "higher", "midpoint", "nearest"]
LEVELS = [0.0, 0.1, 0.5, 0.75, 1.0]


def _np_quantile(a, q, axis, keepdims, method, nan):
    fn = np.nanquantile if nan else np.quantile
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices
        return fn(a, q, axis=axis, keepdims=keepdims, method=method)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
def test_quantile_along_a_dim_with_a_tensor_of_levels(name, method):
    q = np.array(LEVELS)
    nan = name == "nanquantile"
    check(lambda x: getattr(fnn, name)(x, fnn.tensor(q), 1, interpolation=method),
          lambda x: _np_quantile(x, q, 1, False, method, nan), HOLES,
          torch_run=lambda t: getattr(torch, name)(t, torch.tensor(q), 1,
                                                   interpolation=method))


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
@pytest.mark.parametrize("dim, keepdim", [(None, False), (None, True), (0, True), (-1, False)])
def test_quantile_of_a_float_level_dims_and_keepdim(name, dim, keepdim):
    nan = name == "nanquantile"
    data = HOLES if nan else DATA
    check(lambda x: getattr(x, name)(0.3, dim, keepdim),
          lambda x: _np_quantile(x, 0.3, dim, keepdim, "linear", nan), data,
          torch_run=lambda t: getattr(torch, name)(t, 0.3, dim, keepdim))


def test_quantile_bad_inputs_name_the_op():
    x = fnn.tensor(DATA)
    with pytest.raises(ValueError, match=r"quantile: q values must be in the range \[0, 1\]"):
        fnn.quantile(x, 1.5)
    with pytest.raises(ValueError, match="quantile: interpolation must be one of"):
        fnn.quantile(x, 0.5, interpolation="cubic")
    with pytest.raises(TypeError, match="nanquantile: expected a floating-point tensor"):
        fnn.nanquantile(fnn.tensor([1, 2]), 0.5)
    with pytest.raises(ValueError, match="quantile: the input is empty"):
        fnn.quantile(fnn.zeros(0), 0.5)


def _np_nanmedian_lower(a, axis):
    """The lower median of the non-NaN values (PyTorch's, where NumPy averages two)."""
    moved = np.moveaxis(a, axis, -1)
    out = np.full(moved.shape[:-1], np.nan)
    for index in np.ndindex(out.shape):
        kept = np.sort(moved[index][~np.isnan(moved[index])])
        if kept.size:
            out[index] = kept[(kept.size - 1) // 2]
    return out


def test_nanmedian_values_indices_and_gradients():
    check(lambda x: fnn.nanmedian(x), lambda x: _np_nanmedian_lower(x.reshape(1, -1), 1)[0],
          HOLES, torch_run=lambda t: torch.nanmedian(t))
    result = fnn.nanmedian(fnn.tensor(HOLES), 1)
    assert type(result) is fnn.return_types.nanmedian
    values, indices = result
    want = _np_nanmedian_lower(HOLES, 1)
    np.testing.assert_allclose(values.numpy(), want, equal_nan=True)
    picked = np.take_along_axis(HOLES, indices.numpy()[:, None], 1)[:, 0]
    np.testing.assert_allclose(picked, want, equal_nan=True)
    check(lambda x: x.nanmedian(0, True)[0],
          lambda x: _np_nanmedian_lower(x, 0)[None], HOLES,
          torch_run=lambda t: t.nanmedian(0, True)[0])
    assert fnn.nanmedian(fnn.tensor([3, 1, 2])).item() == 2  # integers: no NaN to skip
    with pytest.raises(IndexError, match="nanmedian: dim 0 of shape"):
        fnn.nanmedian(fnn.zeros(0, 2), 0)


def test_msort():
    check(fnn.msort, lambda x: np.sort(x, 0), DATA, torch_run=torch and torch.msort)


DIST_REFERENCES = {0: np.count_nonzero, float("inf"): lambda d: np.abs(d).max()}


@pytest.mark.parametrize("p", [1, 2, 3, float("inf"), 0])
def test_dist(p):
    def reference(x, y):
        d = x - y
        return DIST_REFERENCES[p](d) if p in DIST_REFERENCES else \
            (np.abs(d) ** p).sum() ** (1 / p)

    # p = 0 without gradients: torch 2.13's own dist(p=0) fails its backward (an undefined
    # tensor); fastnn's zero gradient of the count is checked in tests/ops/test_pdist.py
    check(lambda x, y: fnn.dist(x, y, p), reference, DATA, RNG.normal(size=(7,)),
          torch_run=lambda x, y: torch.dist(x, y, p), grad=p != 0)
    with pytest.raises(TypeError, match="dist: expected a floating-point tensor"):
        fnn.dist(fnn.tensor([1, 2]), fnn.tensor([1, 2]))


@pytest.mark.parametrize("p, dim, maxnorm", [(2, 0, 1.5), (1, 1, 1.0), (3, 0, 100.0)])
def test_renorm_scales_only_the_slices_over_maxnorm(p, dim, maxnorm):
    def reference(x):
        others = tuple(d for d in range(x.ndim) if d != dim)
        norms = (np.abs(x) ** p).sum(others, keepdims=True) ** (1 / p)
        return x * np.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)

    check(lambda x: x.renorm(p, dim, maxnorm), reference, DATA,
          torch_run=lambda t: t.renorm(p, dim, maxnorm))
    with pytest.raises(ValueError, match="renorm: maxnorm must be a non-negative number"):
        fnn.renorm(fnn.tensor(DATA), 2, 0, -1.0)


@pytest.mark.parametrize("eps", [None, 0.2])
def test_logit(eps):
    probs = np.array([[0.05, 0.3, 0.5], [0.7, 0.95, 0.99]])

    def reference(x):
        x = x if eps is None else np.clip(x, eps, 1 - eps)
        return np.log(x / (1 - x))

    check(lambda x: fnn.logit(x, eps), reference, probs,
          torch_run=lambda t: torch.logit(t, eps))
    np.testing.assert_allclose(fnn.tensor(probs).logit(eps).numpy(), reference(probs),
                               rtol=1e-12)


@pytest.mark.parametrize("eps", [None, 0.25])
def test_logit_of_integers_is_in_the_default_float_dtype_as_pytorchs(eps):
    """torch.logit(torch.tensor([0, 1])) gives float32 [-inf, inf]; it raised a TypeError."""
    if torch is None:
        pytest.skip("needs PyTorch")
    for values in ([0, 1, 1], [True, False, True]):
        ours, theirs = fnn.logit(fnn.tensor(values), eps), torch.logit(torch.tensor(values), eps)
        assert ours.dtype == fnn.float32 and theirs.dtype == torch.float32
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


WEIGHTS = [{}, {"correction": 0}, {"correction": 2}, {"fweights": [1, 2, 0, 3, 1]},
           {"aweights": [0.5, 1.0, 2.0, 0.1, 1.5]},
           {"fweights": [1, 2, 1, 3, 1], "aweights": [0.5, 1.0, 2.0, 0.1, 1.5],
            "correction": 1}]


@pytest.mark.parametrize("kwargs", WEIGHTS, ids=[str(sorted(w)) for w in WEIGHTS])
def test_cov_with_correction_and_weights_as_numpy(kwargs):
    rows = RNG.normal(size=(3, 5))
    correction = kwargs.get("correction", 1)
    fw, aw = kwargs.get("fweights"), kwargs.get("aweights")

    def run(lib):
        extra = {"correction": correction}
        if fw is not None:
            extra["fweights"] = lib.tensor(fw)
        if aw is not None:
            extra["aweights"] = lib.tensor(np.array(aw))
        return lambda x: lib.cov(x, **extra)

    check(run(fnn), lambda x: np.cov(x, ddof=correction, fweights=fw, aweights=aw), rows,
          torch_run=run(torch) if torch is not None else None)


def test_cov_of_one_variable_corrcoef_and_bad_weights():
    rows = RNG.normal(size=(3, 6))
    check(fnn.cov, lambda x: np.cov(x), rows[0], torch_run=torch and torch.cov)
    check(fnn.corrcoef, np.corrcoef, rows, torch_run=torch and torch.corrcoef)
    check(lambda x: x.corrcoef(), np.corrcoef, rows[0], torch_run=torch and torch.corrcoef)
    np.testing.assert_allclose(fnn.tensor([[1, 2, 4], [0, 1, 1]]).cov().numpy(),
                               np.cov([[1, 2, 4], [0, 1, 1]]), rtol=1e-6)
    with pytest.raises(ValueError, match="cov: fweights must be a 1-d tensor of 6 weights"):
        fnn.cov(fnn.tensor(rows), fweights=fnn.tensor([1, 2]))
    with pytest.raises(TypeError, match="cov: fweights must be integers"):
        fnn.cov(fnn.tensor(rows), fweights=fnn.ones(6))
    with pytest.raises(ValueError, match="cov: aweights must be non-negative"):
        fnn.cov(fnn.tensor(rows), aweights=-fnn.ones(6))
    with pytest.raises(ValueError, match="cov: expected a tensor of at most 2 dims"):
        fnn.cov(fnn.ones(2, 2, 2))
