"""Every hook of the OpenCL backend against the NumPy backend on the same random inputs.

Inputs cover broadcasting, size-0 and size-1 axes, transposed (non-contiguous)
views, and float32/float64. The NumPy backend is the reference; tolerances
allow for the few-ulp differences of OpenCL's transcendental functions.
"""

import numpy as np
import pytest

from tests.backends.opencl.hook_check import DTYPES, check, cpu, up

UNARY = ["neg", "exp", "log", "sqrt", "abs", "sign", "erf", "tanh", "sigmoid", "relu", "gelu",
         "silu", "softplus"]
BINARY = ["add", "sub", "mul", "div", "pow", "maximum", "minimum"]
COMPARE = ["greater", "less", "equal"]
SHAPE_PAIRS = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 5), (3, 1)), ((), (2, 3)),
               ((0, 4), (4,)), ((1, 1), (1,)), ((2, 3, 4, 5), (1, 3, 1, 5)),
               ((2, 3, 67), (3, 1)), ((4, 1, 70), (3, 70))]  # runs past CHUNK: a bias


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", UNARY)
@pytest.mark.parametrize("transposed", [False, True])
def test_unary(ocl, rng, op, dtype, transposed):
    x = rng.standard_normal((5, 7)).astype(dtype) * 3
    if op in ("log", "sqrt"):
        x = np.abs(x) + 0.1
    x[0, :3] = [np.nan, np.inf, -np.inf] if op not in ("log", "sqrt") else [np.nan, np.inf, 0]
    with np.errstate(all="ignore"):
        want = getattr(cpu, op)(x)
    check(ocl, getattr(ocl, op)(up(ocl, x, transposed)), want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_leaky_relu_and_saturation(ocl, rng, dtype):
    x = np.array([-1e30, -50.0, -1.0, 0.0, 2.0, 1e30, np.nan], dtype)
    check(ocl, ocl.leaky_relu(up(ocl, x), 0.1), cpu.leaky_relu(x, 0.1), dtype)
    for op in ("sigmoid", "tanh", "silu", "softplus", "gelu"):
        check(ocl, getattr(ocl, op)(up(ocl, x)), getattr(cpu, op)(x), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", BINARY + COMPARE)
@pytest.mark.parametrize("shapes", SHAPE_PAIRS, ids=str)
def test_binary_broadcasting(ocl, rng, op, dtype, shapes):
    a = rng.standard_normal(shapes[0]).astype(dtype)
    b = rng.standard_normal(shapes[1]).astype(dtype)
    if op == "pow":
        a = np.abs(a) + 0.5
    if op == "equal" and a.size and b.size:
        b = np.broadcast_to(a, np.broadcast_shapes(a.shape, b.shape)).copy()
        b.reshape(-1)[::2] += 1
    check(ocl, getattr(ocl, op)(up(ocl, a), up(ocl, b)), getattr(cpu, op)(a, b), dtype)
    # the same with transposed views of both operands
    check(ocl, getattr(ocl, op)(up(ocl, a, True), up(ocl, b, True)), getattr(cpu, op)(a, b), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", BINARY + COMPARE)
def test_binary_python_scalar(ocl, rng, op, dtype):
    a = np.abs(rng.standard_normal((4, 3)).astype(dtype)) + 0.5
    check(ocl, getattr(ocl, op)(up(ocl, a), 1.7), getattr(cpu, op)(a, 1.7), dtype)
    check(ocl, getattr(ocl, op)(up(ocl, a, True), 2), getattr(cpu, op)(a, 2), dtype)


def test_nan_rules(ocl):
    a = np.array([np.nan, 1.0, 2.0, np.nan], np.float32)
    b = np.array([0.0, np.nan, 1.0, 0.0], np.float32)
    for op in ("maximum", "minimum"):
        check(ocl, getattr(ocl, op)(up(ocl, a), up(ocl, b)), getattr(cpu, op)(a, b), "float32")
    zero = np.zeros(3, np.float32)
    num = np.array([1.0, -1.0, 0.0], np.float32)
    with np.errstate(all="ignore"):
        check(ocl, ocl.div(up(ocl, num), up(ocl, zero)), num / zero, "float32")


@pytest.mark.parametrize("dtype", DTYPES)
def test_where(ocl, rng, dtype):
    cond = rng.standard_normal((3, 1, 4)) > 0
    a = rng.standard_normal((5, 4)).astype(dtype)
    b = rng.standard_normal((4,)).astype(dtype)
    check(ocl, ocl.where(up(ocl, cond), up(ocl, a), up(ocl, b)), np.where(cond, a, b), dtype)
    check(ocl, ocl.where(up(ocl, cond), up(ocl, a, True), 0.5), np.where(cond, a, 0.5), dtype)


@pytest.mark.parametrize("src,dst", [("float32", "float64"), ("float64", "float32"),
                                     ("float32", "int64"), ("float64", "int32"),
                                     ("int64", "float32"), ("bool", "float32"),
                                     ("float32", "bool"), ("int32", "int64"),
                                     ("float64", "int16"), ("float32", "int8"),
                                     ("int16", "int8"), ("int8", "uint8"), ("uint8", "float32"),
                                     ("int64", "int16"), ("uint8", "bool")])
def test_astype(ocl, rng, src, dst):
    x = (rng.standard_normal((3, 5)) * 4).astype(src)
    check(ocl, ocl.astype(up(ocl, x, True), dst), x.astype(dst), dst)


@pytest.mark.parametrize("dtype", DTYPES + ["int64", "int32"])
@pytest.mark.parametrize("op", ["sum", "mean", "max"])
@pytest.mark.parametrize("shape,axis", [((4, 5, 6), None), ((4, 5, 6), (0,)), ((4, 5, 6), (1,)),
                                        ((4, 5, 6), (2,)), ((4, 5, 6), (0, 2)), ((4, 5, 6), ()),
                                        ((3, 9, 7), (0, 2)), ((2, 3, 8, 5), (0, 3)),
                                        ((7,), (0,)), ((1, 3), (0,)), ((0, 3), (1,)),
                                        ((3, 10000), (1,)), ((50000,), None)], ids=str)
def test_reductions(ocl, rng, op, dtype, shape, axis):
    if dtype.startswith("int") and op == "mean":
        pytest.skip("the core converts integer tensors to float before mean")
    x = (rng.standard_normal(shape) * 10).astype(dtype)
    for keepdims in (False, True):
        for transposed in (False, True):
            got = getattr(ocl, op)(up(ocl, x, transposed), axis, keepdims)
            with np.errstate(all="ignore"):
                # NumPy sums int32 into int64; the tensor (and this backend) keeps int32
                want = getattr(cpu, op)(x, axis, keepdims).astype(dtype)
            tol = dict(rtol=1e-5, atol=1e-4) if dtype == "float32" else None
            if tol:
                got = ocl.to_numpy(got)
                np.testing.assert_allclose(got, want, **tol)
                assert got.shape == want.shape
            else:
                check(ocl, got, want, dtype)


def test_size_zero_reductions(ocl):
    x = np.zeros((0, 3), np.float32)
    check(ocl, ocl.sum(up(ocl, x), (0,), False), np.zeros(3, np.float32), "float32")
    assert np.isnan(ocl.to_numpy(ocl.mean(up(ocl, x), (0,), False))).all()


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_argmax_first_maximum_and_nan(ocl, rng, axis):
    x = rng.integers(0, 3, (4, 5, 6)).astype(np.float32)  # many ties
    check(ocl, ocl.argmax(up(ocl, x, True), axis), cpu.argmax(x, axis), "int64")
    y = np.array([[1.0, np.nan, 5.0, np.nan]], np.float32)
    check(ocl, ocl.argmax(up(ocl, y), 1), cpu.argmax(y, 1), "int64")


MATMUL_SHAPES = [((5, 7), (7, 9)), ((1, 1), (1, 1)), ((33, 17), (17, 50)), ((3, 4), (4,)),
                 ((4,), (4, 3)), ((4,), (4,)), ((2, 1, 3, 4), (3, 4, 2)), ((6, 8, 40), (40, 70)),
                 ((0, 3), (3, 4)), ((3, 0), (0, 4)), ((130, 64), (64, 10)),
                 # CPU kernels: whole register blocks plus row, vector and scalar edges, and
                 # (with b transposed) the NT kernel's k tail past the last full vector
                 ((70, 100), (100, 200)), ((9, 33), (33, 80)), ((3, 17, 35), (3, 35, 66))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape,b_shape", MATMUL_SHAPES, ids=str)
@pytest.mark.parametrize("design", ["cpu", "tiled"])
def test_matmul_both_designs(ocl, rng, monkeypatch, dtype, a_shape, b_shape, design):
    monkeypatch.setenv("FASTNN_OPENCL_GEMM", design)
    a = rng.standard_normal(a_shape).astype(dtype)
    b = rng.standard_normal(b_shape).astype(dtype)
    want = np.matmul(a, b)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-11, atol=1e-11)
    for ta in (False, True):
        for tb in (False, True):
            got = ocl.to_numpy(ocl.matmul(up(ocl, a, ta), up(ocl, b, tb)))
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, **tol)


CONV = [dict(stride=1, padding=0, dilation=1, groups=1), dict(stride=2, padding=1, dilation=1,
        groups=1), dict(stride=1, padding=2, dilation=2, groups=1),
        dict(stride=3, padding=1, dilation=2, groups=2), dict(stride=1, padding=0, dilation=1,
        groups=4)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("attrs", CONV, ids=lambda a: "s{stride}p{padding}d{dilation}g{groups}"
                         .format(**a))
def test_conv1d_and_gradients(ocl, rng, dtype, attrs):
    x = rng.standard_normal((3, 4, 13)).astype(dtype)
    w = rng.standard_normal((8, 4 // attrs["groups"], 3)).astype(dtype)
    args = tuple(attrs.values())
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-11, atol=1e-11)
    out = cpu.conv1d(x, w, *args)
    np.testing.assert_allclose(ocl.to_numpy(ocl.conv1d(up(ocl, x, True), up(ocl, w), *args)),
                               out, **tol)
    g = rng.standard_normal(out.shape).astype(dtype)
    got_w = ocl.conv1d_grad_weight(up(ocl, x), up(ocl, g, True), 3, *args)
    np.testing.assert_allclose(ocl.to_numpy(got_w), cpu.conv1d_grad_weight(x, g, 3, *args), **tol)
    got_x = ocl.conv1d_grad_input(up(ocl, g), up(ocl, w), 13, *args)
    np.testing.assert_allclose(ocl.to_numpy(got_x), cpu.conv1d_grad_input(g, w, 13, *args), **tol)


@pytest.mark.parametrize("dtype", DTYPES + ["int64"])
@pytest.mark.parametrize("op", ["sum", "mean", "max"])
def test_outer_and_inner_axes_reduce_in_one_pass(ocl, rng, monkeypatch, op, dtype):
    """(N, C, L) over N and L (a conv's bias gradient): no transposed copy on CPU devices."""
    from fastnn_opencl import reduce
    from fastnn_opencl.runtime import state

    if not state(0).is_cpu:
        pytest.skip("the one-pass kernel runs on CPU devices")
    if dtype == "int64" and op == "mean":
        pytest.skip("the core converts integer tensors to float before mean")
    monkeypatch.setattr(reduce, "OUTER_ITEMS", 0)
    calls = []
    monkeypatch.setattr(reduce, "_pass", lambda *a: calls.append(a))  # must not run
    for shape, axes in (((3, 5, 7), (0, 2)), ((2, 3, 4, 9), (0, 3)), ((4, 1, 3), (0, 2)),
                        ((3, 4, 21), (0, 2))):  # runs of 8 lanes and a tail
        x = (rng.standard_normal(shape) * 10).astype(dtype)
        x.flat[5] = np.nan if dtype.startswith("float") else x.flat[5]
        want = getattr(cpu, op)(x, axes, False)
        got = ocl.to_numpy(getattr(ocl, op)(up(ocl, x), axes, False))
        np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == "float32" else 1e-12)
    assert not calls


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("padding,dilation,groups", [(0, 1, 1), (2, 1, 2), (6, 2, 1), (9, 1, 1)])
def test_conv1d_direct_kernel_long_inputs(ocl, rng, dtype, padding, dilation, groups):
    """Stride-1 conv on CPU devices runs the direct kernels: whole vectors, padding lanes,
    a last partial block, and 10 output channels (two full blocks of 4 and a partial one);
    the weight gradient's (channel, tap) columns end in a partial block too."""
    x = rng.standard_normal((2, 6, 53)).astype(dtype)
    w = rng.standard_normal((10, 6 // groups, 5)).astype(dtype)
    args = (1, padding, dilation, groups)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-11, atol=1e-11)
    out = cpu.conv1d(x, w, *args)
    np.testing.assert_allclose(ocl.to_numpy(ocl.conv1d(up(ocl, x, True), up(ocl, w), *args)),
                               out, **tol)
    g = rng.standard_normal(out.shape).astype(dtype)
    got_x = ocl.conv1d_grad_input(up(ocl, g, True), up(ocl, w), 53, *args)
    np.testing.assert_allclose(ocl.to_numpy(got_x), cpu.conv1d_grad_input(g, w, 53, *args), **tol)
    got_w = ocl.conv1d_grad_weight(up(ocl, x, True), up(ocl, g, True), 5, *args)
    np.testing.assert_allclose(ocl.to_numpy(got_w), cpu.conv1d_grad_weight(x, g, 5, *args), **tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_conv1d_direct_weight_gradient_split(ocl, rng, monkeypatch, dtype):
    """Few output blocks: the weight gradient splits the (sample, position vector) pairs,
    in runs that cross from one sample into the next, and sums the partial products."""
    from fastnn_opencl import conv

    monkeypatch.setattr(conv, "SPLIT_ITEMS", 1000)
    x = rng.standard_normal((3, 2, 300)).astype(dtype)
    g = rng.standard_normal((3, 3, 298)).astype(dtype)
    args = (1, 1, 2, 1)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-11, atol=1e-11)
    got_w = ocl.conv1d_grad_weight(up(ocl, x), up(ocl, g), 3, *args)
    np.testing.assert_allclose(ocl.to_numpy(got_w), cpu.conv1d_grad_weight(x, g, 3, *args), **tol)


def test_views_share_and_copy_correctly(ocl, rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    t = ocl.transpose(up(ocl, x), (2, 0, 1))
    assert t.shape == (4, 2, 3) and not t.is_contiguous
    check(ocl, ocl.reshape(t, (8, 3)), x.transpose(2, 0, 1).reshape(8, 3), "float32")
    check(ocl, ocl.contiguous(t), x.transpose(2, 0, 1), "float32")
    b = ocl.broadcast_to(up(ocl, x[:1]), (5, 3, 4))
    check(ocl, b, np.broadcast_to(x[:1], (5, 3, 4)), "float32")
    check(ocl, ocl.one_hot(up(ocl, np.array([[2, 0], [1, 3]])), 4, "float32"),
          cpu.one_hot(np.array([[2, 0], [1, 3]]), 4, "float32"), "float32")
    scalar = up(ocl, np.float64(2.5).reshape(()))
    assert ocl.to_numpy(scalar).shape == ()


def test_full_uniform_and_dtypes(ocl):
    check(ocl, ocl.full((2, 0), 3.0, "float32", 0), np.full((2, 0), 3.0, np.float32), "float32")
    check(ocl, ocl.full((2, 3), 7, "int64", 0), np.full((2, 3), 7), "int64")
    a = ocl.to_numpy(ocl.uniform((20000,), "float32", 0, seed=5))
    b = ocl.to_numpy(ocl.uniform((20000,), "float32", 0, seed=5))
    c = ocl.to_numpy(ocl.uniform((20000,), "float64", 0, seed=6))
    np.testing.assert_array_equal(a, b)
    for u in (a, c):
        assert 0.0 <= u.min() and u.max() < 1.0
        assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005
    with pytest.raises(TypeError, match="float16"):
        ocl.from_numpy(np.zeros(3, np.float16), 0)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "bool"])
def test_floating_only_unary_kernels_refuse_integers(ocl, dtype):
    """exp, sqrt, floor... have no integer kernel: a clear TypeError, on the fast path
    (contiguous) and the general one (transposed), not pyopencl's "invalid kernel name"."""
    x = np.arange(6).reshape(2, 3).astype(dtype)
    for op in ("exp", "sqrt", "floor", "tanh"):
        for transposed in (False, True):
            with pytest.raises(TypeError, match=f"opencl: {op} is defined on floating arrays"):
                getattr(ocl, op)(up(ocl, x, transposed))
    if dtype != "bool":  # (the integer kernels stay)
        check(ocl, ocl.neg(up(ocl, x)), np.negative(x), dtype)
