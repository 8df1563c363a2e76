"""fnn.special.zeta, polygamma (fnn.polygamma, Tensor.polygamma), erfcx and ndtri
(fastnn/ops/special_zeta.py): values against scipy.special in float64, including negative
q / x, poles and tails; values and gradients against PyTorch; gradients against central
differences; float32; integer inputs."""

import numpy as np
import pytest

import fastnn as fnn
import fastnn.special as S

sp = pytest.importorskip("scipy.special")

NAN, INF = float("nan"), float("inf")


def _t(values):
    return fnn.tensor(np.asarray(values, dtype=np.float64))


def _close(got, want, rtol):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=0, equal_nan=True)


def test_zeta_is_scipys_over_both_signs_of_q():
    x = np.array([1.5, 2.0, 3.0, 4.5, 7.0, 10.0, 33.0, 120.0])
    q = np.array([1e-8, 0.3, 1.0, 2.5, 9.0, 100.0, 1e6, 1e10])
    xx, qq = np.meshgrid(x, q)
    np.testing.assert_allclose(S.zeta(_t(xx), _t(qq)).numpy(), sp.zeta(xx, qq), rtol=1e-13,
                               atol=1e-300)
    # negative non-integer q: integer x only (NaN for fractional x, as scipy and torch)
    xi, qn = np.meshgrid([2.0, 3.0, 4.0, 7.0], [-0.2, -0.5, -3.5, -10.3, -100.7])
    got = S.zeta(_t(xi), _t(qn)).numpy()
    want = np.vectorize(lambda s, a: sum((a + n) ** -s for n in range(200000))
                        + (a + 200000) ** (1 - s) / (s - 1))(xi, qn)  # the series, directly
    _close(got, want, 1e-9)  # (the direct sum itself is good to ~1e-10 here)
    _close(got, sp.zeta(xi, qn), 2e-10)  # (scipy's sums -3.5 ... 3.5 term by term: ~1e-10)
    # odd x at a half-integer q: the terms cancel in pairs, leaving zeta(x, 1 - q)
    _close(S.zeta(_t([7.0, 7.0, 3.0]), _t([-2.5, -20.5, -3.5])).numpy(),
           sp.zeta([7.0, 7.0, 3.0], [3.5, 21.5, 4.5]), 1e-14)


def test_zeta_edges_as_torch():
    torch = pytest.importorskip("torch")
    x = np.array([1.0, 0.5, 2.0, 2.0, 2.5, 3.0, NAN, 2.0, 1.0, 2.0])
    q = np.array([2.0, 1.0, 0.0, -2.0, -0.5, -0.0, 1.0, NAN, NAN, 3.0])
    got = S.zeta(_t(x), _t(q)).numpy()
    want = torch.special.zeta(torch.tensor(x), torch.tensor(q)).numpy()
    _close(got, want, 1e-14)
    assert S.zeta(_t([2.0]), _t([INF])).numpy()[0] == 0.0  # (torch: NaN)
    # Python numbers on either side, as torch's
    _close(S.zeta(2.0, _t([1.0])).numpy(), [np.pi ** 2 / 6], 1e-15)
    _close(S.zeta(_t([2.0]), 1.0).numpy(), [np.pi ** 2 / 6], 1e-15)


def test_zeta_gradient_is_torchs_in_q_and_refused_in_x():
    torch = pytest.importorskip("torch")
    x, q = np.array([2.0, 3.5, 6.0]), np.array([0.4, 2.0, -1.5])
    q[2] = 5.0
    ours, theirs = _t(q).requires_grad_(), torch.tensor(q, requires_grad=True)
    S.zeta(_t(x), ours).sum().backward()
    torch.special.zeta(torch.tensor(x), theirs).sum().backward()
    _close(ours.grad.numpy(), theirs.grad.numpy(), 1e-12)
    leaf = _t(x).requires_grad_()
    with pytest.raises(NotImplementedError, match="zeta"):
        S.zeta(leaf, _t(q)).sum().backward()


POINTS = np.array([-10.3, -2.7, -0.4, 1e-5, 0.5, 1.0, 3.3, 20.0, 1e6])


@pytest.mark.parametrize("n", [1, 2, 3, 6])
def test_polygamma_is_scipys(n):
    _close(S.polygamma(n, _t(POINTS)).numpy(), sp.polygamma(n, POINTS), 1e-12)
    poles = S.polygamma(n, _t([0.0, -1.0, -3.0, INF])).numpy()
    sign = 1.0 if n % 2 else -1.0
    np.testing.assert_array_equal(poles, [sign * INF, sign * INF, sign * INF, 0.0])
    if n % 2 == 0:  # psi^(n) of a half-integer below 0 is psi^(n)(1 - x) there
        _close(S.polygamma(n, _t([-2.5, -0.5])).numpy(), sp.polygamma(n, [3.5, 1.5]), 1e-14)


