"""fastnn_cpu.native's elementwise loops (native_act.c: relu, its gradient, the bias add
with or without relu) give NumPy's values bit for bit, special values included (-0.0,
NaN, infinities, subnormals), and the layouts they leave to NumPy (strided, broadcast,
small, float16, another dtype) give the same."""

import fastnn_cpu
import numpy as np
import pytest
from fastnn_cpu import fused, native

from tests.backends.cpu.native_switch import c_or_not, spy

needs_c = pytest.mark.skipif(native.act_library() is None,
                             reason=f"no C loops here: {native.status()}")


@pytest.fixture(params=["C", "NumPy"])
def loops(request, monkeypatch):
    """Each test runs with the C loops (where they build) and with NumPy's."""
    return c_or_not(request, monkeypatch, "_ACT", native.act_library)


def _specials(shape, dtype, seed):
    """Random values with every special one sprinkled in."""
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(shape) * 3).astype(dtype)
    tiny = np.finfo(dtype).smallest_subnormal
    flat = a.reshape(-1)
    specials = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, tiny, -tiny],
                        dtype=dtype)
    flat[rng.choice(flat.size, size=min(flat.size, 64), replace=False)] = \
        np.resize(specials, min(flat.size, 64))
    return a


def _bits(a):
    return np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}")


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype == np.float16:  # NumPy's float16 maximum gives relu(-0.0) = +0.0
        np.testing.assert_array_equal(got, want)  # (values: -0.0 == 0.0, NaN == NaN)
    else:
        np.testing.assert_array_equal(_bits(got), _bits(want))


SHAPES = [(128, 512), (32, 32, 256), (4096,), (64, 64), (3, 5), (1, 8192), (8193,)]
DTYPES = [np.float32, np.float64]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_relu_keeps_negative_zero_and_nan(shape, dtype, loops):
    x = _specials(shape, dtype, 0)
    want = np.where(x < 0, dtype(0), x)  # -0.0 and NaN kept, as PyTorch's
    _same(fastnn_cpu.relu(x), want)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["relu", "identity"])
def test_bias_act_is_one_rounding_then_relu(shape, dtype, kind, loops):
    x = _specials(shape, dtype, 1)
    bias = _specials(shape[-1:], dtype, 2)
    with np.errstate(invalid="ignore"):
        z = x + bias
    want = np.where(z < 0, dtype(0), z) if kind == "relu" else z
    _same(fused.bias_act(x, bias, kind, 0.01), want)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_relu_backward_passes_the_gradient_where_the_output_is_not_zero(shape, dtype, loops):
    out = fastnn_cpu.relu(_specials(shape, dtype, 3))
    grad = _specials(shape, dtype, 4)
    want = np.where(out != 0, grad, dtype(0))  # NaN outputs pass it; +0.0 elsewhere
    _same(fused.relu_backward(out, grad), want)


@pytest.mark.parametrize("layout", ["transposed", "sliced", "broadcast grad", "float64 grad",
                                    "float16", "strided bias"])
def test_other_layouts_take_numpy_with_the_same_values(layout, loops):
    x = _specials((96, 128), np.float32, 5)
    grad = _specials((96, 128), np.float32, 6)
    bias = _specials((128,), np.float32, 7)
    if layout == "transposed":
        x, grad, bias = x.T, grad.T, bias[:96]
    elif layout == "sliced":
        x, grad = x[:, ::2], grad[:, ::2]
        bias = bias[:64]
    elif layout == "broadcast grad":
        grad = np.broadcast_to(grad[0], x.shape)
    elif layout == "float64 grad":
        grad = grad.astype(np.float64)
    elif layout == "float16":
        x, grad, bias = (a.astype(np.float16) for a in (x, grad, bias))
    else:
        bias = _specials((256,), np.float32, 7)[::2]
    dtype = x.dtype.type
    _same(fastnn_cpu.relu(x), np.where(x < 0, dtype(0), x))
    with np.errstate(invalid="ignore"):
        z = x + bias
    _same(fused.bias_act(x, bias, "relu", 0.01), np.where(z < 0, dtype(0), z))
    _same(fused.bias_act(x, bias, "identity", 0.01), z)
    out = fastnn_cpu.relu(x)
    _same(fused.relu_backward(out, grad),
          np.where(out != 0, grad.astype(out.dtype), dtype(0)))


def test_the_c_loops_are_what_runs_on_a_large_contiguous_array(monkeypatch):
    calls = spy(monkeypatch, "_ACT", native.act_library)
    x = np.ones((64, 128), np.float32)
    fastnn_cpu.relu(x)
    fused.bias_act(x, x[0], "relu", 0.01)
    fused.relu_backward(x, x)
    assert calls == ["relu", "bias_act", "relu_backward"]


