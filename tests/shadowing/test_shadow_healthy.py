"""Healthy backends: opencl shadowed by cpu reports no mismatch on `fastnn train`'s models."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from fastnn.cli import seq_models
from fastnn.cli.train import MODELS, build_model, make_optimizer, reverse_step, tape_step


def _opencl():
    try:
        fnn.Device("opencl")
    except fnn.BackendError as exc:
        pytest.skip(f"opencl unavailable: {exc}")


# small inputs of each model's kind: digits (64 pixels) for mlp and cnn, (C, L) series else
SHAPES = {"mlp": (64,), "cnn": (64,)}


def _train(kind, dtype, steps, reverse=False, batch=6, device="opencl"):
    rng = np.random.default_rng(1)
    shape = SHAPES.get(kind, (1, seq_models.PATCH * 5))
    fnn.manual_seed(0)
    with fnn.use(device):
        model = build_model(kind, shape, 4).to(getattr(fnn, dtype))
        opt = make_optimizer("adam", model.parameters(), 1e-2)
        with fnn.shadow("cpu", mode="record") as session:
            for _ in range(steps):
                x = fnn.tensor(rng.normal(size=(batch, *shape)).astype(dtype))
                y = fnn.tensor(rng.integers(0, 4, batch))
                if reverse:
                    reverse_step(model, opt, x, y, 4)
                else:
                    tape_step(model, opt, x, y)
    return session.report()


@pytest.mark.parametrize("kind", MODELS)
def test_train_models_float32_no_mismatch(kind):
    _opencl()
    report = _train(kind, "float32", 2)
    assert report.mismatches == 0 and report.rows, report


def test_mlp_float64_no_mismatch():
    _opencl()
    report = _train("mlp", "float64", 2)
    assert report.mismatches == 0, report
    assert {row["dtype"] for row in report.rows if row["op"] == "matmul"} == {"float64"}


def test_reverse_and_apply_are_shadowed():
    _opencl()
    report = _train("mlp", "float32", 2, reverse=True)
    ops = {row["op"] for row in report.rows}
    assert report.mismatches == 0 and "adam_step" in ops and "matmul" in ops, report


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", MODELS)
def test_train_models_100_steps_no_mismatch(kind, dtype):
    _opencl()
    report = _train(kind, dtype, 100, batch=16)
    assert report.mismatches == 0, report
