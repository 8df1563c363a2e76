"""Every primitive on the NumPy backend against NumPy float64 and finite differences.

(The conformance suite runs a wider version of this on every backend; these
cases pin the core's own semantics: promotion, broadcasting, views, size 0.)
"""

import math

import numpy as np
import pytest
from scipy.special import erf as np_erf

import fastnn as fnn
import fastnn.functional as F
from tests.helpers import TOL, finite_difference, tape_grads

rng = np.random.default_rng(0)


def sig(x):
    return 1 / (1 + np.exp(-x))


# name: (fastnn fn, numpy float64 reference, input shapes, input transform)
POS = np.abs
UNARY = {
    "neg": (lambda x: -x, lambda x: -x),
    "exp": (lambda x: x.exp(), np.exp),
    "log": (lambda x: x.log(), np.log, POS),
    "sqrt": (lambda x: x.sqrt(), np.sqrt, POS),
    "abs": (lambda x: x.abs(), np.abs),
    "erf": (F.erf, np_erf),
    "tanh": (lambda x: x.tanh(), np.tanh),
    "sigmoid": (lambda x: x.sigmoid(), sig),
    "relu": (lambda x: x.relu(), lambda x: np.maximum(x, 0)),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.1), lambda x: np.where(x > 0, x, 0.1 * x)),
    "gelu": (F.gelu, lambda x: 0.5 * x * (1 + np_erf(x / math.sqrt(2)))),
    "silu": (F.silu, lambda x: x * sig(x)),
    "softplus": (F.softplus, lambda x: np.logaddexp(0, x)),
    "softmax": (lambda x: F.softmax(x, axis=-1),
                lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True)),
    "log_softmax": (lambda x: F.log_softmax(x, axis=0),
                    lambda x: x - np.log(np.exp(x).sum(0, keepdims=True))),
    "rms_div": (F.rms_div, lambda x: x / np.sqrt((x**2).mean(-1, keepdims=True) + 1e-6)),
    "sum": (lambda x: x.sum(axis=(0, 2)), lambda x: x.sum(axis=(0, 2))),
    "sum_keep": (lambda x: x.sum(axis=1, keepdims=True), lambda x: x.sum(axis=1, keepdims=True)),
    "mean": (lambda x: x.mean(axis=-1), lambda x: x.mean(axis=-1)),
    "mean_all": (lambda x: x.mean(), lambda x: x.mean()),
    "max": (lambda x: x.max(axis=1).values, lambda x: x.max(axis=1)),
    "reshape": (lambda x: x.reshape(-1, 2), lambda x: x.reshape(-1, 2)),
    "transpose": (lambda x: x.transpose((2, 0, 1)), lambda x: x.transpose(2, 0, 1)),
    "T": (lambda x: x.T, lambda x: x.T),
    "broadcast_to": (lambda x: F.broadcast_to(x[0] if False else x, (2,) + x.shape),
                     lambda x: np.broadcast_to(x, (2,) + x.shape)),
}
BINARY = {
    "add": (lambda a, b: a + b, np.add),
    "sub": (lambda a, b: a - b, np.subtract),
    "mul": (lambda a, b: a * b, np.multiply),
    "div": (lambda a, b: a / b, np.divide),
    "pow": (lambda a, b: a**b, np.power),
    "maximum": (F.maximum, np.maximum),
    "minimum": (F.minimum, np.minimum),
}
BROADCAST_SHAPES = [((3, 4), (3, 4)), ((3, 1, 4), (5, 1)), ((4,), (2, 3, 4)), ((1,), (3, 1))]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_forward_and_gradient(name, dtype):
    fn, ref, *prep = UNARY[name]
    x = rng.standard_normal((2, 3, 4))
    if prep:
        x = prep[0](x) + 0.5
    out = fn(fnn.tensor(x, dtype=dtype))
    assert out.dtype == dtype
    np.testing.assert_allclose(out.numpy(), ref(x), **TOL[dtype])
    if dtype == "float64":
        expected, weights = finite_difference(ref, [x], 0)
        (got,) = tape_grads(fn, [x], weights)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shapes", BROADCAST_SHAPES)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcast_forward_and_gradient(name, shapes, dtype):
    fn, ref = BINARY[name]
    a = rng.standard_normal(shapes[0])
    b = rng.standard_normal(shapes[1])
    if name in ("pow", "div"):
        a, b = np.abs(a) + 0.5, np.abs(b) + 0.5
    out = fn(fnn.tensor(a, dtype=dtype), fnn.tensor(b, dtype=dtype))
    np.testing.assert_allclose(out.numpy(), ref(a, b), **TOL[dtype])
    if dtype == "float64":
        for i in range(2):
            expected, weights = finite_difference(ref, [a, b], i)
            got = tape_grads(fn, [a, b], weights)[i]
            assert got.shape == expected.shape
            np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


