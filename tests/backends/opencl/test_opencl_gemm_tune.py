"""The CPU GEMM's per-device block sizes: the disk cache (hit, corrupt, invalid entry) and
a product with every candidate block against NumPy."""

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


def _device():
    from fastnn_opencl.runtime import state

    return state(0)


def test_tuning_result_is_cached_on_disk_by_device_name(tuner, monkeypatch):
    dev = _device()
    calls = []
    monkeypatch.setattr(tuner, "tune", lambda d, dtype: calls.append(dtype) or (8, 2))
    assert tuner.blocks(dev, "float32") == (8, 2)
    data = json.loads(tuner.cache_path().read_text())
    assert data == {f"{dev.name}|float32": [8, 2]}
    tuner._chosen.clear()  # a new process: read from disk, no second tuning run
    assert tuner.blocks(dev, "float32") == (8, 2)
    assert calls == ["float32"]


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"%s|float32": [3, 3]}'])
def test_a_corrupt_or_invalid_cache_is_ignored(tuner, monkeypatch, text):
    dev = _device()
    tuner.cache_path().write_text(text.replace("%s", dev.name))
    monkeypatch.setattr(tuner, "tune", lambda d, dtype: (2, 4))
    if text.startswith("{\""):  # valid JSON, an entry that is no candidate: retuned quietly
        assert tuner.blocks(dev, "float32") == (2, 4)
    else:
        with pytest.warns(UserWarning, match="corrupt"):
            assert tuner.blocks(dev, "float32") == (2, 4)
    assert json.loads(tuner.cache_path().read_text())[f"{dev.name}|float32"] == [2, 4]


@pytest.mark.parametrize("choice", [(4, 4), (4, 2), (8, 2), (2, 4)])
def test_every_candidate_block_computes_the_product(ocl, monkeypatch, choice):
    from fastnn_opencl import gemm_tune, linalg
    from fastnn_opencl.misc import from_numpy, to_numpy

    if not linalg.uses_cpu_kernels(_device()):
        pytest.skip("the CPU GEMM kernel runs on CPU devices only")
    monkeypatch.setattr(gemm_tune, "blocks", lambda dev, dtype: choice)
    rng = np.random.default_rng(0)
    for m, k, n in [(37, 19, 70), (5, 3, 130), (64, 64, 64)]:
        a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
        got = to_numpy(linalg.matmul(from_numpy(a.astype(np.float32), 0),
                                     from_numpy(b.astype(np.float32), 0)))
        np.testing.assert_allclose(got, a.astype(np.float32) @ b.astype(np.float32),
                                   rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_a_real_tuning_run_picks_a_candidate(tuner):
    assert tuner.tune(_device(), "float32") in tuner.CANDIDATES
