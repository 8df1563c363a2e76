"""fnn.linalg.cholesky, cholesky_ex and the deprecated fnn.cholesky / Tensor.cholesky
against PyTorch's: values, gradients (symmetric, as torch's), gradients of gradients,
upper=, batches, non-contiguous input, float32, errors and info; on opencl against cpu."""

import numpy as np
import pytest

import fastnn as fnn
from tests.ops.torch_compare import compare, torch

rng = np.random.default_rng(0)


def spd(*shape):
    """Symmetric positive-definite matrices (..., n, n)."""
    b = rng.normal(size=shape)
    return b @ np.swapaxes(b, -1, -2) + 0.5 * np.eye(shape[-1])


def lopsided(a, where):
    """a with one strict triangle changed: the side cholesky must not read."""
    out = a.copy()
    n = a.shape[-1]
    rows, cols = (np.triu_indices if where == "upper" else np.tril_indices)(n, 1 if
                                                                            where == "upper"
                                                                            else -1)
    out[..., rows, cols] += rng.normal(size=rows.shape)
    return out


CASES = [
    ("one", lambda m, a: m.linalg.cholesky(a), (spd(4, 4),)),
    ("batch", lambda m, a: m.linalg.cholesky(a), (spd(2, 3, 5, 5),)),
    ("upper", lambda m, a: m.linalg.cholesky(a, upper=True), (spd(3, 4, 4),)),
    ("reads lower only", lambda m, a: m.linalg.cholesky(a), (lopsided(spd(3, 4, 4), "upper"),)),
    ("upper reads upper only", lambda m, a: m.linalg.cholesky(a, upper=True),
     (lopsided(spd(2, 4, 4), "lower"),)),
    ("ex", lambda m, a: m.linalg.cholesky_ex(a).L, (spd(2, 3, 3),)),
    ("1x1", lambda m, a: m.linalg.cholesky(a), (spd(2, 1, 1),)),
    ("then a product", lambda m, a: m.linalg.cholesky(a) @ m.linalg.cholesky(a).mT,
     (spd(2, 4, 4),)),
]


@pytest.mark.parametrize("name,run,arrays", CASES, ids=[c[0] for c in CASES])
def test_values_and_symmetric_gradients_as_torch(name, run, arrays):
    compare(lambda *a: run(fnn, *a), lambda *a: run(torch, *a), *arrays, atol=1e-9)


def test_transposed_input_and_float32():
    compare(lambda a: fnn.linalg.cholesky(a), lambda a: torch.linalg.cholesky(a), spd(3, 4, 4),
            transposed=True, atol=1e-9)
    a = spd(2, 6, 6).astype(np.float32)
    got = fnn.linalg.cholesky(fnn.tensor(a))
    assert got.dtype == fnn.float32
    np.testing.assert_allclose(got.numpy(), np.linalg.cholesky(a.astype(np.float64)),
                               rtol=1e-4, atol=1e-5)


def test_gradients_of_gradients_as_torch():
    a = spd(2, 3, 3)
    w = rng.normal(size=a.shape)
    mine, theirs = fnn.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    (g,) = fnn.autograd.grad((fnn.linalg.cholesky(mine) * fnn.tensor(w)).sum(), mine,
                             create_graph=True)
    (h,) = torch.autograd.grad((torch.linalg.cholesky(theirs) * torch.tensor(w)).sum(), theirs,
                               create_graph=True)
    np.testing.assert_allclose(g.numpy(), h.detach().numpy(), atol=1e-10)
    (g ** 2).sum().backward()
    (h ** 2).sum().backward()
    np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), atol=1e-9)


def test_finite_differences_through_a_symmetric_parametrisation():
    """Independent of torch: d/dB of sum(w * cholesky(B B^T + I)) by central differences."""
    b, w = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))

    def f(values):
        return float((np.linalg.cholesky(values @ values.T + np.eye(3)) * w).sum())

    leaf = fnn.tensor(b, requires_grad=True)
    (fnn.linalg.cholesky(leaf @ leaf.T + fnn.eye(3, dtype=fnn.float64)) * fnn.tensor(w)
     ).sum().backward()
    eps, numeric = 1e-6, np.zeros_like(b)
    for i in np.ndindex(b.shape):
        step = np.zeros_like(b)
        step[i] = eps
        numeric[i] = (f(b + step) - f(b - step)) / (2 * eps)
    np.testing.assert_allclose(leaf.grad.numpy(), numeric, rtol=1e-6, atol=1e-8)


def test_not_positive_definite_raises_and_info_as_torch():
    bad = np.array([[[4.0, 2.0], [2.0, 3.0]], [[1.0, 2.0], [2.0, 1.0]]])
    assert fnn.linalg.cholesky_ex(fnn.tensor(bad)).info.numpy().tolist() == \
        torch.linalg.cholesky_ex(torch.tensor(bad)).info.numpy().tolist() == [0, 2]
    for a in (bad, bad[1]):
        with pytest.raises(torch.linalg.LinAlgError) as theirs:
            torch.linalg.cholesky(torch.tensor(a))
        with pytest.raises(fnn.linalg.LinAlgError) as mine:
            fnn.linalg.cholesky(fnn.tensor(a))
        assert str(mine.value) == str(theirs.value)
    with pytest.raises(fnn.linalg.LinAlgError, match="order 1"):
        fnn.linalg.cholesky_ex(fnn.tensor(-np.eye(2)), check_errors=True)
    with pytest.raises(RuntimeError, match="2 by 3 matrices"):
        fnn.linalg.cholesky(fnn.ones((2, 3)))


def test_the_deprecated_spellings_warn_and_agree():
    a = spd(4, 4)
    with pytest.warns(UserWarning, match="linalg.cholesky"):
        upper = fnn.cholesky(fnn.tensor(a), upper=True)
    with pytest.warns(UserWarning):
        lower = fnn.tensor(a).cholesky()
    np.testing.assert_allclose(upper.numpy(), np.linalg.cholesky(a).T, atol=1e-12)
    np.testing.assert_allclose(lower.numpy(), np.linalg.cholesky(a), atol=1e-12)


def test_opencl_matches_cpu():
    if not any(r.name == "opencl" and r.available for r in fnn.backends()):
        pytest.skip("no opencl device")
    a = spd(2, 5, 5).astype(np.float32)
    on = {d: fnn.tensor(a, device=d, requires_grad=True) for d in ("cpu", "opencl")}
    for x in on.values():
        fnn.linalg.cholesky(x).sum().backward()
    np.testing.assert_allclose(fnn.linalg.cholesky(on["opencl"]).numpy(),
                               fnn.linalg.cholesky(on["cpu"]).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(on["opencl"].grad.numpy(), on["cpu"].grad.numpy(),
                               rtol=1e-4, atol=1e-5)


def test_inside_fnn_compile_a_failed_factor_is_nan_as_invs():
    """A replay cannot read the pivots back to raise (as inv's): the matrix that is not
    positive-definite gets a NaN factor, the others equal the eager one."""
    goods = [spd(2, 4, 4) for _ in range(3)]
    step = fnn.compile(lambda a: fnn.linalg.cholesky(a) * 1.0)
    for good in goods:  # record, check, replay
        np.testing.assert_allclose(step(fnn.tensor(good)).numpy(), np.linalg.cholesky(good),
                                   atol=1e-12)
    out = step(fnn.tensor(np.stack([goods[0][0], -np.eye(4)]))).numpy()
    np.testing.assert_allclose(out[0], np.linalg.cholesky(goods[0][0]), atol=1e-12)
    assert np.isnan(out[1]).all()
    assert step.stats.replayed >= 2