def test_scalar_operands_keep_dtype_and_differentiate():
    x = fnn.tensor(rng.standard_normal(5).astype(np.float32), requires_grad=True)
    y = 2.0 - x * 3 + 1 / (x * x + 1) + 2**x - x**2
    assert y.dtype == fnn.float32
    xv = x.numpy().astype(np.float64)
    np.testing.assert_allclose(y.numpy(), 2 - 3 * xv + 1 / (xv**2 + 1) + 2**xv - xv**2,
                               rtol=1e-5)
    y.sum().backward()
    expected = -3 - 2 * xv / (xv**2 + 1) ** 2 + np.log(2) * 2**xv - 2 * xv
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-5)


def test_dtype_promotion_and_int_tensors():
    a = fnn.tensor(np.ones(3, np.float32), requires_grad=True)
    b = fnn.tensor(np.ones(3, np.float64))
    c = a + b
    assert c.dtype == fnn.float64
    c.sum().backward()
    assert a.grad.dtype == fnn.float32
    i = fnn.tensor(np.array([1, 2, 3]))
    assert i.dtype == fnn.int64 and (i + 1).dtype == fnn.int64
    assert (i * 0.5).dtype == fnn.float32 and (i / 2).dtype == fnn.float32
    assert fnn.tensor([1, 2]).dtype == fnn.int64  # as PyTorch (API.md); floats -> float32
    assert fnn.tensor([1.0, 2]).dtype == fnn.float32 and fnn.tensor([True]).dtype == fnn.bool
    with pytest.raises(TypeError, match="floating-point"):
        fnn.tensor(np.array([1, 2]), requires_grad=True)
    with pytest.raises(TypeError, match="unsupported dtype 'complex128'"):
        fnn.tensor(np.ones(2, dtype=complex))


@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((2, 3, 4), (4, 2)), ((4,), (4, 3)),
                                    ((2, 1, 3, 4), (5, 4, 2)), ((3, 4), (4,)), ((0, 4), (4, 2))])
def test_matmul_batched_and_promoted(shapes):
    a = rng.standard_normal(shapes[0])
    b = rng.standard_normal(shapes[1])
    out = fnn.tensor(a) @ fnn.tensor(b)
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-12)
    for i in range(2):
        expected, weights = finite_difference(np.matmul, [a, b], i)
        got = tape_grads(lambda x, y: x @ y, [a, b], weights)[i]
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)


def test_non_contiguous_inputs():
    base = rng.standard_normal((6, 8))
    view = base[::2, 1::3]  # strided, not contiguous
    t = fnn.tensor(base).T  # a transposed view inside fastnn
    np.testing.assert_allclose((t @ fnn.tensor(base)).numpy(), base.T @ base, rtol=1e-12)
    np.testing.assert_allclose(fnn.tensor(view).exp().numpy(), np.exp(view))
    y = fnn.tensor(base, requires_grad=True)
    (y.T * 2.0).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), np.full_like(base, 2.0))


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4, 1), (1, 1)])
def test_size_zero_and_one(shape):
    x = rng.standard_normal(shape)
    t = fnn.tensor(x, requires_grad=True)
    np.testing.assert_allclose((t * 2).sum().numpy(), (x * 2).sum())
    assert (t.exp() + t).shape == shape
    (t.exp() + t).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), np.exp(x) + 1)
    if 0 in shape:
        assert np.isnan(t.mean().item())
        with pytest.raises(ValueError, match="size-0 axis"):
            t.max()