@pytest.mark.parametrize("shape", SHAPES)
def test_gelu_is_gelu32_in_one_pass(shape, loops):
    """float32 GELU: gelu32's polynomial and order, tanh_f for NumPy's tanh (within 1.3
    ulp of each other), so within a few float32 roundings of 0.5 |x| of gelu32 and of
    the float64 definition, and the special values gelu32's (NaN at NaN and -inf, +-0,
    +inf)."""
    from fastnn_cpu.erf import gelu32
    from scipy.special import erf

    x = _specials(shape, np.float32, 8) * np.float32(2)
    got, want = fastnn_cpu.gelu(x), gelu32(x)
    assert got.dtype == np.float32 and got.shape == x.shape
    special = ~np.isfinite(x) | (x == 0)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))  # (NaN's sign may differ)
    kept = special & ~np.isnan(want)
    _same(got[kept], want[kept])  # +-0 and +inf bit for bit
    finite = np.isfinite(x)
    x64 = x[finite].astype(np.float64)
    exact = 0.5 * x64 * (1 + erf(x64 / np.sqrt(2)))
    scale = 6e-8 * (1 + np.abs(x64))  # float32's half ulp of 1, times 0.5 |x| and more
    assert (np.abs(got[finite] - want[finite]) <= 8 * scale).all()
    assert (np.abs(got[finite] - exact) <= 16 * scale).all()


@pytest.mark.parametrize("shape", [(1024, 64), (3, 5), (2, 7, 512), (4, 513), (6, 1)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_family_on_short_rows_matches_numpy(shape, dtype, loops):
    """The C row maximum and the BLAS row sums under softmax, log_softmax and the fused
    cross-entropy: NumPy's values to rounding, NaN rows NaN, -inf entries 0 in softmax."""
    x = (np.random.default_rng(len(shape)).standard_normal(shape) * 4).astype(dtype)
    x.reshape(-1, shape[-1])[0, 0] = np.nan
    x.reshape(-1, shape[-1])[-1, -1] = -np.inf
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        e = np.exp(x64 - np.max(x64, axis=-1, keepdims=True))
        want = e / e.sum(-1, keepdims=True)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-14)
    got = fused.softmax(x, -1)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, **tol)
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(fused.log_softmax(x, x.ndim - 1), np.log(want), **tol)
    if x.ndim == 2:
        targets = np.arange(shape[0]) % shape[1]
        loss, probs = fused.softmax_cross_entropy(x, targets)
        np.testing.assert_allclose(probs, want, **tol)
        with np.errstate(divide="ignore"):
            want_loss = -np.log(want[np.arange(shape[0]), targets])
        np.testing.assert_allclose(loss, want_loss, **tol)


