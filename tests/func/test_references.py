"""fnn.func against NumPy and finite differences (no PyTorch needed): derivatives of
known functions, Jacobians and Hessians by central differences, vmap against a NumPy
loop, per-sample gradients against their closed form, the errors, randomness, devices."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn import func as ffunc
from tests.func.helpers import (
    B43,
    X3,
    Y23,
    numeric_jacobian,
    ours,
    scalar_fn,
    vector_fn,
    vector_np,
)
from tests.ops.conftest import DEVICES


def test_jacobians_vjp_and_jvp_agree_with_central_differences():
    jac = numeric_jacobian(vector_np, X3)
    for transform in (ffunc.jacrev, ffunc.jacfwd):
        np.testing.assert_allclose(transform(vector_fn(fnn))(ours(X3)).numpy(), jac,
                                   rtol=1e-7, atol=1e-9)
    v = np.array([0.5, -1.0, 2.0])
    out, vjp_fn = ffunc.vjp(vector_fn(fnn), ours(X3))
    np.testing.assert_allclose(out.numpy(), vector_np(X3), rtol=1e-12)
    np.testing.assert_allclose(vjp_fn(ours(v))[0].numpy(), v @ jac, rtol=1e-7)
    _, jv = ffunc.jvp(vector_fn(fnn), (ours(X3),), (ours(v),))
    np.testing.assert_allclose(jv.numpy(), jac @ v, rtol=1e-7)


def test_hessian_of_a_two_argument_function_agrees_with_differences():
    def f_np(x, y):
        return (np.sin(x) * (y ** 2).sum(0)).sum() + (x ** 2).sum() * y.mean()

    got = ffunc.hessian(scalar_fn(fnn), argnums=(0, 1))(ours(X3), ours(Y23))
    flat = np.concatenate([X3, Y23.ravel()])

    def grad_np(z):
        return numeric_jacobian(lambda w: f_np(w[:3], w[3:].reshape(2, 3)), z, eps=1e-4)

    want = numeric_jacobian(grad_np, flat, eps=1e-4)  # 9 x 9
    np.testing.assert_allclose(got[0][0].numpy(), want[:3, :3], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[0][1].numpy().reshape(3, 6), want[:3, 3:], rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(got[1][1].numpy().reshape(6, 6), want[3:, 3:], rtol=1e-4,
                               atol=1e-5)


def test_vmap_agrees_with_a_numpy_loop_for_in_dims_and_out_dims():
    batch = np.arange(24.0).reshape(2, 3, 4) / 5
    w = np.linspace(-1, 1, 3)
    got = ffunc.vmap(lambda a, b: fnn.tanh(a @ b), in_dims=(2, None), out_dims=1)(
        ours(batch), ours(w))
    want = np.stack([np.tanh(batch[:, :, i] @ w) for i in range(4)], axis=1)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    got = ffunc.vmap(lambda a: (a.sum(), a * 2), in_dims=-2, out_dims=(0, -1))(ours(batch))
    np.testing.assert_allclose(got[0].numpy(), batch.sum(axis=(0, 2)), rtol=1e-12)
    np.testing.assert_allclose(got[1].numpy(), np.moveaxis(batch, 1, -1) * 2, rtol=1e-12)


def test_per_sample_gradients_of_a_linear_least_squares_loss_have_the_closed_form():
    w = np.array([0.3, -0.7, 1.1])
    targets = np.array([1.0, -2.0, 0.5, 0.0])

    def loss(weights, x, t):
        return ((x * weights).sum() - t) ** 2

    got = ffunc.vmap(ffunc.grad(loss), in_dims=(None, 0, 0))(ours(w), ours(B43),
                                                             ours(targets))
    want = 2 * (B43 @ w - targets)[:, None] * B43  # d/dw (x.w - t)^2 = 2 (x.w - t) x
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    hessians = ffunc.vmap(ffunc.hessian(loss), in_dims=(None, 0, 0))(
        ours(w), ours(B43), ours(targets))
    np.testing.assert_allclose(hessians.numpy(), 2 * B43[:, :, None] * B43[:, None, :],
                               rtol=1e-12)


def test_grad_of_grad_and_third_derivative_match_finite_differences():
    f = lambda x: fnn.sin(x) * x ** 2  # noqa: E731
    d1 = lambda v: np.cos(v) * v ** 2 + 2 * v * np.sin(v)  # noqa: E731
    d2 = lambda v: -np.sin(v) * v ** 2 + 4 * v * np.cos(v) + 2 * np.sin(v)  # noqa: E731
    for v in (0.3, -1.7, 2.2):
        x = ours(v)
        np.testing.assert_allclose(ffunc.grad(f)(x).item(), d1(v), rtol=1e-12)
        np.testing.assert_allclose(ffunc.grad(ffunc.grad(f))(x).item(), d2(v), rtol=1e-12)
        third = ffunc.grad(ffunc.grad(ffunc.grad(f)))(x).item()
        np.testing.assert_allclose(third, (d2(v + 1e-5) - d2(v - 1e-5)) / 2e-5, rtol=1e-6)


def test_grad_errors_use_torchs_wording():
    with pytest.raises(RuntimeError, match="to return a scalar Tensor, got tensor with 1 dims"):
        ffunc.grad(lambda x: x * 2)(ours(X3))
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a Tensor"):
        ffunc.grad(lambda x: 1.0)(ours(X3))
    with pytest.raises(RuntimeError, match="should be a tuple: \\(output, aux\\)"):
        ffunc.grad(lambda x: x.sum(), has_aux=True)(ours(X3))
    with pytest.raises(RuntimeError, match="Got argnum=2, but only 2 positional inputs"):
        ffunc.grad(scalar_fn(fnn), argnums=2)(ours(X3), ours(Y23))
    with pytest.raises(RuntimeError, match="argnums elements must be unique"):
        ffunc.grad(scalar_fn(fnn), argnums=(0, 0))(ours(X3), ours(Y23))
    with pytest.raises(RuntimeError, match="argnums must be int or Tuple"):
        ffunc.grad(scalar_fn(fnn), argnums=[0])(ours(X3), ours(Y23))


def test_grad_of_an_unused_input_is_zero():
    got = ffunc.grad(lambda x, y: (x ** 2).sum(), argnums=(0, 1))(ours(X3), ours(Y23))
    np.testing.assert_array_equal(got[1].numpy(), np.zeros((2, 3)))


@pytest.mark.parametrize("device", DEVICES)
def test_transforms_on_every_device(device):
    x = fnn.tensor(X3, dtype=fnn.float32, device=device)
    g = ffunc.grad(lambda v: (fnn.sin(v) * v).sum())(x)
    assert g.device == x.device
    np.testing.assert_allclose(g.cpu().numpy(), np.cos(X3) * X3 + np.sin(X3), rtol=1e-5)
    h = ffunc.grad(lambda v: ffunc.grad(lambda u: (u ** 3).sum())(v).sum())(x)
    np.testing.assert_allclose(h.cpu().numpy(), 6 * X3, rtol=1e-5)
    _, jv = ffunc.jvp(lambda v: v ** 2, (x,), (fnn.ones_like(x),))
    np.testing.assert_allclose(jv.cpu().numpy(), 2 * X3, rtol=1e-5)


def test_jacobian_of_an_output_independent_of_the_input_is_zero():
    got = ffunc.jacrev(lambda x, y: y * 2, argnums=0)(ours(X3), ours(Y23))
    np.testing.assert_array_equal(got.numpy(), np.zeros((2, 3, 3)))


def test_jacobian_errors():
    with pytest.raises(ValueError, match="`chunk_size` should be greater than 0"):
        ffunc.jacrev(fnn.sin, chunk_size=0)
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        ffunc.jacfwd(fnn.sin, randomness="sometimes")
    with pytest.raises(RuntimeError, match="return only Tensors"):
        ffunc.jacrev(lambda x: (x, 1.0))(ours(X3))
    with pytest.raises(RuntimeError, match="Got argnum=3, but only 1 positional inputs"):
        ffunc.jacrev(fnn.sin, argnums=3)(ours(X3))


@pytest.mark.parametrize("device", DEVICES)
def test_jacobians_on_every_device(device):
    x = fnn.tensor(X3, dtype=fnn.float32, device=device)
    jac = ffunc.jacrev(lambda v: fnn.sin(v) * v.sum())(x)
    assert jac.device == x.device
    want = np.diag(np.cos(X3) * X3.sum()) + np.sin(X3)[:, None]
    np.testing.assert_allclose(jac.cpu().numpy(), want, rtol=1e-5, atol=1e-6)
    hess = ffunc.hessian(lambda v: (v ** 3).sum())(x)
    np.testing.assert_allclose(hess.cpu().numpy(), np.diag(6 * X3), rtol=1e-5, atol=1e-6)


def test_randomness_modes():
    with pytest.raises(RuntimeError, match="called random operation while in randomness "
                                           "error mode"):
        ffunc.vmap(lambda x: x + fnn.randn(3))(ours(B43))
    with pytest.raises(RuntimeError, match="randomness error mode"):
        ffunc.vmap(lambda x: fnn.functional.dropout(x, 0.5))(ours(B43))
    assert fnn.randn(2).shape == (2,)  # the default generator is back
    fnn.manual_seed(3)
    same = ffunc.vmap(lambda x: x * 0 + fnn.randn(3, dtype=fnn.float64), randomness="same")(
        ours(B43)).numpy()
    np.testing.assert_array_equal(same, np.broadcast_to(same[0], same.shape))
    fnn.manual_seed(3)
    np.testing.assert_array_equal(fnn.randn(3, dtype=fnn.float64).numpy(), same[0])
    different = ffunc.vmap(lambda x: x * 0 + fnn.randn(3), randomness="different")(ours(B43))
    assert len({tuple(row) for row in different.numpy().round(6)}) == 4
    with pytest.raises(RuntimeError, match="Only allowed values for randomness are 'error', "
                                           "'different', or 'same'. Got sometimes"):
        ffunc.vmap(fnn.sin, randomness="sometimes")


@pytest.mark.parametrize("device", DEVICES)
def test_vmap_of_grad_on_every_device(device):
    x = fnn.tensor(B43, dtype=fnn.float32, device=device)
    w = fnn.tensor(X3, dtype=fnn.float32, device=device)
    got = ffunc.vmap(ffunc.grad(lambda v, u: (fnn.tanh(v * u)).sum()), in_dims=(0, None))(x, w)
    assert got.device == x.device and got.shape == (4, 3)
    np.testing.assert_allclose(got.cpu().numpy(), X3 / np.cosh(B43 * X3) ** 2, rtol=1e-5)
    moved = ffunc.vmap(lambda v: v * 2, in_dims=1, out_dims=1)(x)
    np.testing.assert_allclose(moved.cpu().numpy(), B43 * 2, rtol=1e-6)


def test_jvp_of_a_constant_is_zero_and_strict_refuses_it():
    out, jv = ffunc.jvp(lambda v: v.new_ones(2), (ours(X3),), (ours(X3),))
    np.testing.assert_array_equal(jv.numpy(), np.zeros(2))
    with pytest.raises(RuntimeError, match="The output of f is independent of the inputs"):
        ffunc.jvp(lambda v: v.new_ones(2), (ours(X3),), (ours(X3),), strict=True)