CONV_CASES = [  # (N, C_in, L, C_out, K, stride, padding, dilation, groups)
    (2, 3, 11, 4, 3, 1, 0, 1, 1),
    (1, 4, 16, 6, 5, 2, 2, 1, 2),
    (3, 2, 20, 2, 3, 3, 1, 2, 2),
    (2, 6, 9, 3, 1, 1, 0, 1, 3),
    (1, 1, 5, 2, 5, 1, 4, 1, 1),
]


def conv_ref(x, w, stride, padding, dilation, groups):
    """Direct float64 loop definition of PyTorch's conv1d."""
    n, c_in, length = x.shape
    c_out, c_in_g, k = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding)))
    l_out = (length + 2 * padding - dilation * (k - 1) - 1) // stride + 1
    out = np.zeros((n, c_out, l_out))
    per_group = c_out // groups
    for o in range(c_out):
        g = o // per_group
        for t in range(l_out):
            taps = xp[:, g * c_in_g:(g + 1) * c_in_g,
                      t * stride: t * stride + dilation * (k - 1) + 1: dilation]
            out[:, o, t] = np.einsum("ncj,cj->n", taps, w[o])
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv1d_forward_and_gradients(case, dtype):
    n, c_in, length, c_out, k, stride, padding, dilation, groups = case
    x = rng.standard_normal((n, c_in, length))
    w = rng.standard_normal((c_out, c_in // groups, k))
    attrs = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    out = F.conv1d(fnn.tensor(x, dtype=dtype), fnn.tensor(w, dtype=dtype), **attrs)
    np.testing.assert_allclose(out.numpy(), conv_ref(x, w, stride, padding, dilation, groups),
                               rtol=1e-4 if dtype == "float32" else 1e-10, atol=1e-5)
    if dtype == "float64":
        def ref(xx, ww):
            return conv_ref(xx, ww, stride, padding, dilation, groups)

        for i in range(2):
            expected, weights = finite_difference(ref, [x, w], i)
            got = tape_grads(lambda a, b: F.conv1d(a, b, **attrs), [x, w], weights)[i]
            np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


def test_conv1d_bias_and_bad_shapes():
    x = fnn.randn((2, 4, 10), seed=1)
    w = fnn.randn((3, 4, 3), seed=2)
    b = fnn.tensor([1.0, 2.0, 3.0])
    np.testing.assert_allclose(F.conv1d(x, w, b).numpy(),
                               F.conv1d(x, w).numpy() + np.array([1, 2, 3])[:, None], rtol=1e-6)
    with pytest.raises(ValueError, match="weight expects 2 input channels.*x has 4"):
        F.conv1d(x, fnn.randn((3, 2, 3)))
    with pytest.raises(ValueError, match="does not fit an input of length 10"):
        F.conv1d(x, fnn.randn((3, 4, 12)))
    with pytest.raises(ValueError, match="divisible by groups=3"):
        F.conv1d(x, w, groups=3)
    with pytest.raises(ValueError, match="stride must be an integer >= 1"):
        F.conv1d(x, w, stride=0)
    with pytest.raises(ValueError, match=r"expected x \(N, C_in, L\)"):
        F.conv1d(fnn.randn((10,)), w)
    # one sample (C_in, L), as PyTorch's: a batch of one, without the batch axis
    np.testing.assert_allclose(F.conv1d(x[0], w, b).numpy(), F.conv1d(x, w, b).numpy()[0],
                               rtol=1e-6)


def test_cross_entropy_and_targets():
    logits = rng.standard_normal((6, 5))
    targets = np.array([0, 4, 2, 2, 1, 3])

    def ref(z):
        logp = z - np.log(np.exp(z).sum(1, keepdims=True))
        return -logp[np.arange(6), targets].mean()

    t = fnn.tensor(targets)
    loss = F.cross_entropy(fnn.tensor(logits, requires_grad=True), t)
    np.testing.assert_allclose(loss.item(), ref(logits), rtol=1e-12)
    expected, weights = finite_difference(ref, [logits], 0)
    (got,) = tape_grads(lambda z: F.cross_entropy(z, t), [logits], weights)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)
    with pytest.raises(ValueError, match=r"targets must be in \[0, 5\)"):
        F.cross_entropy(fnn.tensor(logits), fnn.tensor(np.array([0, 1, 2, 3, 4, 5])))
    with pytest.raises(TypeError, match="int64 or int32"):
        F.cross_entropy(fnn.tensor(logits), fnn.tensor(targets.astype(float)))
    huge = fnn.tensor(np.array([[1000.0, -1000.0]]), dtype="float32")
    assert np.isfinite(F.cross_entropy(huge, fnn.tensor(np.array([1]))).item())


def test_shape_errors_are_clear():
    a, b = fnn.ones((3, 4)), fnn.ones((5,))
    with pytest.raises(ValueError, match=r"add: shapes \(3, 4\) and \(5,\) do not broadcast"):
        a + b
    with pytest.raises(ValueError, match=r"matmul: shapes \(3, 4\) and \(3, 4\) are not aligned"):
        a @ a
    with pytest.raises(ValueError, match="cannot reshape 12 elements into shape"):
        a.reshape(5, 2)
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        a.sum(axis=2)
    with pytest.raises(TypeError, match="expected a Tensor or a real number"):
        a + "x"


def test_where_comparisons_argmax_one_hot():
    x = rng.standard_normal((4, 3))
    t = fnn.tensor(x, requires_grad=True)
    mask = t > 0
    assert mask.dtype == fnn.bool_ and not mask.requires_grad
    y = F.where(mask, t, t * 0.1)
    np.testing.assert_allclose(y.numpy(), np.where(x > 0, x, 0.1 * x))
    y.sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), np.where(x > 0, 1.0, 0.1))
    np.testing.assert_array_equal((t >= 0).numpy(), x >= 0)
    np.testing.assert_array_equal((t <= 0).numpy(), x <= 0)
    np.testing.assert_array_equal(t.argmax(axis=1).numpy(), x.argmax(1))
    oh = F.one_hot(fnn.tensor(np.array([2, 0])), 3)
    np.testing.assert_array_equal(oh.numpy(), [[0, 0, 1], [1, 0, 0]])


