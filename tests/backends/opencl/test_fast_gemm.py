"""The kept-plan matmul of 2-D floats (fastnn_opencl.fast_gemm) gives the general path's
results bit for bit, for both kernel designs, as buffers, offsets and shapes change
between calls, for contiguous operands and transposed views (packed, direct and NT
kernels); what it does not cover (other views, batches, integers) goes the general way."""

import numpy as np
import pytest


@pytest.mark.parametrize("design", ["cpu", "tiled"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fast_matmul_equals_the_general_path(ocl, monkeypatch, design, dtype):
    from fastnn_opencl import linalg
    from fastnn_opencl.misc import from_numpy, to_numpy

    monkeypatch.setenv("FASTNN_OPENCL_GEMM", design)
    rng = np.random.default_rng(3)
    calls = 0
    for m, k, n in [(4, 4, 4), (7, 5, 3), (4, 4, 4), (33, 17, 65), (1, 9, 1), (7, 5, 3)]:
        big = rng.normal(size=(m + 2, k)).astype(dtype)
        a = from_numpy(big, 0).view((m, k), (k, 1))  # contiguous, at an offset
        a.offset = 2 * k
        b = from_numpy(rng.normal(size=(k, n)).astype(dtype), 0)
        fast = to_numpy(linalg.matmul(a, b))
        with monkeypatch.context() as patch:
            patch.setattr(linalg, "matmul_2d", lambda a, b: None)
            general = to_numpy(linalg.matmul(a, b))
        np.testing.assert_array_equal(fast, general)
        want = big[2:].astype(np.float64) @ to_numpy(b).astype(np.float64)
        np.testing.assert_allclose(fast, want, rtol=1e-5, atol=1e-5)
        calls += 1
    assert calls == 6


def test_fast_matmul_leaves_other_operands_to_the_general_path(ocl):
    from fastnn_opencl.fast_gemm import matmul_2d
    from fastnn_opencl.misc import from_numpy

    x = from_numpy(np.ones((3, 4), np.float32), 0)
    y = from_numpy(np.ones((4, 3), np.float32), 0)
    assert matmul_2d(x, y) is not None
    assert matmul_2d(x.view((4, 3), (1, 4)), x) is not None  # a transposed view
    assert matmul_2d(x.view((2, 4), (8, 1)), y) is None  # every other row
    assert matmul_2d(from_numpy(np.ones((2, 3, 4), np.float32), 0), y) is None  # a batch
    assert matmul_2d(from_numpy(np.ones((3, 4), np.int32), 0),
                     from_numpy(np.ones((4, 3), np.int32), 0)) is None
    assert matmul_2d(x, from_numpy(np.ones((4, 3), np.float64), 0)) is None  # mixed dtypes
    assert matmul_2d(x, from_numpy(np.ones((5, 3), np.float32), 0)) is None  # k differs


# (m, k, n): packed with k split and summed, packed over KC chunks, NT (k >= 256, n < 32),
# the direct kernel (short k), one row, narrow outputs packed in one vector's width (rows
# past a block's edge; k split)
LAYOUT_SHAPES = [(7, 3000, 50), (37, 700, 83), (128, 512, 10), (33, 17, 65), (1, 300, 40),
                 (301, 260, 16), (50, 2100, 16)]


@pytest.mark.parametrize("layout", ["nt", "tn", "tt"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fast_matmul_of_transposed_views_equals_the_general_path(ocl, monkeypatch, layout,
                                                                dtype):
    from fastnn_opencl import linalg
    from fastnn_opencl.fast_gemm import matmul_2d
    from fastnn_opencl.misc import from_numpy, to_numpy

    rng = np.random.default_rng(5)

    def operand(shape, transposed):  # a transposed view of a contiguous matrix, or not
        if not transposed:
            x = rng.normal(size=shape).astype(dtype)
            return x, from_numpy(x, 0)
        x = rng.normal(size=shape[::-1]).astype(dtype)
        return x.T, from_numpy(x, 0).view(shape, (1, shape[0]))

    fast_calls = 0
    for m, k, n in LAYOUT_SHAPES:
        a, x = operand((m, k), layout[0] == "t")
        b, y = operand((k, n), layout[1] == "t")
        fast = matmul_2d(x, y)
        with monkeypatch.context() as patch:
            patch.setattr(linalg, "matmul_2d", lambda a, b: None)
            general = to_numpy(linalg.matmul(x, y))
        want = a.astype(np.float64) @ b.astype(np.float64)
        np.testing.assert_allclose(general, want, rtol=1e-4, atol=1e-4 * k ** 0.5)
        if fast is not None:  # None: the general path copies B first (short k, B = W.T)
            np.testing.assert_array_equal(to_numpy(fast), general)
            fast_calls += 1
    assert fast_calls >= 3


def test_a_narrow_output_packs_one_vector_wide(ocl):
    """An output no wider than one vector packs in one-vector panels with more rows per
    block (the tuned block's accumulators), not in a panel half of zeros."""
    from fastnn_opencl import gemm_tune, linalg
    from fastnn_opencl.runtime import state

    dev = state(0)
    lanes = linalg.packed_lanes(dev, "float32")
    tm, vn = gemm_tune.blocks(dev, "float32")
    defines, rows, width, *_ = linalg.packed_plan(dev, "float32", 64, lanes, 300, 1)
    assert width == lanes and dict(defines)["VN"] == 1
    assert rows == min(tm * vn, linalg.NARROW_TM)
    assert linalg.packs(dev, 2048, 16, 256) == linalg.uses_cpu_kernels(dev)


@pytest.mark.parametrize("m, k, n", [(192, 1024, 64), (256, 2048, 16), (37, 700, 83)])
def test_few_tiles_take_fewer_row_panels_before_splitting_k(ocl, monkeypatch, m, k, n):
    """A long-k product with few output tiles and a B that stays in L2 (the models'
    weight gradients, A transposed) runs in more work-items of fewer row panels each,
    without a k split and its summing launch, and gives the product."""
    from fastnn_opencl import gemm_tune, linalg
    from fastnn_opencl.misc import from_numpy, to_numpy
    from fastnn_opencl.runtime import state

    dev = state(0)
    if not linalg.packs(dev, m, n, k):
        pytest.skip("the packed GEMM kernel runs on CPU devices only")
    monkeypatch.setattr(gemm_tune, "blocks", lambda dev, dtype: (8, 1))
    monkeypatch.setattr(linalg, "matmul_2d", lambda a, b: None)  # no plan kept with others
    defines, tm, nr, mb, nb, groups, splits = linalg.packed_plan(dev, "float32", m, n, k, 1)
    rows = dict(defines)["R"]
    assert splits == 1 and groups == -(-mb // rows)
    if nb * -(-mb // linalg.ROW_PANELS) < linalg.SPLIT_TILES:  # 16 lanes: all three
        assert rows < linalg.ROW_PANELS and nb * groups >= linalg.SPLIT_TILES
    rng = np.random.default_rng(5)
    at, b = rng.normal(size=(k, m)), rng.normal(size=(k, n))
    x = from_numpy(at.astype(np.float32), 0).view((m, k), (1, m))  # A transposed: G.T @ X
    got = to_numpy(linalg.matmul(x, from_numpy(b.astype(np.float32), 0)))
    want = at.T @ b
    assert np.abs(got - want).max() <= 2e-6 * k ** 0.5 * np.abs(want).max()


def test_a_kept_product_is_looked_up_by_shapes_strides_and_dtypes(ocl):
    """Plans are kept by (shapes, strides, dtypes, devices): after a cached call, one
    that changes any of them (or that the fast path leaves to the general one, cached
    as such) still computes its own product."""
    from fastnn_opencl import linalg
    from fastnn_opencl.misc import from_numpy, to_numpy

    rng = np.random.default_rng(8)

    def check(x, y, want):
        np.testing.assert_allclose(to_numpy(linalg.matmul(x, y)), want, rtol=1e-5, atol=1e-5)

    a32 = rng.normal(size=(4, 4)).astype(np.float32)
    b32 = rng.normal(size=(4, 4)).astype(np.float32)
    a64, b64 = a32.astype(np.float64) * 2, b32.astype(np.float64) - 1
    x32, y32 = from_numpy(a32, 0), from_numpy(b32, 0)
    x64, y64 = from_numpy(a64, 0), from_numpy(b64, 0)
    for _ in range(2):  # each case twice: built, then taken from the table
        check(x32, y32, a32 @ b32)
        check(x64, y64, a64 @ b64)  # same shapes and strides, another dtype
        check(x32.view((4, 4), (1, 4)), y32, a32.T @ b32)  # same shape, transposed a
        check(x32, y32.view((4, 4), (1, 4)), a32 @ b32.T)
        check(x32.view((2, 4), (8, 1)), y32, a32[::2] @ b32)  # every other row: general
        check(x32.view((2, 4), (4, 1)), y32, a32[:2] @ b32)  # those shapes, contiguous
        check(x32.view((4, 2), (4, 1)), y32.view((2, 4), (4, 1)), a32[:, :2] @ b32[:2])
        wide = rng.normal(size=(4, 6)).astype(np.float32)
        check(x32, from_numpy(wide, 0), a32 @ wide)  # another n
    ints = from_numpy(np.arange(16, dtype=np.int32).reshape(4, 4), 0)
    np.testing.assert_array_equal(to_numpy(linalg.matmul(ints, ints)),
                                  np.arange(16).reshape(4, 4) @ np.arange(16).reshape(4, 4))
