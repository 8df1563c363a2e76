"""fnn.func.grad, grad_and_value, vjp and jvp against torch.func and finite differences."""

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


def test_grad_argnums_int_tuple_and_negative_match_torch():
    args = ours(X3), ours(Y23)
    targs = theirs(torch, X3), theirs(torch, Y23)
    for argnums in (0, 1, (0, 1), (1, 0), -1, (-2,)):
        got = ffunc.grad(scalar_fn(fnn), argnums=argnums)(*args)
        want = TF.grad(scalar_fn(torch), argnums=argnums)(*targs)
        assert_tree_close(got, want)


def test_grad_of_dict_argument_and_grad_and_value_with_aux():
    def loss(lib):
        def f(params, x):
            h = lib.tanh(x @ params["w"] + params["b"])
            return (h ** 2).mean(), {"h": h}
        return f

    w, b, x = np.linspace(-1, 1, 6).reshape(3, 2), np.array([0.1, -0.2]), X3
    params = {"w": ours(w), "b": ours(b)}
    g, (value, aux) = ffunc.grad_and_value(loss(fnn), has_aux=True)(params, ours(x))
    tg, (tvalue, taux) = TF.grad_and_value(loss(torch), has_aux=True)(
        {"w": theirs(torch, w), "b": theirs(torch, b)}, theirs(torch, x))
    assert_tree_close(g, tg)
    assert_tree_close(value, tvalue)
    assert_tree_close(aux["h"], taux["h"])
    assert not value.requires_grad and not aux["h"].requires_grad
    assert not any(t.requires_grad for t in g.values())
    g_only, aux_only = ffunc.grad(loss(fnn), has_aux=True)(params, ours(x))
    with pytest.raises(RuntimeError, match="Expected tensors, got unsupported type"):
        ffunc.grad(lambda p: (p.sum(), 3), has_aux=True)(ours(x))
    assert_tree_close(g_only, tg)
    assert params["w"].grad is None and not params["w"].requires_grad  # inputs untouched



def test_nested_grad_with_a_captured_outer_variable():
    # d/dy [ d/dx (x^2 y^3) at x=c ] = 2c * 3y^2: the inner grad must stay on the tape
    def outer(lib, grad):
        return lambda y: grad(lambda x: (x ** 2 * y ** 3).sum())(y * 0 + 1.5).sum()

    got = ffunc.grad(outer(fnn, ffunc.grad))(ours(0.7))
    want = TF.grad(outer(torch, TF.grad))(theirs(torch, 0.7))
    assert_tree_close(got, want)
    np.testing.assert_allclose(got.item(), 2 * 1.5 * 3 * 0.7 ** 2, rtol=1e-12)


def test_results_require_grad_only_when_the_callers_inputs_do():
    f = scalar_fn(fnn)
    x, y = ours(X3, requires_grad=True), ours(Y23)
    g = ffunc.grad(f)(x, y)
    assert g.requires_grad  # d/dx of the gradient: a Hessian-vector product
    (g * ours([1.0, 2.0, 3.0])).sum().backward()
    tx = theirs(torch, X3, requires_grad=True)
    tg = TF.grad(scalar_fn(torch))(tx, theirs(torch, Y23))
    (tg * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum().backward()
    assert_tree_close(x.grad, tx.grad)
    w = ours(X3, requires_grad=True)  # a captured parameter keeps its graph too
    assert ffunc.grad(lambda v: (v * w).sum())(ours(Y23[0])).requires_grad
    with fnn.no_grad():  # as PyTorch: grad ignores an outer no_grad, the results do not
        g = ffunc.grad(f)(x, y)
    assert not g.requires_grad and x.requires_grad




def test_vjp_matches_torch_with_tuple_outputs_and_is_reusable():
    def f(lib):
        return lambda x, y: ((y * x).sum(1), lib.tanh(y) * x[0])

    args, targs = (ours(X3), ours(Y23)), (theirs(torch, X3), theirs(torch, Y23))
    out, vjp_fn = ffunc.vjp(f(fnn), *args)
    tout, tvjp_fn = TF.vjp(f(torch), *targs)
    assert_tree_close(out, tout)
    for scale in (1.0, -2.5):
        ct = (ours(np.array([1.0, 2.0]) * scale), ours(Y23 * scale))
        got = vjp_fn(ct)
        assert isinstance(got, tuple) and len(got) == 2
        assert_tree_close(got, tvjp_fn((theirs(torch, [1.0 * scale, 2.0 * scale]),
                                         theirs(torch, Y23 * scale))))
    with pytest.raises(RuntimeError, match="Expected pytree structure of cotangents"):
        vjp_fn(ours([1.0, 2.0]))


def test_vjp_has_aux_and_vjp_fn_is_differentiable_in_the_cotangent():
    out, vjp_fn, aux = ffunc.vjp(lambda x: (vector_fn(fnn)(x), x.sum()), ours(X3), has_aux=True)
    assert aux.item() == pytest.approx(X3.sum())
    v = ours([0.5, -1.0, 2.0], requires_grad=True)
    (g,) = vjp_fn(v)
    assert g.requires_grad
    g.sum().backward()  # d/dv sum(J^T v) = J 1
    jac = numeric_jacobian(vector_np, X3)
    np.testing.assert_allclose(v.grad.numpy(), jac @ np.ones(3), rtol=1e-7)
    np.testing.assert_allclose(out.numpy(), vector_np(X3), rtol=1e-12)


def test_jvp_matches_torch_and_finite_differences():
    tangent = np.array([0.3, -0.2, 1.0])
    out, jv = ffunc.jvp(vector_fn(fnn), (ours(X3),), (ours(tangent),))
    tout, tjv = TF.jvp(vector_fn(torch), (theirs(torch, X3),), (theirs(torch, tangent),))
    assert_tree_close((out, jv), (tout, tjv))
    np.testing.assert_allclose(jv.numpy(), numeric_jacobian(vector_np, X3) @ tangent,
                               rtol=1e-7)
    assert not jv.requires_grad


def test_jvp_two_primals_tuple_output_and_aux():
    def f(lib):
        return lambda x, y: (((y * x).sum(1), lib.tanh(y) * x[0]), {"s": x.sum()})

    primals, tangents = (ours(X3), ours(Y23)), (ours(X3[::-1].copy()), ours(Y23 * 2))
    out, jv, aux = ffunc.jvp(f(fnn), primals, tangents, has_aux=True)
    tout, tjv, taux = TF.jvp(f(torch), (theirs(torch, X3), theirs(torch, Y23)),
                             (theirs(torch, X3[::-1].copy()), theirs(torch, Y23 * 2)),
                             has_aux=True)
    assert_tree_close((out, jv, aux), (tout, tjv, taux))
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        ffunc.jvp(vector_fn(fnn), ours(X3), ours(X3))
    with pytest.raises(RuntimeError, match="same python structure"):
        ffunc.jvp(vector_fn(fnn), (ours(X3),), (ours(X3), ours(X3)))


def test_linearize_matches_torch():
    out, jvp_fn = ffunc.linearize(vector_fn(fnn), ours(X3))
    tout, tjvp_fn = TF.linearize(vector_fn(torch), theirs(torch, X3))
    assert_tree_close(out, tout)
    for tangent in (np.array([1.0, 0.0, -1.0]), X3):
        assert_tree_close(jvp_fn(ours(tangent)), tjvp_fn(theirs(torch, tangent)))
