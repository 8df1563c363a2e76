"""fnn.linalg's qr, eigh, eigvalsh, svd, svdvals and torch's qr/svd spellings against
PyTorch's: values, shapes, dtypes, gradients and gradients of gradients. Eigenvectors and
singular vectors are unique only up to sign, so they are compared through gauge-invariant
functions (their squares, u_i v_i^T, reconstructions); QR's signs are LAPACK's everywhere
and compared as they are. The composites (Householder, Jacobi) run on opencl and, here,
on the NumPy backend's primitives against LAPACK."""

import fastnn_cpu
import numpy as np
import pytest

import fastnn as fnn
from fastnn.api import composite, registry
from tests.ops.conftest import DEVICES
from tests.ops.torch_compare import compare, torch

rng = np.random.default_rng(0)


def n(*shape):
    return rng.normal(size=shape)


def sym(*shape):
    a = n(*shape)
    return a + np.swapaxes(a, -1, -2)


def _eigh_invariants(m, a, uplo="L"):
    w, v = m.linalg.eigh(a, UPLO=uplo)
    return w, v * v, v[..., :1, :] * v[..., 1:2, :]


def _svd_invariants(m, a, full=False):
    u, s, vh = m.linalg.svd(a, full_matrices=full)
    k = s.shape[-1]
    u, vh = u[..., :, :k], vh[..., :k, :]
    return s, u * u, vh * vh, u[..., :1, :] * vh[..., :, :1].mT


CASES = [
    ("qr square", lambda m, a: tuple(m.linalg.qr(a)), (n(4, 4),)),
    ("qr tall batch", lambda m, a: tuple(m.linalg.qr(a)), (n(2, 5, 3),)),
    ("qr wide", lambda m, a: tuple(m.linalg.qr(a)), (n(2, 3, 5),)),
    ("qr complete wide", lambda m, a: tuple(m.linalg.qr(a, mode="complete")), (n(3, 4),)),
    ("qr complete square", lambda m, a: tuple(m.linalg.qr(a, mode="complete")), (n(3, 3),)),
    ("qr only R", lambda m, a: m.linalg.qr(a)[1], (n(2, 4, 3),)),
    ("qr only Q", lambda m, a: m.linalg.qr(a)[0], (n(3, 5),)),
    ("Tensor.qr", lambda m, a: tuple(a.qr()), (n(4, 2),)),
    ("eigh", _eigh_invariants, (sym(4, 4),)),
    ("eigh batch", _eigh_invariants, (sym(2, 3, 5, 5),)),
    ("eigh upper", lambda m, a: _eigh_invariants(m, a, "U"), (n(2, 4, 4),)),
    ("eigh lower of a general matrix", _eigh_invariants, (n(3, 3),)),
    ("eigvalsh", lambda m, a: m.linalg.eigvalsh(a), (sym(2, 4, 4),)),
    ("eigvalsh upper", lambda m, a: m.linalg.eigvalsh(a, UPLO="U"), (n(4, 4),)),
    ("svd square", _svd_invariants, (n(4, 4),)),
    ("svd tall", _svd_invariants, (n(2, 5, 3),)),
    ("svd wide", _svd_invariants, (n(2, 3, 5),)),
    ("svd full tall", lambda m, a: _svd_invariants(m, a, True), (n(5, 3),)),
    ("svd full wide", lambda m, a: _svd_invariants(m, a, True), (n(3, 5),)),
    ("svd reconstruction", lambda m, a: (lambda u, s, vh: (u * s[..., None, :]) @ vh)(
        *m.linalg.svd(a, full_matrices=False)), (n(2, 4, 3),)),
    ("svdvals", lambda m, a: m.linalg.svdvals(a), (n(2, 3, 4),)),
    ("svd values only", lambda m, a: m.linalg.svd(a)[1], (n(4, 3),)),
]


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("name,fn,args", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(name, fn, args, transposed):
    compare(lambda *t: fn(fnn, *t), lambda *t: fn(torch, *t), *args, transposed=transposed,
            atol=1e-9)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_each_backend_matches_torch(device, dtype):
    tol = 2e-5 if dtype == "float32" else 1e-11
    a, s = n(2, 5, 3).astype(dtype), sym(3, 4, 4).astype(dtype)
    with fnn.use(device):
        for name, fn, arg in [("qr", lambda m, x: tuple(m.linalg.qr(x)), a),
                              ("qr complete", lambda m, x: tuple(m.linalg.qr(x, "complete")), a),
                              ("eigh", _eigh_invariants, s),
                              ("svd", _svd_invariants, a),
                              ("svd wide", _svd_invariants, a.swapaxes(-1, -2).copy()),
                              ("svd full", lambda m, x: _svd_invariants(m, x, True), a)]:
            got = fn(fnn, fnn.tensor(arg))
            want = fn(torch, torch.tensor(arg))
            for g, w in zip(got, want):
                assert g.dtype == getattr(fnn, dtype) and str(g.device).startswith(device)
                np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=tol, atol=tol,
                                           err_msg=name)