def test_amax_ties_share_gradient():
    # amax, and max over all dims or a tuple of dims; max(dim) gives it to the index taken
    t = fnn.tensor(np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 1.0]]), requires_grad=True)
    t.amax(axis=1).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), [[0, 0.5, 0.5], [1, 0, 0]])


def test_nan_and_inf_propagate():
    x = fnn.tensor(np.array([np.nan, np.inf, -np.inf, 0.0]))
    out = x.relu().numpy()
    assert np.isnan(out[0]) and out[1] == np.inf and out[2] == 0
    assert np.isnan((x * 0).numpy()[1])
    np.testing.assert_array_equal(x.sigmoid().numpy()[1:], [1.0, 0.0, 0.5])


def test_creation_functions():
    assert fnn.zeros((2, 3)).numpy().sum() == 0 and fnn.ones(4).dtype == fnn.float32
    np.testing.assert_array_equal(fnn.full((2,), 7, dtype=fnn.int64).numpy(), [7, 7])
    np.testing.assert_array_equal(fnn.randn((3,), seed=5).numpy(), fnn.randn((3,), seed=5).numpy())
    u = fnn.rand((1000,), seed=3).numpy()
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.05
    assert fnn.tensor(np.zeros(2, np.float64)).dtype == fnn.float64
    assert fnn.tensor(3.0).item() == 3.0 and fnn.tensor(3.0).shape == ()
    with pytest.raises(ValueError, match="negative dimension"):
        fnn.zeros((2, -1))
