"""fnn.func.jacrev, jacfwd and hessian against torch.func and finite differences."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn import func as ffunc
from tests.func.helpers import (
    X3,
    Y23,
    assert_tree_close,
    numeric_jacobian,
    ours,
    scalar_fn,
    theirs,
    vector_fn,
    vector_np,
)

torch = pytest.importorskip("torch")
TF = torch.func


def two_outputs(lib):  # (R^3, R^{2x3}) -> {"a": R^2, "b": R^{2x3}}
    return lambda x, y: {"a": (y * x).sum(1), "b": lib.tanh(y) * x[0] ** 2}


@pytest.mark.parametrize("name", ["jacrev", "jacfwd"])
def test_jacobian_of_a_vector_function_matches_torch_and_differences(name):
    got = getattr(ffunc, name)(vector_fn(fnn))(ours(X3))
    want = getattr(TF, name)(vector_fn(torch))(theirs(torch, X3))
    assert_tree_close(got, want)
    np.testing.assert_allclose(got.numpy(), numeric_jacobian(vector_np, X3), rtol=1e-7)
    assert not got.requires_grad


@pytest.mark.parametrize("name", ["jacrev", "jacfwd"])
@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1, -2)])
def test_jacobian_pytree_outputs_and_argnums_match_torch(name, argnums):
    got = getattr(ffunc, name)(two_outputs(fnn), argnums=argnums)(ours(X3), ours(Y23))
    # torch 2.13's jacfwd gives wrong values for a negative entry of a tuple argnums
    reference = TF.jacrev if argnums == (1, -2) else getattr(TF, name)
    want = reference(two_outputs(torch), argnums=argnums)(theirs(torch, X3),
                                                          theirs(torch, Y23))
    assert_tree_close(got, want)


@pytest.mark.parametrize("name", ["jacrev", "jacfwd"])
def test_jacobian_has_aux(name):
    def f(lib):
        return lambda x: (lib.sin(x) * x, (x.sum(), x * 2))

    got, aux = getattr(ffunc, name)(f(fnn), has_aux=True)(ours(X3))
    want, taux = getattr(TF, name)(f(torch), has_aux=True)(theirs(torch, X3))
    assert_tree_close((got, aux), (want, taux))
    with pytest.raises(RuntimeError, match="should be a tuple: \\(output, aux\\)"):
        getattr(ffunc, name)(fnn.sin, has_aux=True)(ours(X3))


def test_hessian_matches_torch_and_differences_of_the_gradient():
    got = ffunc.hessian(scalar_fn(fnn), argnums=(0, 1))(ours(X3), ours(Y23))
    want = TF.hessian(scalar_fn(torch), argnums=(0, 1))(theirs(torch, X3), theirs(torch, Y23))
    assert_tree_close(got, want)
    assert got[0][1].shape == (3, 2, 3) and got[1][1].shape == (2, 3, 2, 3)

    def grad_np(x):  # d/dx of sum(sin x * sum_0 y^2) + |x|^2 mean(y)
        return np.cos(x) * (Y23 ** 2).sum(0) + 2 * x * Y23.mean()

    np.testing.assert_allclose(got[0][0].numpy(), numeric_jacobian(grad_np, X3), rtol=1e-7)


def test_compositions_match_torch():
    x, tx = ours(X3), theirs(torch, X3)
    f, tf = (lambda v: (fnn.sin(v) * v ** 2).sum()), (lambda v: (torch.sin(v) * v ** 2).sum())
    assert_tree_close(ffunc.jacrev(ffunc.grad(f))(x), TF.jacrev(TF.grad(tf))(tx))
    assert_tree_close(ffunc.jacfwd(ffunc.jacrev(vector_fn(fnn)))(x),
                      TF.jacfwd(TF.jacrev(vector_fn(torch)))(tx))
    assert_tree_close(ffunc.hessian(f)(x), TF.hessian(tf)(tx))
    batch = np.stack([X3, X3 * 2, -X3])
    assert_tree_close(ffunc.vmap(ffunc.jacrev(vector_fn(fnn)))(ours(batch)),
                      TF.vmap(TF.jacrev(vector_fn(torch)))(theirs(torch, batch)))
    assert_tree_close(ffunc.vmap(ffunc.hessian(f))(ours(batch)),
                      TF.vmap(TF.hessian(tf))(theirs(torch, batch)))


def test_jacobian_keeps_the_graph_of_inputs_that_require_grad():
    x, tx = ours(X3, requires_grad=True), theirs(torch, X3, requires_grad=True)
    jac, tjac = ffunc.jacrev(vector_fn(fnn))(x), TF.jacrev(vector_fn(torch))(tx)
    assert jac.requires_grad
    (jac ** 2).sum().backward()
    (tjac ** 2).sum().backward()
    assert_tree_close(x.grad, tx.grad)