@pytest.mark.parametrize("device", DEVICES)
def test_orthogonality_and_reconstruction(device):
    a = fnn.tensor(n(2, 6, 4), device=device)
    u, s, vh = fnn.linalg.svd(a)
    eye6 = np.eye(6)
    np.testing.assert_allclose((u.mT @ u).numpy(), np.broadcast_to(eye6, (2, 6, 6)),
                               atol=1e-13)
    np.testing.assert_allclose(((u[..., :4] * s[..., None, :]) @ vh).numpy(), a.numpy(),
                               atol=1e-13)
    assert np.all(np.diff(s.numpy(), axis=-1) <= 0)
    q, r = fnn.linalg.qr(a, mode="complete")
    np.testing.assert_allclose((q @ r).numpy(), a.numpy(), atol=1e-13)
    np.testing.assert_array_equal(np.tril(r.numpy(), -1), 0.0)
    h = fnn.tensor(sym(3, 3), device=device)
    w, v = fnn.linalg.eigh(h)
    assert np.all(np.diff(w.numpy()) >= 0)
    np.testing.assert_allclose(((v * w) @ v.mT).numpy(), h.numpy(), atol=1e-13)


def test_rank_deficient_svd_completes_the_bases():
    a = n(5, 2) @ n(2, 4)
    for device in DEVICES:
        u, s, vh = fnn.linalg.svd(fnn.tensor(a, device=device))
        np.testing.assert_allclose(s.numpy(), np.linalg.svd(a)[1], atol=1e-13)
        np.testing.assert_allclose((u.mT @ u).numpy(), np.eye(5), atol=1e-13)
        np.testing.assert_allclose((vh @ vh.mT).numpy(), np.eye(4), atol=1e-13)
        np.testing.assert_allclose(((u[:, :4] * s) @ vh).numpy(), a, atol=1e-13)
    zero = fnn.linalg.svd(fnn.zeros(3, 2, dtype=fnn.float64))
    assert zero.S.numpy().tolist() == [0.0, 0.0]
    np.testing.assert_allclose((zero.U.mT @ zero.U).numpy(), np.eye(3), atol=1e-15)


def test_old_spellings_match_torch():
    a = n(2, 4, 3)
    got, want = fnn.svd(fnn.tensor(a)), torch.svd(torch.tensor(a))
    assert got.V.shape == tuple(want.V.shape) == (2, 3, 3) and got.U.shape == (2, 4, 3)
    rebuilt = (got.U * got.S[..., None, :]) @ got.V.mT
    np.testing.assert_allclose(rebuilt.numpy(), a, atol=1e-13)
    got, want = fnn.tensor(a).svd(some=False), torch.tensor(a).svd(some=False)
    assert got.U.shape == tuple(want.U.shape) == (2, 4, 4)
    got, want = fnn.svd(fnn.tensor(a), compute_uv=False), torch.svd(torch.tensor(a),
                                                                   compute_uv=False)
    for g, w in zip(got, want):
        assert g.shape == tuple(w.shape)
        np.testing.assert_allclose(g.numpy(), w.numpy(), atol=1e-13)
    q, r = fnn.qr(fnn.tensor(a), some=False)
    tq, tr = torch.qr(torch.tensor(a), some=False)
    np.testing.assert_allclose(q.numpy(), tq.numpy(), atol=1e-13)
    np.testing.assert_allclose(r.numpy(), tr.numpy(), atol=1e-13)


def test_named_fields_modes_and_empty_inputs():
    a = fnn.tensor(n(4, 3))
    assert fnn.linalg.qr(a).Q.shape == (4, 3) and fnn.linalg.qr(a, "r").Q.shape == (0,)
    assert fnn.linalg.eigh(fnn.tensor(sym(3, 3))).eigenvectors.shape == (3, 3)
    assert fnn.linalg.svd(a).Vh.shape == (3, 3)
    for shape in [(0, 3, 2), (2, 0, 3), (2, 3, 0)]:
        x = np.zeros(shape)
        for got, want in [(fnn.linalg.qr(fnn.tensor(x), "complete"),
                           torch.linalg.qr(torch.tensor(x), "complete")),
                          (fnn.linalg.svd(fnn.tensor(x)), torch.linalg.svd(torch.tensor(x))),
                          (fnn.linalg.svd(fnn.tensor(x), False),
                           torch.linalg.svd(torch.tensor(x), False))]:
            assert [tuple(g.shape) for g in got] == [tuple(w.shape) for w in want], shape
    w, v = fnn.linalg.eigh(fnn.zeros(2, 0, 0))
    assert w.shape == (2, 0) and v.shape == (2, 0, 0)