@pytest.mark.parametrize("n", [0, 1, 2, 4])
def test_polygamma_values_and_gradients_match_torch(n):
    torch = pytest.importorskip("torch")
    x = np.array([-2.5, -0.5, 0.3, 1.0, 3.3, 20.0])
    ours, theirs = _t(x).requires_grad_(), torch.tensor(x, requires_grad=True)
    a, b = S.polygamma(n, ours), torch.special.polygamma(n, theirs)
    # torch's trigamma is good to ~1e-9 only (an asymptotic series from x = 6)
    _close(a.detach().numpy(), b.detach().numpy(), 1e-12 if n != 1 else 1e-8)
    a.sum().backward()
    b.sum().backward()
    _close(ours.grad.numpy(), theirs.grad.numpy(), 1e-8)
    np.testing.assert_allclose(ours.grad.numpy(), sp.polygamma(n + 1, x), rtol=1e-12)


def test_polygamma_spellings_dtypes_and_errors():
    x = fnn.tensor([0.5, 2.0])
    want = sp.polygamma(2, np.array([0.5, 2.0]))
    for got in (fnn.polygamma(2, x), x.polygamma(2), S.polygamma(2, x), x.clone().polygamma_(2)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
        assert got.dtype == fnn.float32
    assert fnn.polygamma(1, fnn.tensor([1, 2])).dtype == fnn.float32
    with pytest.raises(RuntimeError, match="negative n"):
        fnn.polygamma(-1, x)
    with pytest.raises(TypeError, match="must be an int"):
        fnn.polygamma(1.5, x)


def _central(fn, x, eps=1e-6):
    return (fn(_t(x + eps)).numpy() - fn(_t(x - eps)).numpy()) / (2 * eps)


@pytest.mark.parametrize("fn,x", [
    (lambda v: S.polygamma(3, v), np.array([-1.5, 0.7, 4.0])),
    (S.erfcx, np.array([-3.0, -0.2, 0.9, 1.6, 12.0])),
    (S.ndtri, np.array([1e-3, 0.1, 0.5, 0.93, 0.99])),
    (lambda v: S.zeta(_t([2.5, 2.5, 4.0]), v), np.array([0.3, 3.0, 20.0])),
], ids=["polygamma", "erfcx", "ndtri", "zeta"])
def test_gradients_against_central_differences(fn, x):
    leaf = _t(x).requires_grad_()
    fn(leaf).sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), _central(fn, x), rtol=1e-6, atol=1e-8)


def test_erfcx_is_scipys():
    x = np.concatenate([np.linspace(-26.0, 50.0, 3001), [1.4999, 1.5, 1e5, 1e300]])
    _close(S.erfcx(_t(x)).numpy(), sp.erfcx(x), 3e-15)
    np.testing.assert_array_equal(S.erfcx(_t([INF, -INF, -30.0, NAN])).numpy(),
                                  [0.0, INF, INF, NAN])


def test_ndtri_is_scipys():
    p = np.concatenate([np.geomspace(1e-300, 0.1, 300), np.linspace(0.0, 1.0, 501),
                        1 - np.geomspace(1e-16, 0.1, 50)])
    _close(S.ndtri(_t(p)).numpy(), sp.ndtri(p), 1e-15)
    np.testing.assert_array_equal(S.ndtri(_t([0.0, 1.0, -0.1, 1.1, NAN])).numpy(),
                                  [-INF, INF, NAN, NAN, NAN])


@pytest.mark.parametrize("name", ["erfcx", "ndtri"])
def test_values_and_gradients_match_torch(name):
    torch = pytest.importorskip("torch")
    x = (np.array([-3.0, -0.2, 0.0, 0.9, 1.6, 12.0]) if name == "erfcx"
         else np.array([1e-6, 0.1, 0.5, 0.93, 0.999]))
    ours, theirs = _t(x).requires_grad_(), torch.tensor(x, requires_grad=True)
    a, b = getattr(S, name)(ours), getattr(torch.special, name)(theirs)
    _close(a.detach().numpy(), b.detach().numpy(), 2e-15)
    a.sum().backward()
    b.sum().backward()
    _close(ours.grad.numpy(), theirs.grad.numpy(), 1e-13)


@pytest.mark.parametrize("name", ["erfcx", "ndtri", "zeta", "polygamma"])
def test_float32_and_integers(name):
    x = np.array([0.05, 0.3, 0.8, 0.95], dtype=np.float32)
    run = {"erfcx": S.erfcx, "ndtri": S.ndtri, "zeta": lambda v: S.zeta(v + 1.5, v),
           "polygamma": lambda v: S.polygamma(2, v)}[name]
    got = run(fnn.tensor(x))
    assert got.dtype == fnn.float32
    want = run(_t(x.astype(np.float64))).numpy()
    np.testing.assert_allclose(got.numpy(), want, rtol=2e-6)
    if name != "ndtri":
        assert run(fnn.tensor([1, 2])).dtype == fnn.float32
