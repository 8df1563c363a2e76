"""fnn.linalg's inv, inv_ex, solve, solve_ex, det, slogdet and the top-level and method
spellings (inverse, det, logdet, slogdet) against PyTorch's: values, shapes, dtypes,
gradients, gradients of gradients, errors; and the composite (Gauss-Jordan) against LAPACK."""

import fastnn_cpu
import numpy as np
import pytest

import fastnn as fnn
from fastnn.api import composite, registry
from tests.ops.torch_compare import compare, second_order, torch

rng = np.random.default_rng(0)


def mats(*shape):
    """Well-conditioned matrices with shuffled rows (partial pivoting must swap)."""
    a = 0.4 * rng.normal(size=shape) + 2.0 * np.eye(shape[-1])
    return a[..., rng.permutation(shape[-1]), :]


def n(*shape):
    return rng.normal(size=shape)


CASES = [
    ("inv", lambda m, a: m.linalg.inv(a), (mats(3, 3),)),
    ("inv batch", lambda m, a: m.linalg.inv(a), (mats(2, 3, 4, 4),)),
    ("inv_ex", lambda m, a: m.linalg.inv_ex(a).inverse, (mats(2, 3, 3),)),
    ("inverse", lambda m, a: m.inverse(a), (mats(3, 3),)),
    ("Tensor.inverse", lambda m, a: a.inverse(), (mats(2, 2, 2),)),
    ("det", lambda m, a: m.linalg.det(a), (mats(2, 4, 4),)),
    ("det top", lambda m, a: m.det(a), (mats(3, 3),)),
    ("Tensor.det", lambda m, a: a.det(), (mats(5, 1, 1),)),
    ("slogdet", lambda m, a: tuple(m.linalg.slogdet(a)), (mats(3, 3, 3),)),
    ("slogdet top", lambda m, a: tuple(m.slogdet(a)), (mats(3, 3),)),
    ("Tensor.slogdet", lambda m, a: tuple(a.slogdet()), (mats(2, 3, 3),)),
    ("logdet", lambda m, a: m.logdet(a), (np.abs(mats(2, 3, 3)),)),
    ("Tensor.logdet", lambda m, a: a.logdet(), (np.abs(mats(3, 3)) + np.eye(3),)),
    ("solve matrix", lambda m, a, b: m.linalg.solve(a, b), (mats(3, 3), n(3, 2))),
    ("solve vector", lambda m, a, b: m.linalg.solve(a, b), (mats(4, 4), n(4))),
    ("solve batch of vectors", lambda m, a, b: m.linalg.solve(a, b), (mats(2, 3, 3), n(2, 3))),
    ("solve vector broadcast", lambda m, a, b: m.linalg.solve(a, b), (mats(2, 3, 3), n(3))),
    ("solve batch broadcast", lambda m, a, b: m.linalg.solve(a, b),
     (mats(2, 1, 3, 3), n(4, 3, 2))),
    ("solve A broadcast", lambda m, a, b: m.linalg.solve(a, b), (mats(3, 3), n(2, 3, 5))),
    ("solve left=False", lambda m, a, b: m.linalg.solve(a, b, left=False),
     (mats(2, 3, 3), n(2, 4, 3))),
    ("solve_ex", lambda m, a, b: m.linalg.solve_ex(a, b).result, (mats(2, 3, 3), n(2, 3, 1))),
]


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("name,fn,args", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(name, fn, args, transposed):
    compare(lambda *t: fn(fnn, *t), lambda *t: fn(torch, *t), *args, transposed=transposed,
            atol=1e-9)


@pytest.mark.parametrize("device", ["cpu", "opencl"])
def test_float32_on_each_backend_matches_torch(device):
    if device != "cpu" and not any(r.name == device and r.available for r in fnn.backends()):
        pytest.skip(f"{device} is not usable here")
    a, b = mats(2, 4, 4).astype(np.float32), n(2, 4, 3).astype(np.float32)
    with fnn.use(device):
        x = fnn.linalg.solve(fnn.tensor(a), fnn.tensor(b))
        inverse = fnn.tensor(a).inverse()
        det = fnn.linalg.det(fnn.tensor(a))
    for got, want in [(x, torch.linalg.solve(torch.tensor(a), torch.tensor(b))),
                      (inverse, torch.linalg.inv(torch.tensor(a))),
                      (det, torch.linalg.det(torch.tensor(a)))]:
        assert got.dtype == fnn.float32 and str(got.device).startswith(device)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-5, atol=2e-5)


def test_half_precision_is_computed_in_float32():
    a = fnn.tensor(mats(3, 3), dtype=fnn.float16, requires_grad=True)
    out = fnn.linalg.inv(a)
    assert out.dtype == fnn.float16
    want = np.linalg.inv(a.detach().numpy().astype(np.float64))
    np.testing.assert_allclose(out.numpy().astype(np.float64), want, rtol=2e-3, atol=2e-3)
    fnn.linalg.det(a).backward()
    assert a.grad.dtype == fnn.float16
    x = fnn.linalg.solve(a, fnn.ones(3, dtype=fnn.float16))
    assert x.dtype == fnn.float16


