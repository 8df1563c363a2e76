"""The minimal backend (tests/backends/minimal, its own distribution with only the required
primitives) passes the whole conformance suite and trains the MLP and the Conv1d net; a
backend with fewer hooks trains them through fallback, with the cost counted, and fails
clearly without it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn, optim
from fastnn.api import fallback, hookspec, registry
from tests.fake_backends import forget

MINIMAL = Path(__file__).parent / "minimal"
# a backend that lacks three primitives: erf, tanh and conv1d's weight gradient
FEWER = """
import fastnn_minimal as _m
from fastnn_minimal import *  # noqa: F401,F403
from fastnn_minimal.conv import conv1d, conv1d_grad_input  # noqa: F401
from fastnn_minimal.indexing import *  # noqa: F401,F403
from fastnn_minimal.conv_2d import conv2d, conv2d_grad_input, conv2d_grad_weight  # noqa: F401
del erf, tanh
fastnn_hook_modules = []
backend_probe = _m.backend_probe
"""


def _dist_info(root: Path, name: str, module: str) -> None:
    info = root / f"fastnn_backend_{name}-0.1.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fastnn-backend-{name}\n"
                                   "Version: 0.1\n")
    (info / "entry_points.txt").write_text(f"[fastnn.backends]\n{name} = {module}\n")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """minimal and fewer registered through real entry points (.dist-info on sys.path)."""
    root, other = tmp_path_factory.mktemp("minimal"), tmp_path_factory.mktemp("fewer")
    _dist_info(root, "minimal", "fastnn_minimal")
    _dist_info(other, "fewer", "fastnn_fewer")
    (other / "fastnn_fewer.py").write_text(textwrap.dedent(FEWER))
    added = [str(root), str(other), str(MINIMAL)]
    sys.path[:0] = added
    forget()
    yield root, other
    for p in added:
        sys.path.remove(p)
    fallback.set_fallback("fewer", None)
    forget()


def test_minimal_implements_exactly_the_primitives(installed):
    backend = registry.get_backend("minimal")
    assert backend.implemented == set(hookspec.PRIMITIVES)
    fewer = registry.get_backend("fewer")
    assert set(hookspec.PRIMITIVES) - fewer.implemented == {"erf", "tanh", "conv1d_grad_weight"}


@pytest.mark.slow  # the whole suite on the minimal backend: ~20 s; .ci/run runs it
def test_minimal_passes_the_whole_conformance_suite(installed):
    root, fewer = installed  # fewer stays out: the suite cross-checks every installed backend
    # only what the environment gives (no backend another test left on sys.path)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(root), str(MINIMAL)] + [p for p in os.environ.get("PYTHONPATH", "").split(
            os.pathsep) if p and p != str(fewer)]))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "fastnn.conformance", "--backend",
         "minimal", "-q", "-p", "no:cacheprovider", "-x"],
        cwd=root, env=env, capture_output=True, text=True, timeout=600)
    tail = done.stdout[-3000:] + done.stderr[-2000:]
    assert done.returncode == 0, tail
    assert "CONFORMS" in done.stdout, tail


def _mlp_and_conv(device):
    """Two small models on ``device`` with the same initial weights everywhere."""
    fnn.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(8, 16), nn.Activation("gelu"), nn.Linear(16, 3))
    conv = nn.Sequential(nn.Conv1d(2, 4, 3, padding=1), nn.Activation("tanh"),
                         nn.GlobalAvgPool1d(), nn.Linear(4, 3))
    return mlp.to(device), conv.to(device)


def _train(model, x, y, steps=5):
    opt = optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def _data(device):
    rng = np.random.default_rng(1)
    xm = fnn.tensor(rng.standard_normal((12, 8)), dtype=fnn.float32, device=device)
    xc = fnn.tensor(rng.standard_normal((12, 2, 10)), dtype=fnn.float32, device=device)
    y = fnn.tensor(rng.integers(0, 3, 12), device=device)
    return xm, xc, y


def _reference_losses():
    mlp, conv = _mlp_and_conv("cpu")
    xm, xc, y = _data("cpu")
    return _train(mlp, xm, y), _train(conv, xc, y)


def test_minimal_trains_the_mlp_and_the_conv1d_net_as_cpu_does(installed):
    want_mlp, want_conv = _reference_losses()
    mlp, conv = _mlp_and_conv("minimal")
    xm, xc, y = _data("minimal")
    np.testing.assert_allclose(_train(mlp, xm, y), want_mlp, rtol=1e-4)
    np.testing.assert_allclose(_train(conv, xc, y), want_conv, rtol=1e-4)
    assert want_mlp[-1] < want_mlp[0] and want_conv[-1] < want_conv[0]


def test_fewer_fails_clearly_without_fallback(installed):
    fallback.set_fallback("fewer", None)
    mlp, _ = _mlp_and_conv("fewer")
    xm, _, y = _data("fewer")
    with pytest.raises(NotImplementedError, match=r"'fewer' does not implement the primitive "
                                                  r"'erf'.*fallback='cpu'"):
        _train(mlp, xm, y)


def test_fewer_trains_through_fallback_and_counts_it(installed, monkeypatch):
    want_mlp, want_conv = _reference_losses()
    fnn.use("fewer", fallback="cpu")
    try:
        fnn.fallback_stats(reset=True)
        mlp, conv = _mlp_and_conv("fewer")
        xm, xc, y = _data("fewer")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            np.testing.assert_allclose(_train(mlp, xm, y), want_mlp, rtol=1e-4)
            np.testing.assert_allclose(_train(conv, xc, y), want_conv, rtol=1e-4)
        stats = fnn.fallback_stats()
        assert set(stats) == {"erf", "tanh", "conv1d_grad_weight"}
        # 5 steps: gelu's erf in forward and backward, tanh's forward, one weight gradient
        assert stats["conv1d_grad_weight"]["calls"] == 5
        # float32 bytes each call: x (12, 2, 10) and grad_out (12, 4, 10) in, weight (4, 2, 3) out
        moved = 4 * (12 * 2 * 10 + 12 * 4 * 10 + 4 * 2 * 3)
        assert stats["conv1d_grad_weight"]["bytes"] == 5 * moved
        assert all(s["calls"] >= 5 and s["bytes"] > 0 for s in stats.values())
        messages = [str(w.message) for w in caught if "fallback" in str(w.message)]
        assert sorted(m.split("lacks ")[1].split(";")[0] for m in messages) == [
            "'conv1d_grad_weight'", "'erf'", "'tanh'"]  # once per op
        monkeypatch.setenv("FASTNN_STRICT", "1")
        with pytest.raises(NotImplementedError, match="FASTNN_STRICT=1.*'erf'"):
            _train(mlp, xm, y, steps=1)
    finally:
        fnn.use("cpu", fallback=None)
        fallback.set_fallback("fewer", None)