@pytest.mark.parametrize("d", [1, 5, 16, 17, 100, 1024, 1040, 3000, 50_257])
def test_row_softmax_in_c_is_the_float64_softmax_to_rounding(d, loops):
    """The float32 row softmax (native_act.c: the maximum, exp and sum in three sweeps of
    a row, the sum in 16 lanes and blocks of 1024): the float64 softmax within NumPy's
    own float32 error; a NaN, a +inf or an all -inf row NaN, -inf entries 0, as NumPy."""
    rng = np.random.default_rng(d)
    x = (rng.standard_normal((6, d)) * 5).astype(np.float32)
    x[1, d // 2] = np.nan
    x[2, d - 1] = np.inf
    x[3] = -np.inf
    x[4, : d // 2] = -np.inf
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        e = np.exp(x64 - x64.max(1, keepdims=True))
        want = e / e.sum(1, keepdims=True)
        numpy32 = np.exp(x - x.max(1, keepdims=True))
        numpy32 /= numpy32.sum(1, keepdims=True)
    got = fused.softmax(x, 1)
    assert got.dtype == np.float32 and got.shape == x.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = ~np.isnan(want)
    # NumPy's float32 passes set the scale: no more than twice their error, plus an ulp
    worst = np.abs(numpy32[finite] - want[finite]).max()
    assert np.abs(got[finite] - want[finite]).max() <= 2 * worst + 2 ** -24
    assert (got[4, : d // 2] == 0).all()
    if d > 1:
        targets = np.arange(6) % d
        loss, probs = fused.softmax_cross_entropy(x, targets)
        np.testing.assert_array_equal(probs, got)
        with np.errstate(divide="ignore", invalid="ignore"):
            want_loss = -np.log(want[np.arange(6), targets])
        np.testing.assert_array_equal(np.isnan(loss), np.isnan(want_loss))
        ok = np.isfinite(want_loss)
        np.testing.assert_allclose(loss[ok], want_loss[ok], rtol=1e-5, atol=1e-5)


@needs_c
def test_softmax_of_a_small_or_large_float32_array_is_one_c_call(monkeypatch):
    """A 4x4 softmax (five NumPy calls before, 4x PyTorch's host time) and a (1024, 512)
    one both take the C row softmax, as do the fused cross-entropy and a small array
    along another axis; a strided input, another axis of a large array and float64 keep
    NumPy's passes."""
    calls = spy(monkeypatch, "_ACT", native.act_library)
    x = np.random.default_rng(0).standard_normal((1024, 512)).astype(np.float32)
    fused.softmax(x[:4, :4].copy(), -1)
    fused.softmax(x, 1)
    fused.softmax_cross_entropy(x, np.arange(1024) % 512)
    assert calls == ["softmax_rows_f32"] * 3
    calls.clear()  # a small array along another axis: C on a copy with that axis last
    small = x[:6, :5].reshape(2, 3, 5)
    got = fused.softmax(small, 1)
    assert calls == ["softmax_rows_f32"]
    e = np.exp(small.astype(np.float64) - small.max(1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(1, keepdims=True), rtol=1e-6, atol=1e-7)
    calls.clear()
    fused.softmax(x[:, ::2], 1)
    fused.softmax(x, 0)
    fused.softmax(x.astype(np.float64), 1)
    assert "softmax_rows_f32" not in calls


@pytest.mark.parametrize("d", [2, 7, 8, 15, 16, 17, 33, 64, 100, 512])
@pytest.mark.parametrize("dtype", DTYPES)
def test_row_max_is_numpys_maximum_in_every_lane_and_tail(d, dtype, loops):
    """The row maximum (a 64-byte vector at a time, then the tail): np.maximum.reduce's
    values (a row of -0.0 and 0.0 may give either zero), with a NaN anywhere in a row (a
    vector lane or the tail) making the row NaN, -inf and +inf rows, and subnormals."""
    rows = 64  # (enough rows for the C loop: fused._last)
    x = _specials((rows, d), dtype, d)
    x[:8] = np.abs(x[:8])  # rows 0-7: a NaN planted at column (row * 5) % d, others none
    for r in range(8):
        x[r][np.isnan(x[r])] = 1.0
        x[r, (r * 5) % d] = np.nan if r % 2 else x[r, (r * 5) % d]
    x[8] = -np.inf
    x[9] = np.finfo(dtype).smallest_subnormal * np.arange(d)
    x[10, d - 1] = np.inf
    got = fused._row_max(x, 1)
    want = np.maximum.reduce(x, axis=1, keepdims=True)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)  # (-0.0 == 0.0, NaN == NaN)


@pytest.mark.parametrize("shape", SHAPES)
def test_gelu_backward_float32_is_the_derivative_to_a_few_roundings(shape, loops):
    """float32 GELU's gradient, grad * (cdf + x pdf) (in C: one pass with exp_small):
    within a few float32 roundings of the float64 derivative, 0.5 * grad at +-0 and
    subnormal x, NaN at NaN and +-inf (0 * inf, as the composite), and a pdf of 0 where
    x^2 / 2 passes 87 (13.2 < |x|: the cdf's ulp is far above it)."""
    from scipy.special import erf

    x = _specials(shape, np.float32, 9) * np.float32(4)
    flat = x.reshape(-1)
    flat[:6] = [13.0, -13.0, 13.5, -13.5, 30.0, -30.0][:min(6, flat.size)]
    grad = np.random.default_rng(9).standard_normal(shape).astype(np.float32)
    out = fastnn_cpu.gelu(x)
    got = fused.gelu_backward(x, out, grad)
    assert got.dtype == np.float32 and got.shape == x.shape
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        exact = grad * (0.5 * (1 + erf(x64 / np.sqrt(2)))
                        + x64 * np.exp(-x64 * x64 / 2) / np.sqrt(2 * np.pi))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(x) | np.isinf(x))
    finite = np.isfinite(x)
    scale = 6e-8 * np.abs(grad[finite]) * (1 + np.abs(x64[finite]))
    assert (np.abs(got[finite] - exact[finite]) <= 16 * scale).all()
    zero = finite & (np.abs(x) < 1e-20)
    np.testing.assert_array_equal(got[zero], np.float32(0.5) * grad[zero])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("vocab, tokens, width", [(64, 1024, 64), (5, 4096, 3), (300, 17, 256)])
def test_whole_row_scatter_add_is_add_at_bit_for_bit(dtype, vocab, tokens, width, loops):
    """An embedding's gradient (token rows broadcast along the features): the C loop adds
    in np.add.at's order, so the sums (repeated rows included) are its bit for bit."""
    from fastnn_cpu import indexing

    rng = np.random.default_rng(vocab)
    base = rng.standard_normal((vocab, width)).astype(dtype)
    rows = rng.integers(0, vocab, tokens)
    src = (rng.standard_normal((tokens, width)) * 1e3).astype(dtype)
    index = np.broadcast_to(rows[:, None], (tokens, width))
    want = base.copy()
    np.add.at(want, rows, src)
    got = indexing.scatter_add(base, 0, index, src)
    np.testing.assert_array_equal(got, want)
    assert not np.shares_memory(got, base)
    # an index that is not whole rows, and rows out of range (dropped), take NumPy's path
    mixed = np.array(index)
    mixed[0, -1] = (rows[0] + 1) % vocab
    want = base.copy()
    np.add.at(want.reshape(-1), (mixed * width + np.arange(width)).reshape(-1), src.reshape(-1))
    np.testing.assert_array_equal(indexing.scatter_add(base, 0, mixed, src), want)
    outside = np.broadcast_to(np.r_[rows[:-1], vocab][:, None], (tokens, width))
    want = base.copy()
    np.add.at(want, rows[:-1], src[:-1])
    np.testing.assert_array_equal(indexing.scatter_add(base, 0, outside, src), want)
