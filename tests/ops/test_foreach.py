"""torch._foreach_*: every unary, binary and ternary form, out of place and in place,
against NumPy float64 and (where installed) torch; lists, scalars and scalar lists as the
second operand; the errors."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from fastnn.ops import foreach

A = [np.array([0.3, 0.9]), np.array([[0.2, 0.7], [0.45, 0.6]])]  # in every unary domain
B = [np.array([1.5, 2.5]), np.array([[1.25, 2.0], [3.0, 0.5]])]


def _lists(lib, arrays):
    return [lib.tensor(a.copy()) for a in arrays]


@pytest.mark.parametrize("name", foreach.UNARY)
def test_unary_forms_match_the_method_and_torch(name):
    out = getattr(fnn, f"_foreach_{name}")(_lists(fnn, A))
    xs = _lists(fnn, A)
    assert getattr(fnn, f"_foreach_{name}_")(xs) is None
    for got, written, a in zip(out, xs, A):
        want = getattr(fnn.tensor(a), name)().numpy()
        np.testing.assert_allclose(got.numpy(), want)
        np.testing.assert_allclose(written.numpy(), want)
    torch = pytest.importorskip("torch")
    theirs = getattr(torch, f"_foreach_{name}")(_lists(torch, A))
    for got, t in zip(out, theirs):
        np.testing.assert_allclose(got.numpy(), t.numpy(), rtol=1e-12, atol=1e-15)


def test_binary_and_ternary_forms_against_numpy():
    a, b = _lists(fnn, A), _lists(fnn, B)
    got = fnn._foreach_add(a, b, alpha=2)
    for g, x, y in zip(got, A, B):
        np.testing.assert_allclose(g.numpy(), x + 2 * y)
    for g, x, d in zip(fnn._foreach_div(a, [2.0, 4.0]), A, [2.0, 4.0]):
        np.testing.assert_allclose(g.numpy(), x / d)
    for g, x, v in zip(fnn._foreach_addcdiv(a, b, b, [0.5, 2.0]), A, [0.5, 2.0]):
        np.testing.assert_allclose(g.numpy(), x + v)
    for g, x, y in zip(fnn._foreach_lerp(a, b, 0.25), A, B):
        np.testing.assert_allclose(g.numpy(), x + 0.25 * (y - x))
    for g, x in zip(fnn._foreach_norm(a), A):
        assert g.shape == () and np.isclose(g.item(), np.linalg.norm(x.ravel()))
    fnn._foreach_mul_(a, 0.5)
    fnn._foreach_addcmul_(a, b, b, value=0.1)
    fnn._foreach_maximum_(a, 0.5)  # (no Tensor.maximum_: written back through copy_)
    for t, x, y in zip(a, A, B):
        np.testing.assert_allclose(t.numpy(), np.maximum(0.5 * x + 0.1 * y * y, 0.5))
    c = fnn._foreach_clone(a)
    fnn._foreach_zero_(c)
    assert all(not t.numpy().any() for t in c)
    fnn._foreach_copy_(c, b)
    for t, y in zip(c, B):
        np.testing.assert_array_equal(t.numpy(), y)


def test_binary_and_ternary_forms_match_torch():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (fnn, torch):
        a, b = _lists(lib, A), _lists(lib, B)
        out = []
        for name in foreach.BINARY:
            out += list(getattr(lib, f"_foreach_{name}")(a, b))
            out += list(getattr(lib, f"_foreach_{name}")(a, 0.75))
        out += list(lib._foreach_addcmul(a, b, b, value=0.3))
        out += list(lib._foreach_lerp(a, b, [0.2, 0.9]))
        c = lib._foreach_clone(a)
        lib._foreach_sub_(c, b, alpha=0.5)
        lib._foreach_lerp_(c, b, 0.3)
        lib._foreach_clamp_min_(c, 0.1)
        results.append([t.numpy() for t in out + list(c)])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_bad_arguments_are_named():
    a = _lists(fnn, A)
    with pytest.raises(TypeError, match="_foreach_add: expected a list or tuple of Tensors"):
        fnn._foreach_add(a[0], 1.0)
    with pytest.raises(ValueError, match="_foreach_mul_: 2 tensors but 3 operands"):
        fnn._foreach_mul_(a, [1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="element 1 is a float"):
        fnn._foreach_sqrt([a[0], 2.0])
    with pytest.raises(TypeError, match="expected a Tensor, a number or a list"):
        fnn._foreach_add(a, "x")
