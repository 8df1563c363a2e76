"""The packed CPU GEMM's per-device block sizes: the disk cache (hit, corrupt, invalid
entry) and products with every candidate block against NumPy float64 (odd shapes, one row,
transposed operands, a batch, float32 and float64)."""

import json

import numpy as np
import pytest


@pytest.fixture
def tuner(ocl, monkeypatch, tmp_path):
    from fastnn_opencl import gemm_tune

    monkeypatch.setenv("FASTNN_CACHE", str(tmp_path))
    monkeypatch.setenv("FASTNN_OPENCL_TUNE", "1")
    monkeypatch.setattr(gemm_tune, "_chosen", {})
    return gemm_tune


def _key(tuner, dev):
    from fastnn_opencl.linalg import packed_lanes

    return tuner.cache_key(dev, "float32", packed_lanes(dev, "float32"))


def _device():
    from fastnn_opencl.runtime import state

    return state(0)


def test_tuning_result_is_cached_on_disk_by_device_name(tuner, monkeypatch):
    dev = _device()
    calls = []
    monkeypatch.setattr(tuner, "tune", lambda d, dtype: calls.append(dtype) or (8, 1))
    assert tuner.blocks(dev, "float32") == (8, 1)
    data = json.loads(tuner.cache_path().read_text())
    assert data[_key(tuner, dev)] == [8, 1]
    assert _key(tuner, dev).startswith(f"{dev.name}|float32")
    tuner._chosen.clear()  # a new process: read from disk, no second tuning run
    assert tuner.blocks(dev, "float32") == (8, 1)
    assert calls == ["float32"]


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"%s|float32|packed1": [3, 3]}'])
def test_a_corrupt_or_invalid_cache_is_ignored(tuner, monkeypatch, text):
    dev = _device()
    tuner.cache_path().write_text(text.replace("%s", dev.name))
    monkeypatch.setattr(tuner, "tune", lambda d, dtype: (4, 3))
    if text.startswith("{\""):  # valid JSON, an entry that is no candidate: retuned quietly
        assert tuner.blocks(dev, "float32") == (4, 3)
    else:
        with pytest.warns(UserWarning, match="corrupt"):
            assert tuner.blocks(dev, "float32") == (4, 3)
    key = _key(tuner, dev)
    assert json.loads(tuner.cache_path().read_text())[key] == [4, 3]


# (m, k, n, A transposed, B transposed, batch): past the tile in every direction, one row,
# k across the KC chunk (partial sums through the scratch buffer), k split across
# work-items (few tiles, long k: summed after), a batch, a k shorter than one vector
SHAPES = [(37, 600, 70, False, False, 1), (2, 1200, 513, True, False, 1),
          (65, 513, 33, False, True, 1), (96, 513, 200, True, True, 1),
          (7, 3000, 50, False, False, 3), (130, 64, 160, True, False, 2),
          (32, 4100, 80, False, True, 1), (1030, 20, 70, False, True, 1)]  # a short k


