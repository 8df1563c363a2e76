"""Shadowing with the checks on a worker thread (``FASTNN_SHADOW_WORKER=1``): the same
verdicts and blame as the default's lagging checks, from another thread."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import fastnn as fnn
from fastnn.shadowing import batch, worker
from tests.shadowing import faulty
from tests.shadowing.test_shadow_healthy import _train
from tests.source_lines import line_in

HERE = __file__.rstrip("c")


@pytest.fixture(autouse=True)
def with_worker(monkeypatch):
    monkeypatch.setenv(worker.VARIABLE, "1")


def test_the_checks_run_on_the_worker_and_agree_with_the_default(device_base, monkeypatch):
    threads = set()
    settle = batch.Batching._settle_batch

    def recorded(self, *args, **kwargs):
        threads.add(threading.current_thread().name)
        return settle(self, *args, **kwargs)

    monkeypatch.setattr(batch.Batching, "_settle_batch", recorded)
    threaded = _train("mlp", "float32", 5, device=device_base)
    assert "fastnn-shadow-checks" in threads
    monkeypatch.delenv(worker.VARIABLE)
    threads.clear()
    default = _train("mlp", "float32", 5, device=device_base)
    assert threads == {threading.main_thread().name}
    assert threaded.mismatches == default.mismatches == 0
    counts = {(r["op"], r["dtype"]): (r["calls"], r["checked"]) for r in default.rows}
    assert {(r["op"], r["dtype"]): (r["calls"], r["checked"]) for r in threaded.rows} == counts
    assert counts[("adam_step", "float32")][1] == 5


def test_a_wrong_kernel_found_on_the_worker_is_blamed_at_its_own_line(device_base, tmp_path):
    name = faulty.install(tmp_path, "exp", base=device_base)
    x = fnn.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), device=name)
    with pytest.raises(fnn.ShadowMismatch) as caught, fnn.shadow("cpu"):
        for _ in range(3):
            y = (x * 2).relu()
            z = y.exp()  # the wrong exp
            (z + 1).sum().item()
    err = caught.value
    assert err.op == "exp" and err.source[:2] == (HERE, line_in(HERE, "the wrong exp"))
    assert err.producers[0][1] == "relu"


def test_the_worker_keeps_order_and_carries_errors_to_the_main_thread():
    seen = []

    def settle(value, fail):
        seen.append((value, threading.current_thread().name))
        if fail:
            raise ValueError(f"check {value} failed")

    checks = worker.Worker()
    for value in range(5):
        checks.put(settle, value, False)
    checks.wait()
    assert [v for v, _ in seen] == list(range(5))
    assert {t for _, t in seen} == {"fastnn-shadow-checks"}
    checks.put(settle, 5, True)
    checks.put(settle, 6, False)  # skipped: an error is waiting to be raised
    with pytest.raises(ValueError, match="check 5 failed"):
        checks.wait()
    checks.put(settle, 7, False)  # checked again once it was raised
    checks.put(settle, 8, True)
    checks.wait(quiet=True)  # (an error already on its way: this one is dropped)
    checks.wait()
    checks.close()
    assert [v for v, _ in seen] == [0, 1, 2, 3, 4, 5, 7, 8]


def test_only_a_yes_asks_for_the_worker(monkeypatch):
    for value, wanted in (("1", True), ("yes", True), ("On", True), ("0", False), ("", False)):
        monkeypatch.setenv(worker.VARIABLE, value)
        assert worker.wanted() is wanted
    monkeypatch.delenv(worker.VARIABLE)
    assert worker.wanted() is False
