"""Creation primitives enter a cupy Device only where there is a choice of GPU (no GPU here:
cupy's Device is replaced by a recorder)."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import numpy as np
import pytest
from fastnn_cuda import primitives


class _Recorder:
    entered: list = []

    def __init__(self, index):
        self.index = index

    def __enter__(self):
        _Recorder.entered.append(self.index)

    def __exit__(self, *exc):
        return False


@pytest.fixture
def fake_cupy(monkeypatch):
    _Recorder.entered = []
    fake = SimpleNamespace(cuda=SimpleNamespace(Device=_Recorder), full=np.full,
                           array=np.array)
    monkeypatch.setattr(primitives, "cp", fake)
    return _Recorder.entered


def test_one_gpu_creates_without_entering_a_device(fake_cupy, monkeypatch):
    monkeypatch.setattr(primitives, "_ONE_GPU", True)
    assert isinstance(primitives.on_device(0), contextlib.nullcontext)
    np.testing.assert_array_equal(primitives.full((2,), 3.0, "float32", 0), [3.0, 3.0])
    np.testing.assert_array_equal(primitives.from_numpy(np.ones(2), 0), [1.0, 1.0])
    assert fake_cupy == []


def test_several_gpus_create_on_the_asked_one(fake_cupy, monkeypatch):
    monkeypatch.setattr(primitives, "_ONE_GPU", False)
    primitives.full((2,), 1.0, "float32", 1)
    primitives.from_numpy(np.ones(2), 0)
    assert fake_cupy == [1, 0]
