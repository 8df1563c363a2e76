"""fastnn.autograd.functional (jacobian, hessian, vjp, jvp, vhp, hvp) against PyTorch's."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn.autograd import functional as AF

torch = pytest.importorskip("torch")
TF = torch.autograd.functional

RNG = np.random.default_rng(0)
X = RNG.normal(size=(3,))
Y = RNG.normal(size=(2, 3))
V3, V23 = RNG.normal(size=(3,)), RNG.normal(size=(2, 3))


def one(lib):  # R^3 -> R^3
    return lambda x: lib.sin(x) * x.sum()


def two(lib):  # (R^3, R^{2x3}) -> (R^2, R^{2x3})
    return lambda x, y: ((y * x).sum(1), lib.tanh(y) * x[0])


def scalar(lib):
    return lambda x, y: (lib.sin(x) * (y ** 2).sum(0)).sum()


def _np(value):
    if isinstance(value, tuple):
        return tuple(_np(v) for v in value)
    return value.detach().numpy()


def _same(got, want):
    assert type(got) is tuple if isinstance(want, tuple) else not isinstance(got, tuple)
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-10, atol=1e-12)


def _args(arrays, lib_tensor):
    return tuple(lib_tensor(a) for a in arrays) if isinstance(arrays, tuple) else lib_tensor(
        arrays)


CASES = [  # (name, fn maker, inputs, v)
    ("jacobian", one, X, None), ("jacobian", two, (X, Y), None),
    ("jacobian", one, (X,), None), ("hessian", scalar, (X, Y), None),
    ("hessian", lambda lib: lambda x: (lib.sin(x) * x.sum()).sum(), X, None),
    ("vjp", one, X, V3), ("vjp", two, (X, Y), (RNG.normal(size=(2,)), V23)),
    ("jvp", one, X, V3), ("jvp", two, (X, Y), (V3, V23)),
    ("vhp", scalar, (X, Y), (V3, V23)), ("hvp", scalar, (X, Y), (V3, V23)),
]


@pytest.mark.parametrize("name, maker, inputs, v", CASES)
def test_values_and_structure_match_torch(name, maker, inputs, v):
    ours, theirs = [], []
    for lib, module, out in ((fnn, AF, ours), (torch, TF, theirs)):
        args = [maker(lib), _args(inputs, lib.tensor)]
        if v is not None:
            args.append(_args(v, lib.tensor))
        out.append(getattr(module, name)(*args))
    _same(ours[0], theirs[0])


@pytest.mark.parametrize("name", ["jacobian", "vjp", "jvp", "hvp"])
def test_create_graph_lets_the_result_be_differentiated(name):
    results = []
    for lib, module in ((fnn, AF), (torch, TF)):
        x = lib.tensor(X, requires_grad=True)
        fn = one(lib) if name != "hvp" else (lambda t, lib=lib: (lib.sin(t) * t.sum()).sum())
        extra = () if name == "jacobian" else (lib.tensor(V3),)
        out = getattr(module, name)(fn, x, *extra, create_graph=True)
        out = out if name == "jacobian" else out[1]
        assert out.requires_grad
        (out * lib.tensor(np.arange(out.numel()).reshape(out.shape) * 1.0)).sum().backward()
        results.append(x.grad.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-10)


def test_without_create_graph_results_are_detached_and_the_caller_untouched():
    x = fnn.tensor(X, requires_grad=True)
    out, product = AF.vjp(one(fnn), x, fnn.tensor(V3))
    assert not out.requires_grad and not product.requires_grad and x.grad is None
    assert not AF.jacobian(one(fnn), x).requires_grad


def test_an_unused_input_gives_zeros_or_raises_in_strict_mode():
    def uses_first(x, y):
        return x * 2.0

    jac = AF.jacobian(uses_first, (fnn.tensor(X), fnn.tensor(V3)))
    np.testing.assert_array_equal(jac[1].numpy(), np.zeros((3, 3)))
    np.testing.assert_array_equal(jac[0].numpy(), 2 * np.eye(3))
    with pytest.raises(RuntimeError, match="independent of input 1"):
        AF.jacobian(uses_first, (fnn.tensor(X), fnn.tensor(V3)), strict=True)
    with pytest.raises(RuntimeError, match="independent of input 1"):
        AF.vjp(uses_first, (fnn.tensor(X), fnn.tensor(V3)), fnn.tensor(V3), strict=True)
    _, product = AF.vjp(uses_first, (fnn.tensor(X), fnn.tensor(V3)), fnn.tensor(V3))
    np.testing.assert_array_equal(product[1].numpy(), np.zeros(3))


def test_arguments_are_checked_as_torch():
    with pytest.raises(RuntimeError, match="v can only be None"):
        AF.vjp(one(fnn), fnn.tensor(X))
    with pytest.raises(RuntimeError, match="v has invalid size"):
        AF.jvp(one(fnn), fnn.tensor(X), fnn.tensor(V23))
    with pytest.raises(RuntimeError, match="tuple of invalid length"):
        AF.vhp(scalar(fnn), (fnn.tensor(X), fnn.tensor(Y)), (fnn.tensor(V3),))
    with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
        AF.jacobian(one(fnn), [fnn.tensor(X)])
    with pytest.raises(RuntimeError, match="should return a single Tensor"):
        AF.hessian(two(fnn), (fnn.tensor(X), fnn.tensor(Y)))
    with pytest.raises(RuntimeError, match="should contain a single element"):
        AF.hvp(one(fnn), fnn.tensor(X), fnn.tensor(V3))
    with pytest.raises(ValueError, match="Expected strategy"):
        AF.jacobian(one(fnn), fnn.tensor(X), strategy="sideways")
    with pytest.raises(NotImplementedError, match="vectorize=True"):
        AF.jacobian(one(fnn), fnn.tensor(X), strategy="forward-mode")
    # what PyTorch computes with vmap or forward mode, fastnn computes row by row: same values
    np.testing.assert_allclose(
        AF.jacobian(one(fnn), fnn.tensor(X), vectorize=True, strategy="forward-mode").numpy(),
        TF.jacobian(one(torch), torch.tensor(X)).numpy(), rtol=1e-12)


def test_scalar_input_needs_no_v_and_empty_outputs_work():
    out, d = AF.jvp(lambda t: t * t, fnn.tensor(3.0, dtype=fnn.float64))
    assert float(d) == 6.0 and float(out) == 9.0
    jac = AF.jacobian(lambda t: t[:0], fnn.tensor(X))
    assert jac.shape == (0, 3)
