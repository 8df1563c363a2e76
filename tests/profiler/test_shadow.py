"""The profiler and fnn.shadow nest either way: each sees the other's calls, and both
put everything back."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from fastnn.profiler import profile
from tests.fake_backends import forget
from tests.profiler.common import assert_same, snapshot
from tests.shadowing import faulty


@pytest.fixture
def backend(tmp_path):
    name = faulty.install(tmp_path, "healthy")
    yield name
    forget()


def test_profiler_inside_shadow(backend):
    x = fnn.tensor(np.ones((2, 3), np.float32), device=backend)
    fnn.tensor([1.0])  # (cpu's device parsed too)
    before = snapshot()
    with fnn.shadow("cpu", mode="record") as session, profile() as prof:
        x.exp()
    assert_same(before, snapshot())
    (row,) = [r for r in session.report().rows if r["op"] == "exp"]
    assert row["calls"] == row["checked"] == 1
    (ours,) = [e for e in prof.events() if e.name == "exp" and e.backend == backend]
    # the reference's call runs inside the shadowed one: its child
    assert [(c.name, c.backend) for c in ours.cpu_children
            if c.name == "exp"] == [("exp", "cpu")]


def test_shadow_inside_profiler(backend):
    x = fnn.tensor(np.ones((2, 3), np.float32), device=backend)
    fnn.tensor([1.0])
    before = snapshot()
    with profile() as prof, fnn.shadow("cpu", mode="record") as session:
        x.exp()
    assert_same(before, snapshot())
    (row,) = [r for r in session.report().rows if r["op"] == "exp"]
    assert row["calls"] == row["checked"] == 1  # the device's calls reach the shadow
    exps = sorted(e.backend for e in prof.events() if e.name == "exp")
    assert exps == sorted([backend, "cpu"])  # the backend's and the reference's
