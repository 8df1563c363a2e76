"""The composite special functions (fastnn/ops/special.py) against PyTorch: values at
ordinary points and at the edges (NaN, +-inf, +-0, poles, domain ends), dtypes of integer
inputs, gradients, and the Tensor method / fnn.NAME / F.NAME spellings."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F

torch = pytest.importorskip("torch")

NAN, INF = float("nan"), float("inf")
EDGES = [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, -2.5, 1e-9, 30.0]
rng = np.random.default_rng(0)
ORDINARY = {
    "atan": rng.uniform(-4, 4, 20), "asin": rng.uniform(-0.95, 0.95, 20),
    "acos": rng.uniform(-0.95, 0.95, 20), "sinh": rng.uniform(-4, 4, 20),
    "cosh": rng.uniform(-4, 4, 20), "asinh": rng.uniform(-4, 4, 20),
    "acosh": rng.uniform(1.1, 5, 20), "atanh": rng.uniform(-0.9, 0.9, 20),
    "erfc": rng.uniform(-3, 8, 20), "erfinv": rng.uniform(-0.99, 0.99, 20),
    "lgamma": rng.uniform(-4, 12, 20), "digamma": rng.uniform(-4, 12, 20),
}
ALIASES = {"atan": "arctan", "asin": "arcsin", "acos": "arccos", "asinh": "arcsinh",
           "acosh": "arccosh", "atanh": "arctanh"}


def _close(got, want, rtol, atol=1e-12):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("name", sorted(ORDINARY))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_values_match_torch(device, name, dtype):
    values = np.concatenate([ORDINARY[name], EDGES]).astype(dtype)
    got = getattr(fnn, name)(fnn.tensor(values, device=device))
    want = getattr(torch, name)(torch.tensor(values))
    assert got.dtype.name == dtype
    rtol = 1e-12 if dtype == "float64" else 2e-6
    _close(got.numpy(), want.numpy(), rtol, atol=1e-12 if dtype == "float64" else 1e-6)
    np.testing.assert_array_equal(np.isinf(got.numpy()), np.isinf(want.numpy()))


@pytest.mark.parametrize("name", sorted(ORDINARY))
def test_gradients_match_torch(name):
    values = ORDINARY[name]
    x = fnn.tensor(values, dtype=fnn.float64, requires_grad=True)
    t = torch.tensor(values, requires_grad=True)
    getattr(x, name)().sum().backward()
    getattr(t, name)().sum().backward()
    _close(x.grad.numpy(), t.grad.numpy(), 1e-9)


@pytest.mark.parametrize("name", sorted(ORDINARY))
def test_spellings_and_integer_inputs(name):
    ints = np.array([[0, 1], [2, 3]])
    got = getattr(F, name)(fnn.tensor(ints))
    want = getattr(torch, name)(torch.tensor(ints))
    assert got.dtype is fnn.float32 and str(want.dtype) == "torch.float32"
    _close(got.numpy(), want.numpy(), 2e-6, 1e-6)
    if name in ALIASES:
        assert getattr(fnn, ALIASES[name]) is getattr(fnn, name)
        assert getattr(fnn.Tensor, ALIASES[name]) is getattr(fnn.Tensor, name)
    x = fnn.tensor(np.arange(6.0).reshape(2, 3) / 7).t()  # a non-contiguous view
    _close(getattr(x, name)().numpy(),
           getattr(torch.tensor(np.arange(6.0).reshape(2, 3) / 7).t(), name)().numpy(), 1e-12)
    assert getattr(fnn, name)(fnn.zeros(0, 3)).shape == (0, 3)
    assert getattr(fnn, name)(fnn.tensor(0.25)).shape == ()


def test_atan2_quadrants_signed_zeros_and_broadcasting(device):
    specials = np.array([NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 3.0])
    y, x = np.meshgrid(specials, specials)
    got = fnn.atan2(fnn.tensor(y, device=device), fnn.tensor(x, device=device))
    _close(got.numpy(), torch.atan2(torch.tensor(y), torch.tensor(x)).numpy(), 1e-15)
    np.testing.assert_array_equal(np.signbit(got.numpy()),
                                  np.signbit(np.arctan2(y, x)) & ~np.isnan(y) & ~np.isnan(x))
    a, b = rng.normal(size=(3, 1)), rng.normal(size=(4,))
    ta, tb = (fnn.tensor(v, requires_grad=True) for v in (a, b))
    ra, rb = (torch.tensor(v, requires_grad=True) for v in (a, b))
    ta.arctan2(tb).sum().backward()
    torch.atan2(ra, rb).sum().backward()
    _close(ta.grad.numpy(), ra.grad.numpy(), 1e-9)
    _close(tb.grad.numpy(), rb.grad.numpy(), 1e-9)
    assert fnn.atan2(fnn.tensor([1, 2]), fnn.tensor([3, 4])).dtype is fnn.float32


def test_bad_inputs_name_the_op():
    with pytest.raises(TypeError, match="lgamma: expected a Tensor"):
        fnn.lgamma([1.0, 2.0])
    with pytest.raises(ValueError, match="atan2"):
        fnn.atan2(fnn.ones(2), fnn.ones(3))
