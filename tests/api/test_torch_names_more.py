"""The second batch of PyTorch names: tensor facts (``x.is_cuda``, ``x.nbytes``,
``x.get_device()`` ...), functional ops PyTorch also has at the top level
(``torch.conv2d`` ...), ``broadcast_shapes``, ``isin``, ``inner`` and ``heaviside``:
NumPy references, and PyTorch's answers where installed."""

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from tests.api.torch_names_check import check, torch

RNG = np.random.default_rng(3)


def test_tensor_facts_on_the_cpu():
    for dtype, itemsize in ((fnn.float32, 4), (fnn.float64, 8), (fnn.int32, 4),
                            (fnn.int64, 8), (fnn.bool, 1), (fnn.float16, 2)):
        x = fnn.zeros(2, 3, dtype=dtype)
        assert (x.itemsize, x.nbytes) == (itemsize, 6 * itemsize)
        assert x.is_signed() is (dtype is not fnn.bool)
        if torch is not None:
            theirs = torch.zeros(2, 3, dtype=getattr(torch, dtype.name))
            assert (theirs.itemsize, theirs.nbytes) == (x.itemsize, x.nbytes)
            assert theirs.is_signed() == x.is_signed()
    x = fnn.ones(2)
    assert x.is_cpu and not x.is_cuda and x.get_device() == -1
    assert not fnn.is_complex(x) and not x.is_conj() and not x.is_neg()
    assert not x.is_inference() and x.resolve_conj() is x and fnn.resolve_neg(x) is x
    assert fnn.positive(x) is x and x.is_same_size(fnn.zeros(2)) and not x.is_same_size(
        fnn.zeros(1, 2))
    np.testing.assert_array_equal(fnn.isreal(fnn.tensor([1.0, np.nan])).numpy(), [True, True])
    with pytest.raises(TypeError, match="positive: not defined for bool tensors"):
        fnn.positive(fnn.tensor([True]))


def test_bfloat16_method_converts_or_says_the_device_lacks_it():
    x = fnn.tensor([1.5, -2.0])
    try:
        converted = x.bfloat16()
    except TypeError as exc:
        assert "does not support bfloat16" in str(exc)
    else:
        assert converted.dtype == fnn.bfloat16
        np.testing.assert_array_equal(converted.float().numpy(), [1.5, -2.0])


TOP_FUNCTIONAL = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "pixel_shuffle", "pixel_unshuffle", "max_pool1d", "max_pool2d",
                  "avg_pool1d", "pairwise_distance", "bilinear", "channel_shuffle", "rms_norm"]


@pytest.mark.parametrize("name", TOP_FUNCTIONAL)
def test_functional_ops_at_top_level_are_the_functional_ones(name):
    assert getattr(fnn, name) is getattr(F, name)


def test_top_level_conv2d_and_max_pool2d_against_numpy_and_torch():
    image, kernel = RNG.normal(size=(1, 1, 4, 4)), RNG.normal(size=(1, 1, 2, 2))

    def conv(a, k):  # a valid cross-correlation, as PyTorch's conv
        out = np.zeros((1, 1, 3, 3))
        for i in range(3):
            for j in range(3):
                out[0, 0, i, j] = (a[0, 0, i:i + 2, j:j + 2] * k[0, 0]).sum()
        return out

    check(lambda a, k: fnn.conv2d(a, k), conv, image, kernel,
          torch_run=lambda a, k: torch.conv2d(a, k))
    check(lambda a: fnn.max_pool2d(a, 2), lambda a: a.reshape(1, 1, 2, 2, 2, 2).max((3, 5)),
          image, torch_run=lambda a: torch.max_pool2d(a, 2))


@pytest.mark.parametrize("shapes", [((2, 1), (3,), 1), ((), (4, 1, 2)), ((5,),), ()])
def test_broadcast_shapes(shapes):
    want = np.broadcast_shapes(*shapes)
    assert fnn.broadcast_shapes(*shapes) == want
    if torch is not None:
        assert tuple(torch.broadcast_shapes(*shapes)) == want


def test_broadcast_shapes_error_names_the_shapes():
    with pytest.raises(RuntimeError, match=r"broadcast_shapes: shapes \(2,\) and \(3,\)"):
        fnn.broadcast_shapes((2,), (3,))