@pytest.mark.parametrize("name,fn,args", [
    ("inv", lambda m, a: m.linalg.inv(a), (mats(2, 3, 3),)),
    ("det", lambda m, a: m.linalg.det(a), (mats(3, 3),)),
    ("logabsdet", lambda m, a: m.linalg.slogdet(a)[1], (mats(2, 3, 3),)),
    ("solve", lambda m, a, b: m.linalg.solve(a, b), (mats(3, 3), n(3, 2))),
    ("solve broadcast vector", lambda m, a, b: m.linalg.solve(a, b), (mats(2, 3, 3), n(3))),
], ids=lambda v: v if isinstance(v, str) else "")
def test_gradients_of_gradients_match_torch(name, fn, args):
    got = second_order(fnn, fn, args)
    want = second_order(torch, fn, args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("name,fn", [
    ("det", lambda m, a: m.linalg.det(a)), ("logdet", lambda m, a: m.logdet(a)),
    ("logabsdet", lambda m, a: m.linalg.slogdet(a)[1]),
], ids=lambda v: v if isinstance(v, str) else "")
def test_forward_mode_products_of_determinants_match_torch(name, fn):
    """jvp (a vjp differentiated with respect to its zero cotangent) gave a zero tangent
    for det and slogdet: their backward masked a zero cotangent."""
    a, tangent = mats(2, 3, 3), n(2, 3, 3)
    got = fnn.func.jvp(lambda x: fn(fnn, x), (fnn.tensor(a),), (fnn.tensor(tangent),))
    want = torch.func.jvp(lambda x: fn(torch, x), (torch.tensor(a),), (torch.tensor(tangent),))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10)
    _, got = fnn.autograd.functional.jvp(lambda x: fn(fnn, x), fnn.tensor(a), fnn.tensor(tangent))
    np.testing.assert_allclose(got.numpy(), want[1].numpy(), rtol=1e-10)


# ---------------------------------------------------------------- singular matrices


def singular_batch():
    """Singular matrices whose LU with partial pivoting is exact: A = P L U with L's
    multipliers in {0, +-1/4, +-1/2} (below 1, so pivoting finds P again), U's entries
    small integers and one zero on U's diagonal; every step is dyadic arithmetic, so
    LAPACK, torch's LU and the composite meet the same exact zero pivot (a rank-deficient
    product of random integers left rounding residues instead, which each library met
    differently). Matrix 2 is the identity; matrix 3 has a zero column."""
    draw = np.random.default_rng(7)
    batch = np.empty((6, 4, 4))
    for i in range(6):
        lower = np.tril(draw.choice([-0.5, -0.25, 0.0, 0.25, 0.5], size=(4, 4)), -1) + np.eye(4)
        upper = np.triu(draw.integers(-2, 3, size=(4, 4)).astype(np.float64), 1)
        upper += np.diag(draw.choice([-2.0, -1.0, 1.0, 2.0], size=4))
        upper[i % 4, i % 4] = 0.0
        if i == 3:
            upper[:, 1] = 0.0  # A's column 1 is zero
        batch[i] = (lower @ upper)[draw.permutation(4)]
    batch[2] = np.eye(4)
    return batch


def test_info_is_lapacks_on_the_composite_and_the_backend():
    a = singular_batch()
    want = torch.linalg.inv_ex(torch.tensor(a)).info.numpy()
    assert want[2] == 0 and (want[[0, 1, 3, 4, 5]] > 0).all()
    assert fnn.linalg.inv_ex(fnn.tensor(a)).info.numpy().tolist() == want.tolist()
    b = np.broadcast_to(np.eye(4), a.shape)
    _, info = composite.linalg_solve(registry.hook_namespace(fastnn_cpu), a, b)
    assert info.dtype == np.int32 and info.tolist() == want.tolist()
    assert fnn.linalg.solve_ex(fnn.tensor(a), fnn.tensor(n(6, 4))).info.tolist() == \
        torch.linalg.solve_ex(torch.tensor(a), torch.tensor(n(6, 4))).info.tolist()


def test_composite_matches_lapack_on_good_matrices():
    ops = registry.hook_namespace(fastnn_cpu)
    for shape in [(1, 1), (5, 5), (2, 3, 6, 6)]:
        a, b = mats(*shape), n(*shape[:-1], 3)
        x, info = composite.linalg_solve(ops, a, b)
        np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-12, atol=1e-12)
        assert not info.any()
        sign, logabs = composite.linalg_slogdet(ops, a)
        want_sign, want_logabs = np.linalg.slogdet(a)
        np.testing.assert_array_equal(sign, want_sign)
        np.testing.assert_allclose(logabs, want_logabs, rtol=1e-12, atol=1e-13)


