"""fastnn_cpu.mkl_gemm: products through MKL's GEMM (where the ``mkl`` wheel is installed)
agree with a float64 NumPy reference for every layout BLAS reads in place, fall back to
NumPy for the rest, and FASTNN_CPU_GEMM chooses or refuses."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

mkl_gemm = pytest.importorskip("fastnn_cpu.mkl_gemm")
needs_mkl = pytest.mark.skipif(mkl_gemm.VERSION is None,
                               reason="MKL not installed (pip install mkl)")


def _layouts(rng, rows, cols, dtype):
    """The (rows, cols) operand as C-order, F-order (a transpose), and a slice of a wider
    array in each order (a leading dimension larger than the row)."""
    base = rng.uniform(-1, 1, (rows, cols + 3)).astype(dtype)
    c = np.ascontiguousarray(base[:, :cols])
    wide_t = rng.uniform(-1, 1, (cols, rows + 5)).astype(dtype)
    return {"C": c, "F": np.asfortranarray(c), "C-wide": base[:, :cols],
            "F-wide": wide_t[:, :rows].T}


@needs_mkl
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_in_place_layout_matches_the_float64_product(dtype):
    rng = np.random.default_rng(0)
    m, k, n = 96, 160, 150  # m k n above MIN_MNK: MKL takes it
    assert m * k * n >= mkl_gemm.MIN_MNK
    tol = 2e-4 if dtype == np.float32 else 1e-12
    for name_a, a in _layouts(rng, m, k, dtype).items():
        for name_b, b in _layouts(rng, k, n, dtype).items():
            assert mkl_gemm._operand(a, m, k) is not None, name_a
            got = mkl_gemm.matmul(a, b)
            want = a.astype(np.float64) @ b.astype(np.float64)
            assert got.dtype == dtype and got.shape == (m, n)
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * k,
                                       err_msg=f"a {name_a}, b {name_b}")


@needs_mkl
def test_out_is_written_and_returned():
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (128, 256)).astype(np.float32)
    b = rng.uniform(-1, 1, (256, 128)).astype(np.float32)
    out = np.full((128, 128), np.nan, np.float32)
    assert mkl_gemm.matmul(a, b, out=out) is out
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("case", ["small", "int", "mixed", "batched", "strided", "out_f",
                                  "out_is_a"])
def test_what_blas_cannot_take_in_place_goes_to_numpy(case):
    """Each case gives NumPy's own result (bit for bit): too small for MKL, integer or
    mixed dtypes, a batch, an operand with no unit stride, an F-order ``out``, an ``out``
    that is an operand."""
    rng = np.random.default_rng(2)
    a = rng.uniform(-1, 1, (128, 256)).astype(np.float32)
    b = rng.uniform(-1, 1, (256, 128)).astype(np.float32)
    out = None
    if case == "small":
        a, b = a[:4, :8], b[:8, :4]
    elif case == "int":
        a, b = (a * 10).astype(np.int64), (b * 10).astype(np.int64)
    elif case == "mixed":
        b = b.astype(np.float64)
    elif case == "batched":
        a, b = np.stack([a, a]), np.stack([b, b])
    elif case == "strided":
        a = rng.uniform(-1, 1, (128, 512)).astype(np.float32)[:, ::2]
    elif case == "out_f":
        out = np.empty((128, 128), np.float32, order="F")
    elif case == "out_is_a":  # a square product written over its own left operand
        a, b = a[:, :128].copy(), b[:128].copy()
        out = a
    want = np.matmul(a.copy(), b)
    if case == "out_f":  # NumPy's own product into an F-ordered out (its rounding may
        # differ in the last bit from a C-ordered one's: NumPy 2.4 computes it transposed)
        want = np.matmul(a, b, out=np.empty_like(out))
    got = mkl_gemm.matmul(a, b, out=out)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want)
    if out is not None:
        assert got is out


def _probe(env: dict) -> subprocess.CompletedProcess:
    code = "import fastnn_cpu.mkl_gemm as m; print(m.VERSION)"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=120)


def test_fastnn_cpu_gemm_numpy_turns_mkl_off_and_a_bad_value_is_named():
    off = _probe({"FASTNN_CPU_GEMM": "numpy"})
    assert off.returncode == 0 and off.stdout.strip() == "None"
    bad = _probe({"FASTNN_CPU_GEMM": "openblas"})
    assert bad.returncode != 0 and "FASTNN_CPU_GEMM must be one of auto, mkl, numpy" in \
        bad.stderr


def test_asking_for_mkl_where_none_loads_says_how_to_install(tmp_path):
    missing = _probe({"FASTNN_CPU_GEMM": "mkl",
                      "FASTNN_MKL_LIBRARY": str(tmp_path / "libmkl_rt.so.3")})
    assert missing.returncode != 0
    assert 'pip install "fastnn-backend-cpu[mkl]"' in missing.stderr


@needs_mkl
def test_the_cpu_backend_reports_mkl_and_a_training_step_matches_numpy_s():
    """With MKL on, fastnn info's version shows it, and an MLP step's loss and gradients
    agree with the same step with FASTNN_CPU_GEMM=numpy (float32 tolerance)."""
    code = r"""
