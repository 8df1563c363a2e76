"""Numerical checking helpers: NumPy float64 references and central finite differences;
and a skip where a device is unusable."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn

TOL = {"float32": dict(rtol=2e-5, atol=2e-6), "float64": dict(rtol=1e-10, atol=1e-12)}


def finite_difference(fn, arrays, index, eps=1e-6):
    """d sum(fn(*arrays) * weights) / d arrays[index] by central differences (float64)."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    rng = np.random.default_rng(123)
    weights = rng.standard_normal(np.shape(fn(*arrays)))
    target = arrays[index]
    grad = np.zeros_like(target)
    for i in np.ndindex(target.shape):
        old = target[i]
        target[i] = old + eps
        up = np.sum(fn(*arrays) * weights)
        target[i] = old - eps
        down = np.sum(fn(*arrays) * weights)
        target[i] = old
        grad[i] = (up - down) / (2 * eps)
    return grad, weights


def tape_grads(fn, arrays, weights, dtype="float64"):
    """Gradients of sum(fn(*tensors) * weights) through fastnn's tape."""
    tensors = [fnn.tensor(np.asarray(a), dtype=dtype, requires_grad=True) for a in arrays]
    out = fn(*tensors)
    (out * fnn.tensor(weights, dtype=dtype)).sum().backward()
    return [t.grad.numpy() if t.grad is not None else None for t in tensors]


def usable_or_skip(device: str) -> None:
    """Skip the calling test where ``device``'s backend cannot run here."""
    try:
        fnn.Device(device)
    except fnn.BackendError as exc:
        pytest.skip(f"{device} unavailable: {exc}")


def outcomes_as_torch(call) -> tuple:
    """``(fastnn's, torch's)`` outcome of ``call(lib)``: its result's dtype name and values,
    or "refused" where it raises a RuntimeError (torch's error for a refused cast)."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in (fnn, torch):
        try:
            out = call(lib)
            results.append((str(out.dtype).rpartition(".")[2], out.tolist()))
        except RuntimeError:
            results.append("refused")
    return tuple(results)