def test_singular_matrices_raise_as_torch_does():
    a = singular_batch()
    for op in ("inv", "solve"):
        args = (a,) if op == "inv" else (a, np.ones(4))
        with pytest.raises(torch.linalg.LinAlgError) as theirs:
            getattr(torch.linalg, op)(*map(torch.tensor, args))
        with pytest.raises(fnn.linalg.LinAlgError) as mine:
            getattr(fnn.linalg, op)(*map(fnn.tensor, args))
        assert isinstance(mine.value, RuntimeError)
        assert str(mine.value) == str(theirs.value).removeprefix("torch.")
    with pytest.raises(fnn.linalg.LinAlgError, match="diagonal element 2 is zero"):
        fnn.inverse(fnn.tensor([[1.0, 2.0], [2.0, 4.0]]))
    with pytest.raises(fnn.linalg.LinAlgError, match=r"\(Batch element 0\)"):
        fnn.linalg.inv_ex(fnn.tensor(a), check_errors=True)


def test_singular_determinants_are_zero_with_torchs_gradient():
    a = singular_batch()
    leaf, theirs = fnn.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    det = fnn.linalg.det(leaf)
    np.testing.assert_array_equal(det.numpy() == 0, np.arange(6) != 2)
    det.sum().backward()
    torch.linalg.det(theirs).sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), theirs.grad.numpy(), atol=1e-12)
    sign, logabs = fnn.slogdet(fnn.tensor(a))
    want = torch.slogdet(torch.tensor(a))
    np.testing.assert_array_equal(sign.numpy(), want.sign.numpy())
    np.testing.assert_array_equal(logabs.numpy(), want.logabsdet.numpy())
    np.testing.assert_array_equal(fnn.logdet(fnn.tensor(a)).numpy(),
                                  torch.logdet(torch.tensor(a)).numpy())


def test_empty_inputs_as_torch():
    for shape in [(0, 3, 3), (2, 0, 0), (0, 0)]:
        a = np.zeros(shape)
        for op in ("inv", "det"):
            got = getattr(fnn.linalg, op)(fnn.tensor(a))
            want = getattr(torch.linalg, op)(torch.tensor(a))
            assert tuple(got.shape) == tuple(want.shape)
            np.testing.assert_array_equal(got.numpy(), want.numpy())
        got = fnn.linalg.solve(fnn.tensor(a), fnn.zeros(*shape[:-1], 2, dtype=fnn.float64))
        assert tuple(got.shape) == shape[:-1] + (2,)


# ---------------------------------------------------------------- bad inputs


@pytest.mark.parametrize("call", [
    lambda m: m.linalg.inv(m.ones(3)),
    lambda m: m.linalg.det(m.ones(2, 3)),
    lambda m: m.logdet(m.ones(2, 3, 4)),
    lambda m: m.linalg.slogdet(m.ones(2, 2, dtype=m.int64)),
    lambda m: m.linalg.solve(m.eye(2), m.ones(2, dtype=m.float64)),
    lambda m: m.linalg.solve(m.eye(2), m.ones(2, dtype=m.float16)),
    lambda m: m.linalg.solve(m.eye(2), m.ones(3)),
    lambda m: m.linalg.solve(m.eye(2), m.ones(3, 2)),
    lambda m: m.linalg.solve(m.eye(3), m.ones(3), left=False),  # torch: B is a 3 x 1 column
    lambda m: m.linalg.solve(m.ones(2, 1, 1), m.ones(2, 1), left=False),
    lambda m: m.linalg.solve(m.eye(3), m.ones(2, 4), left=False),
])
def test_bad_inputs_raise_runtime_errors_like_torch(call):
    with pytest.raises(RuntimeError) as theirs:
        call(torch)
    with pytest.raises(RuntimeError) as mine:
        call(fnn)
    # the same first clause (fastnn names dtypes as float64, torch as Double)
    head = str(theirs.value).split(". Got")[0].split(", but found")[0]
    assert str(mine.value).startswith(head.split(" (")[0]), (str(mine.value), head)


def test_compiled_steps_replay_and_mark_singular_matrices_nan():
    weight = fnn.tensor(mats(3, 3), requires_grad=True)

    def step(b):
        loss = (fnn.linalg.solve(weight, b) ** 2).sum() + fnn.linalg.det(weight)
        loss.backward()
        return loss

    compiled, b = fnn.compile(step), fnn.tensor(n(3, 2))
    eager = step(b).item()
    want = weight.grad.numpy().copy()
    for _ in range(3):  # record, check, replay
        weight.grad = None
        assert compiled(b).item() == pytest.approx(eager, rel=1e-12)
        np.testing.assert_allclose(weight.grad.numpy(), want, rtol=1e-12)
    inverse = fnn.compile(fnn.linalg.inv)
    for scale in (1.0, 2.0, 3.0):
        np.testing.assert_allclose(inverse(fnn.eye(2) * scale).numpy(), np.eye(2) / scale)
    # a replay cannot raise from the device's info: the singular matrix's inverse is NaN
    assert np.isnan(inverse(fnn.tensor([[1.0, 2.0], [2.0, 4.0]])).numpy()).all()