import json, numpy as np, fastnn as fnn
from fastnn import nn
import fastnn.functional as F
from fastnn.api import registry
fnn.manual_seed(0)
rng = np.random.default_rng(0)
model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
x = fnn.tensor(rng.normal(size=(64, 784)).astype(np.float32))
y = fnn.tensor(rng.integers(0, 10, 64))
loss = F.cross_entropy(model(x), y)
loss.backward()
version = [b.record.version for b in registry.loaded() if b.name == "cpu"][0]
print(json.dumps({"loss": float(loss.item()), "version": version,
                  "grad": model[0].weight.grad.numpy().ravel()[:4096].tolist()}))
"""
    runs = {}
    for mode in ("mkl", "numpy"):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env={**os.environ, "FASTNN_CPU_GEMM": mode}, timeout=300)
        assert done.returncode == 0, done.stderr
        runs[mode] = json.loads(done.stdout.strip().splitlines()[-1])
    assert "MKL" in runs["mkl"]["version"] and "MKL" not in runs["numpy"]["version"]
    assert abs(runs["mkl"]["loss"] - runs["numpy"]["loss"]) < 1e-5
    np.testing.assert_allclose(runs["mkl"]["grad"], runs["numpy"]["grad"], rtol=1e-4,
                               atol=1e-6)


@needs_mkl
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_shared_left_batches_write_and_accumulate(dtype):
    """out[i] = a @ b[i], then += a2 @ b2[i], with b a shifted window of a padded signal
    (the conv1d taps' layout: row stride past the row, batch stride past the rows)."""
    rng = np.random.default_rng(3)
    batch, m, k, n = 16, 24, 32, 200  # 2.5M multiply-adds: above MIN_MNK
    padded = rng.uniform(-1, 1, (batch, k, n + 4)).astype(dtype)
    a, a2 = rng.uniform(-1, 1, (2, m, k)).astype(dtype)
    out = np.full((batch, m, n), np.nan, dtype)
    assert mkl_gemm.shared_left(a, padded[:, :, 1:n + 1], out, False)
    assert mkl_gemm.shared_left(a2.T.copy().T, padded[:, :, 3:n + 3], out, True)
    p64 = padded.astype(np.float64)
    want = a.astype(np.float64) @ p64[:, :, 1:n + 1] + a2.astype(np.float64) @ p64[:, :, 3:n + 3]
    tol = 2e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol * k)


def test_shared_left_declines_what_it_cannot_take():
    """False (nothing written) without MKL, for a small batch, mixed dtypes, an F-order
    out, b without unit inner stride, or an out that is b; the caller's NumPy path runs
    then."""
    rng = np.random.default_rng(4)
    a = rng.uniform(-1, 1, (32, 32)).astype(np.float32)
    b = rng.uniform(-1, 1, (32, 32, 256)).astype(np.float32)
    out = np.zeros((32, 32, 256), np.float32)
    cases = [(a[:2, :2], b[:1, :2, :8], np.zeros((1, 2, 8), np.float32)),
             (a.astype(np.float64), b, out),
             (a, b, np.zeros((32, 32, 256), np.float32, order="F")),
             (a, rng.uniform(-1, 1, (32, 32, 512)).astype(np.float32)[:, :, ::2], out)]
    for args in cases:
        assert not mkl_gemm.shared_left(*args, False)
        assert not args[2].any()
    before = b.copy()
    assert not mkl_gemm.shared_left(a, b, b, False)  # out is b: BLAS would read its writes
    assert np.array_equal(b, before)
    assert mkl_gemm.shared_left(a, b, out, False) is (mkl_gemm.VERSION is not None)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(16, 64, 64), (2, 3, 5, 64), (1, 300, 64), (0, 4, 64)])
def test_a_stack_of_rows_is_one_product(dtype, shape):
    """A C-contiguous stack times one matrix (a Linear on (batch, time, features)) is the
    product of its rows: the float64 product's values, the stack's shape, into ``out`` too;
    a stack that is not C-contiguous takes np.matmul as before."""
    rng = np.random.default_rng(len(shape))
    a = rng.standard_normal(shape).astype(dtype)
    b = rng.standard_normal((64, 48)).astype(dtype).T.copy().T  # (a weight's transpose)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    got = mkl_gemm.matmul(a, b)
    assert got.shape == want.shape and got.dtype == dtype
    np.testing.assert_allclose(got, want, **tol)
    out = np.empty(want.shape, dtype)
    assert mkl_gemm.matmul(a, b, out=out) is out
    np.testing.assert_allclose(out, want, **tol)
    strided = np.swapaxes(np.swapaxes(a, 0, -2).copy(), 0, -2)  # same values, not C-order
    if strided.size:
        np.testing.assert_allclose(mkl_gemm.matmul(strided, b), want, **tol)
