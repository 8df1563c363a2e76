"""The elementwise ops of fastnn/ops/elementwise_more.py (and the older ones issue 21 asks
to check) against PyTorch: values with NaN/inf/signed zeros, dtypes of integer and bool
inputs, broadcasting, gradients, and their spellings."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F

torch = pytest.importorskip("torch")

NAN, INF = float("nan"), float("inf")
SPECIALS = np.array([NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-30, 7.25])
rng = np.random.default_rng(1)


def _same(got, want, rtol=1e-12, atol=1e-14):
    assert str(want.dtype).replace("torch.", "") == got.dtype.name, (got.dtype, want.dtype)
    np.testing.assert_allclose(got.numpy().astype(np.float64),
                               want.detach().double().numpy(), rtol=rtol, atol=atol,
                               equal_nan=True)


UNARY = ["log10", "log2", "exp2", "expm1", "log1p", "trunc", "fix", "frac", "sgn", "sinc",
         "deg2rad", "rad2deg", "square", "rsqrt", "isnan", "isinf", "isfinite", "isposinf",
         "isneginf", "signbit", "nan_to_num", "round", "sign", "abs"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_values_match_torch(device, name):
    values = np.concatenate([SPECIALS, rng.uniform(-3, 3, 8)])
    got = getattr(fnn, name)(fnn.tensor(values, device=device))
    want = getattr(torch, name)(torch.tensor(values))
    _same(got, want)
    if name in ("frac",):
        return
    for ints in (np.array([[0, 1], [-2, 3]]), np.array([True, False])):
        if name in ("frac",) or (ints.dtype == bool and name in ("sgn", "sign", "abs", "square",
                                                                "round", "trunc", "fix")):
            continue
        _same(getattr(fnn, name)(fnn.tensor(ints)), getattr(torch, name)(torch.tensor(ints)),
              rtol=2e-7)


BINARY = ["logaddexp", "logaddexp2", "copysign", "hypot", "xlogy", "fmax", "fmin", "fmod",
          "remainder", "maximum", "minimum", "float_power", "atan2"]


@pytest.mark.parametrize("name", BINARY)
def test_binary_values_match_torch(device, name):
    a, b = np.meshgrid(SPECIALS, SPECIALS)
    got = getattr(fnn, name)(fnn.tensor(a, device=device), fnn.tensor(b, device=device))
    want = getattr(torch, name)(torch.tensor(a), torch.tensor(b))
    _same(got, want)
    x, y = rng.uniform(0.5, 3, (3, 1)), rng.uniform(-3, 3, (4,))  # broadcast, then scalars
    _same(getattr(fnn, name)(fnn.tensor(x), fnn.tensor(y)),
          getattr(torch, name)(torch.tensor(x), torch.tensor(y)))
    try:
        want = getattr(torch, name)(torch.tensor(x), 1.5)
    except TypeError:  # torch takes a tensor only
        return
    _same(getattr(fnn, name)(fnn.tensor(x), 1.5), want)


DIFFERENTIABLE = ["log10", "logaddexp", "logaddexp2", "copysign", "hypot", "xlogy", "sinc",
                  "deg2rad", "fmod", "frac", "float_power", "fmax", "fmin", "rsqrt",
                  "log1p", "expm1"]


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_gradients_match_torch(name):
    unary = name in UNARY
    host = [rng.uniform(0.3, 2.5, (3, 4)) * rng.choice([-1, 1], (3, 4))]
    if name in ("log10", "rsqrt", "float_power", "log1p"):
        host[0] = np.abs(host[0])
    if not unary:
        host.append(rng.uniform(0.3, 2.5, (4,)) * rng.choice([-1, 1], (4,)))
    mine = [fnn.tensor(h, requires_grad=True) for h in host]
    theirs = [torch.tensor(h, requires_grad=True) for h in host]
    getattr(fnn, name)(*mine).sum().backward()
    getattr(torch, name)(*theirs).sum().backward()
    for m, t in zip(mine, theirs):
        np.testing.assert_allclose(m.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_zero_points_of_sinc_xlogy_and_logaddexp_gradients():
    x = fnn.tensor([0.0, 0.0, 1.0], requires_grad=True)
    y = fnn.tensor([0.0, 2.0, 0.0], requires_grad=True)
    tx, ty = (torch.tensor(v.numpy(), requires_grad=True) for v in (x.detach(), y.detach()))
    (fnn.xlogy(x, y) + fnn.sinc(x) + fnn.logaddexp(x, y)).sum().backward()
    (torch.xlogy(tx, ty) + torch.sinc(tx) + torch.logaddexp(tx, ty)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), atol=1e-6)
    np.testing.assert_allclose(y.grad.numpy()[1:], ty.grad.numpy()[1:], atol=1e-6)


def test_isclose_allclose_equal_as_torch():
    a = np.array([1.0, 2.0, NAN, INF, -INF, 1e-9, 100.0])
    b = np.array([1.0 + 1e-6, 2.1, NAN, INF, INF, 0.0, 100.001])
    for kw in ({}, {"equal_nan": True}, {"rtol": 0.1}, {"atol": 1e-3, "rtol": 0}):
        _same(fnn.isclose(fnn.tensor(a), fnn.tensor(b), **kw),
              torch.isclose(torch.tensor(a), torch.tensor(b), **kw))
        assert fnn.allclose(fnn.tensor(a), fnn.tensor(b), **kw) == torch.allclose(
            torch.tensor(a), torch.tensor(b), **kw)
    ints = fnn.tensor([1, 2, 3])
    _same(fnn.isclose(ints, fnn.tensor([1, 3, 3])), torch.isclose(torch.tensor([1, 2, 3]),
                                                                  torch.tensor([1, 3, 3])))
    assert fnn.equal(ints, fnn.tensor([1, 2, 3])) and ints.equal(fnn.tensor([1.0, 2.0, 3.0]))
    assert not fnn.equal(ints, fnn.tensor([[1, 2, 3]]))
    assert not fnn.equal(fnn.tensor([NAN]), fnn.tensor([NAN]))
    with pytest.raises(ValueError, match="isclose: rtol"):
        fnn.isclose(ints, ints, rtol=-1)


def test_nan_to_num_arguments_and_dtypes():
    values = np.array([NAN, INF, -INF, 1.5])
    for kw in ({}, {"nan": 2.0}, {"posinf": 9.0, "neginf": -9.0}):
        for dtype in ("float32", "float64", "float16"):
            _same(fnn.nan_to_num(fnn.tensor(values.astype(dtype)), **kw),
                  torch.nan_to_num(torch.tensor(values.astype(dtype)), **kw))
    _same(fnn.tensor([1, 2]).nan_to_num(), torch.tensor([1, 2]).nan_to_num())


def test_round_decimals_as_torch():
    values = np.array([1.2345, 2.5, 1234.5, -0.125, -7.5, NAN, INF])
    for d in (0, 1, 2, -1, -2):
        _same(fnn.round(fnn.tensor(values), decimals=d),
              torch.round(torch.tensor(values), decimals=d))
    with pytest.raises(TypeError, match="decimals"):
        fnn.round(fnn.tensor([1, 2]), decimals=1)


def test_round_to_zero_keeps_the_sign():
    values = np.array([-0.5, -0.0, -0.3, 0.3, 0.5, -1.5])
    got = fnn.round(fnn.tensor(values)).numpy()
    want = torch.round(torch.tensor(values)).numpy()
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_shifts_as_torch(device, dtype):
    a = np.array([-8, 5, np.iinfo(dtype).min, np.iinfo(dtype).max, 0, 1])[:, None].astype(dtype)
    n = np.array([0, 1, 3, 31, 32, 40, 63, 64, -1])[None, :]
    x, t = fnn.tensor(a, device=device), torch.tensor(a)
    for op in ("__lshift__", "__rshift__"):
        _same(getattr(x, op)(fnn.tensor(n, device=device)), getattr(t, op)(torch.tensor(n)))
        for shift in (0, 3, 31, 64, 100, -1):
            _same(getattr(x, op)(shift), getattr(t, op)(shift))
    _same(2 << fnn.tensor([1, 2], dtype=fnn.int32), 2 << torch.tensor([1, 2], dtype=torch.int32))
    _same(fnn.tensor([True]) >> 1, torch.tensor([True]) >> 1)
    _same(F.bitwise_left_shift(x, 2), torch.bitwise_left_shift(t, 2))
    with pytest.raises(TypeError, match="integer tensors"):
        fnn.ones(2) << 1


def test_clamp_with_tensor_bounds_as_torch():
    x = rng.normal(size=(3, 4))
    low, high = rng.normal(size=(4,)) - 1, rng.normal(size=(3, 1)) + 1
    tx = torch.tensor(x, requires_grad=True)
    fx = fnn.tensor(x, requires_grad=True)
    fnn.clamp(fx, fnn.tensor(low), fnn.tensor(high)).sum().backward()
    torch.clamp(tx, torch.tensor(low), torch.tensor(high)).sum().backward()
    _same(fnn.clamp(fx, fnn.tensor(low), fnn.tensor(high)),
          torch.clamp(tx, torch.tensor(low), torch.tensor(high)))
    np.testing.assert_array_equal(fx.grad.numpy(), tx.grad.numpy())


def test_spellings():
    for name in UNARY + BINARY + ["isclose", "allclose", "equal", "bitwise_left_shift",
                                  "bitwise_right_shift"]:
        assert hasattr(fnn, name) and hasattr(F, name), name
        assert hasattr(fnn.Tensor, name), name


def test_logical_ops_as_torch():
    a = np.array([0.0, 1.5, -2.0, NAN])
    b = np.array([3, 0, 0, 1])
    for name in ("logical_and", "logical_or", "logical_xor"):
        _same(getattr(fnn, name)(fnn.tensor(a), fnn.tensor(b)),
              getattr(torch, name)(torch.tensor(a), torch.tensor(b)))
    _same(fnn.logical_not(fnn.tensor(a)), torch.logical_not(torch.tensor(a)))


def test_logs_are_exact_at_powers_and_integer_division_by_zero_raises(device):
    powers = np.array([8.0, 0.125, 1024.0, 1000.0, 1e22, 0.001, 3.0, 0.0, INF, 1e-300])
    for dtype in ("float32", "float64"):
        for name in ("log2", "log10"):
            got = getattr(fnn, name)(fnn.tensor(powers.astype(dtype), device=device)).numpy()
            want = getattr(torch, name)(torch.tensor(powers.astype(dtype))).numpy()
            np.testing.assert_allclose(got, want, rtol=5e-16 if dtype == "float64" else 2e-7)
            exact = {"log2": [0, 1, 2], "log10": [3, 4, 5]}[name]
            np.testing.assert_array_equal(got[exact], want[exact])  # log2(8.0) is 3.0
    _same(fnn.exp2(fnn.tensor([-3.0, 10.0, 0.5], dtype=fnn.float64)),
          torch.exp2(torch.tensor([-3.0, 10.0, 0.5], dtype=torch.float64)), rtol=0, atol=0)
    for op in (lambda a, b: a % b, lambda a, b: a // b, fnn.fmod):
        with pytest.raises(ZeroDivisionError):
            op(fnn.tensor([5, 7], device=device), fnn.tensor([2, 0], device=device))
        with pytest.raises(ZeroDivisionError):
            op(fnn.tensor([5], device=device), 0)
    assert np.isnan((fnn.tensor([5.0]) % 0).numpy()).all()


def test_clamp_with_a_nan_bound_gives_nan_as_torch():
    x, low = np.array([1.0, NAN, 3.0]), np.array([NAN, 0.0, 0.0])
    _same(fnn.clamp(fnn.tensor(x), fnn.tensor(low)), torch.clamp(torch.tensor(x),
                                                                  torch.tensor(low)))
    _same(fnn.clamp(fnn.tensor(x), max=fnn.tensor(low)), torch.clamp(torch.tensor(x),
                                                                     max=torch.tensor(low)))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64"])
def test_angle_of_real_tensors_as_torch(dtype):
    values = np.array([-1.0, 0.0, -0.0, 2.0, NAN, -INF, INF, -3.0])
    if dtype == "int64":
        values = np.array([-3, 0, 2, -1])
    values = values.astype(dtype)
    got, want = fnn.angle(fnn.tensor(values)), torch.angle(torch.tensor(values))
    _same(got, want)
    np.testing.assert_array_equal(np.signbit(got.numpy()), np.signbit(want.numpy()))
    if dtype != "int64":  # its gradient is 0, as PyTorch's for real input
        x = fnn.tensor(values, requires_grad=True)
        (fnn.angle(x) * 2.0).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.zeros_like(values))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_frexp_matches_torch_bit_for_bit(dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    values = np.concatenate([
        [0.0, -0.0, 1.0, 3.0, -0.75, np.inf, -np.inf, np.nan, 1e-40, 3.4e38, 1e-45, 0.5,
         0.9999999, 2.0 ** -126, -1024.0, 1.0000001],
        rng.standard_normal(500) * 10.0 ** rng.integers(-40, 38, 500)]).astype(dtype)
    mantissa, exponent = fnn.frexp(fnn.tensor(values))
    theirs = torch.frexp(torch.tensor(values))
    np.testing.assert_array_equal(mantissa.numpy(), theirs.mantissa.numpy())
    np.testing.assert_array_equal(exponent.numpy(), theirs.exponent.numpy())
    assert exponent.dtype == fnn.int32 and mantissa.dtype.name == dtype
    x, t = fnn.tensor([3.0, -0.3], requires_grad=True), torch.tensor([3.0, -0.3],
                                                                     requires_grad=True)
    x.frexp().mantissa.sum().backward()
    torch.frexp(t).mantissa.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())
    with pytest.raises(RuntimeError, match="floating-point"):
        fnn.frexp(fnn.tensor([1, 2]))