@pytest.mark.parametrize("invert", [False, True])
def test_isin(invert):
    x, tests = np.array([[1, 2, 3], [4, 5, 1]]), np.array([1, 5, 9])
    want = np.isin(x, tests, invert=invert)
    got = fnn.isin(fnn.tensor(x), fnn.tensor(tests), invert=invert)
    assert got.dtype == fnn.bool
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(fnn.tensor(x).isin(fnn.tensor(tests), invert=invert).numpy(),
                                  want)
    np.testing.assert_array_equal(fnn.isin(fnn.tensor(x), 2).numpy(), x == 2)
    np.testing.assert_array_equal(fnn.isin(4, fnn.tensor(tests)).numpy(), False)
    if torch is not None:
        theirs = torch.isin(torch.tensor(x), torch.tensor(tests), invert=invert)
        np.testing.assert_array_equal(got.numpy(), theirs.numpy())
    with pytest.raises(TypeError, match="isin: expected a Tensor"):
        fnn.isin([1, 2], [2])


@pytest.mark.parametrize("a_shape, b_shape", [((4,), (4,)), ((2, 3, 4), (5, 4)),
                                              ((3,), (2, 3)), ((), (2, 2))])
def test_inner(a_shape, b_shape):
    a, b = RNG.normal(size=a_shape), RNG.normal(size=b_shape)
    check(fnn.inner, np.inner, a, b, torch_run=torch and torch.inner)
    with pytest.raises(RuntimeError, match="inner: the last dims must match"):
        fnn.inner(fnn.ones(3), fnn.ones(4))


def test_heaviside():
    x, values = np.array([-1.5, 0.0, 2.0, 0.0]), np.array([0.5, 0.25, 7.0, -1.0])
    want = np.heaviside(x, values)
    np.testing.assert_array_equal(fnn.heaviside(fnn.tensor(x), fnn.tensor(values)).numpy(),
                                  want)
    np.testing.assert_array_equal(fnn.tensor(x).heaviside(fnn.tensor(values)).numpy(), want)
    if torch is not None:
        theirs = torch.heaviside(torch.tensor(x), torch.tensor(values))
        np.testing.assert_array_equal(theirs.numpy(), want)


def test_top_level_in_place_functions_are_the_methods():
    from fastnn.ops.inplace_more import TOP_INPLACE

    for name in TOP_INPLACE:
        assert getattr(fnn, name) is getattr(fnn.Tensor, name), name
        if torch is not None:
            assert hasattr(torch, name), name
    x = fnn.tensor([-1.5, 0.25, 4.0])
    assert fnn.relu_(x) is x
    np.testing.assert_array_equal(x.numpy(), [0.0, 0.25, 4.0])
    fnn.clamp_(x, max=1.0)
    fnn.sqrt_(x)
    np.testing.assert_array_equal(x.numpy(), np.sqrt([0.0, 0.25, 1.0]))
    with pytest.raises(RuntimeError, match="exp_: a leaf tensor that requires grad"):
        fnn.exp_(fnn.ones(2, requires_grad=True))


def test_typename_matmul_precision_and_anomaly_switch():
    assert fnn.typename(fnn.ones(1)) == "fastnn.FloatTensor"
    assert fnn.typename(fnn.ones(1, dtype=fnn.int64)) == "fastnn.LongTensor"
    assert fnn.typename(1.5) == "float" and fnn.typename(fnn.nn.Linear(1, 1)).endswith(
        ".Linear")
    if torch is not None:
        assert torch.typename(torch.ones(1)) == "torch.FloatTensor"
        assert torch.typename(1.5) == "float"
    assert fnn.get_float32_matmul_precision() == "highest"
    try:
        fnn.set_float32_matmul_precision("high")
        assert fnn.get_float32_matmul_precision() == "high"
    finally:
        fnn.set_float32_matmul_precision("highest")
    with pytest.raises(ValueError, match="set_float32_matmul_precision: expected one of"):
        fnn.set_float32_matmul_precision("low")
    assert not fnn.is_anomaly_enabled()
    try:
        fnn.set_anomaly_enabled(True)
        assert fnn.is_anomaly_enabled()
        with pytest.raises(FloatingPointError):
            fnn.log(fnn.tensor([-1.0]))
    finally:
        fnn.set_anomaly_enabled(False)
    assert not fnn.is_anomaly_enabled()