@pytest.mark.parametrize("choice", [(6, 2), (6, 1), (5, 1), (2, 2), (4, 3), (4, 2), (8, 1)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_candidate_block_computes_the_product(ocl, monkeypatch, choice, dtype):
    from fastnn_opencl import gemm_tune, linalg
    from fastnn_opencl.misc import from_numpy, to_numpy

    dev = _device()
    if not linalg.uses_cpu_kernels(dev):
        pytest.skip("the packed GEMM kernel runs on CPU devices only")
    if dtype == "float64" and not dev.fp64:
        pytest.skip("no float64 on this device")
    assert choice in gemm_tune.CANDIDATES
    monkeypatch.setattr(gemm_tune, "blocks", lambda dev, dtype: choice)
    rng = np.random.default_rng(0)
    for m, k, n, ta, tb, batch in SHAPES:
        a = rng.standard_normal((batch, k, m) if ta else (batch, m, k))
        b = rng.standard_normal((batch, n, k) if tb else (batch, k, n))
        x, y = from_numpy(a.astype(dtype), 0), from_numpy(b.astype(dtype), 0)
        if ta:  # transposed views: the packing pass reads them through their strides
            x, a = x.view((batch, m, k), (m * k, 1, m)), a.transpose(0, 2, 1)
        if tb:
            y, b = y.view((batch, k, n), (n * k, 1, k)), b.transpose(0, 2, 1)
        if batch == 1:
            x, y, a, b = x.view((m, k), x.strides[1:]), y.view((k, n), y.strides[1:]), a[0], b[0]
        assert linalg.packs(dev, m, n, k)
        got = to_numpy(linalg.matmul(x, y))
        ref = a @ b
        tol = 2e-6 if dtype == "float32" else 1e-13
        assert np.abs(got - ref).max() <= tol * k ** 0.5 * np.abs(ref).max(), (m, k, n)


@pytest.mark.slow
def test_a_real_tuning_run_picks_a_candidate(tuner):
    assert tuner.tune(_device(), "float32") in tuner.CANDIDATES


# ---- the unpacked kernel's blocks (k_gemm_cpu: products below the packing threshold)

# (m, k, n, A transposed, batch): ragged row and column edges, one row, a narrow output (4-lane
# vectors), an output narrower than a vector, a short k, a transposed A, a batch
DIRECT_SHAPES = [(37, 60, 70, False, 1), (1, 100, 300, False, 1), (30, 40, 12, False, 1),
                 (13, 9, 5, False, 1), (128, 10, 100, True, 1), (10, 128, 64, True, 2),
                 (33, 70, 50, False, 3)]


@pytest.mark.parametrize("choice", [(4, 2), (2, 4), (5, 2), (6, 2), (4, 1), (8, 1), (2, 2),
                                    (6, 1)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("wide", ["0", "1"])  # 16-lane vectors where the device has them
def test_every_direct_candidate_computes_the_product(ocl, monkeypatch, choice, dtype, wide):
    from fastnn_opencl import gemm_tune, linalg
    from fastnn_opencl.misc import from_numpy, to_numpy

    dev = _device()
    if not linalg.uses_cpu_kernels(dev):
        pytest.skip("the unpacked CPU kernel runs on CPU devices only")
    if dtype == "float64" and not dev.fp64:
        pytest.skip("no float64 on this device")
    assert choice in gemm_tune.DIRECT_CANDIDATES + gemm_tune.DIRECT_WIDE_CANDIDATES
    monkeypatch.setenv("FASTNN_OPENCL_WIDE", wide)
    monkeypatch.setattr(gemm_tune, "direct_blocks", lambda dev, dtype: choice)
    monkeypatch.setattr(linalg, "matmul_2d", lambda a, b: None)  # no plan kept across choices
    rng = np.random.default_rng(1)
    for m, k, n, ta, batch in DIRECT_SHAPES:
        a = rng.standard_normal((batch, k, m) if ta else (batch, m, k))
        b = rng.standard_normal((batch, k, n))
        x, y = from_numpy(a.astype(dtype), 0), from_numpy(b.astype(dtype), 0)
        if ta:
            x, a = x.view((batch, m, k), (m * k, 1, m)), a.transpose(0, 2, 1)
        assert not linalg.packs(dev, m, n, k)
        got = to_numpy(linalg.matmul(x, y))
        ref = a @ b
        tol = 2e-6 if dtype == "float32" else 1e-13
        assert np.abs(got - ref).max() <= tol * k ** 0.5 * np.abs(ref).max(), (m, k, n)


def test_direct_blocks_are_cached_by_device_and_dtype(tuner, monkeypatch):
    """Keyed by device, dtype and lane count: 16-lane vectors have their own candidates."""
    dev = _device()
    candidates, version = tuner.direct_candidates(dev, "float32")
    choice = candidates[-1]  # not the default
    calls = []
    monkeypatch.setattr(tuner, "tune_direct", lambda d, dtype: calls.append(dtype) or choice)
    assert tuner.direct_blocks(dev, "float32") == choice
    kind = "float32" if version == tuner.DIRECT_VERSION else "float32x16"
    key = f"{dev.name}|{kind}|{version}"
    assert json.loads(tuner.cache_path().read_text())[key] == list(choice)
    tuner._chosen.clear()
    assert tuner.direct_blocks(dev, "float32") == choice
    tuner.cache_path().write_text(json.dumps({key: [7, 7]}))  # no candidate: tuned afresh
    tuner._chosen.clear()
    assert tuner.direct_blocks(dev, "float32") == choice
    assert calls == ["float32", "float32"]


@pytest.mark.slow
def test_a_real_direct_tuning_run_picks_a_candidate(tuner):
    dev = _device()
    assert tuner.tune_direct(dev, "float32") in tuner.direct_candidates(dev, "float32")[0]