def test_errors_match_torch():
    with pytest.raises(RuntimeError, match="unrecognized mode"):
        fnn.linalg.qr(fnn.ones(2, 2), mode="full")
    with pytest.raises(RuntimeError, match="square"):
        fnn.linalg.eigh(fnn.ones(2, 3))
    with pytest.raises(RuntimeError, match="UPLO"):
        fnn.linalg.eigh(fnn.ones(2, 2), UPLO="X")
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        fnn.linalg.svd(fnn.ones(3))
    with pytest.raises(RuntimeError, match="floating point"):
        fnn.linalg.qr(fnn.ones(2, 2, dtype=fnn.int64))
    a = fnn.tensor(n(4, 2), requires_grad=True)
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete'"):
        fnn.linalg.qr(a, "complete").Q.sum().backward()
    with pytest.raises(RuntimeError, match="mode='r'"):
        fnn.linalg.qr(a, "r").R.sum().backward()


def _second_order(lib, fn, arrays):
    leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
    outs = fn(lib, *leaves)
    outs = outs if isinstance(outs, tuple) else (outs,)
    loss = sum((o * lib.tensor(np.linspace(-1.0, 1.0, o.numel()).reshape(tuple(o.shape))))
               .sum() for o in outs)
    grads = (fnn if lib is fnn else torch).autograd.grad(loss, leaves, create_graph=True)
    total = sum((g * lib.tensor(np.cos(np.arange(g.numel())).reshape(tuple(g.shape)))).sum()
                for g in grads)
    total.backward()
    return [leaf.grad.numpy() for leaf in leaves]


@pytest.mark.parametrize("name,fn,args", [
    ("qr", lambda m, a: tuple(m.linalg.qr(a)), (n(4, 3),)),
    ("qr wide", lambda m, a: tuple(m.linalg.qr(a)), (n(2, 4),)),
    ("eigh", _eigh_invariants, (sym(3, 3),)),
    ("svd", _svd_invariants, (n(2, 4, 3),)),
    ("svdvals", lambda m, a: m.linalg.svdvals(a), (n(3, 4),)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_gradients_of_gradients_match_torch(name, fn, args):
    for g, w in zip(_second_order(fnn, fn, args), _second_order(torch, fn, args)):
        np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-9)


def test_gradcheck_against_finite_differences():
    a = fnn.tensor(n(4, 3), requires_grad=True)
    assert fnn.autograd.gradcheck(lambda x: fnn.linalg.qr(x).R, (a,))
    assert fnn.autograd.gradcheck(lambda x: _svd_invariants(fnn, x)[1], (a,))
    h = fnn.tensor(sym(3, 3), requires_grad=True)
    assert fnn.autograd.gradcheck(lambda x: fnn.linalg.eigvalsh(x + x.mT), (h,))


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-13), ("float32", 3e-6)])
@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 6, 4), (2, 4, 6), (2, 2, 8, 8)])
def test_composites_match_lapack(shape, dtype, tol):
    ops = registry.hook_namespace(fastnn_cpu)
    a = n(*shape).astype(dtype)
    with np.errstate(over="ignore"):  # a Jacobi angle's 1 / tiny is inf on purpose (t = 0)
        _check_composites(ops, a, tol)


def _check_composites(ops, a, tol):
    for mode in ("reduced", "complete"):  # the same signs as LAPACK's
        for got, want in zip(composite.linalg_qr(ops, a, mode), np.linalg.qr(a, mode)):
            assert got.dtype == a.dtype and got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    for full in (False, True):
        u, s, vh = composite.linalg_svd(ops, a, full)
        want = np.linalg.svd(a, full)
        assert [x.shape for x in (u, s, vh)] == [x.shape for x in want]
        np.testing.assert_allclose(s, want[1], rtol=tol, atol=tol)
        k = s.shape[-1]
        np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a,
                                   rtol=tol, atol=tol * 4)
    if a.shape[-1] == a.shape[-2]:
        h = a + np.swapaxes(a, -1, -2)
        w, v = composite.linalg_eigh(ops, h)
        np.testing.assert_allclose(w, np.linalg.eigh(h)[0], rtol=tol, atol=tol * 4)
        np.testing.assert_allclose((v * w[..., None, :]) @ np.swapaxes(v, -1, -2), h,
                                   rtol=tol, atol=tol * 8)
