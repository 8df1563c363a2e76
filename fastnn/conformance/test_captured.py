"""Captured mode: every run-style case through ``fnn.compile``, against its eager result.

Each sample's forward is compiled and called three times on fresh tensors of the same
values (a recording, the first replay with its check against eager, a plain replay);
for a differentiable case the forward and its backward are compiled together. The
replay must give the eager output and gradients bit for bit (the core does not fuse).
Run with ``--conformance-captured`` (each recording scans the heap once: minutes, not
seconds, for the whole suite).
"""

import numpy as np
import pytest

import fastnn as fnn
from fastnn.conformance import harness
from fastnn.conformance.compare import Mismatch


def _same(want, got, what):
    want, got = np.asarray(want), np.asarray(got)
    if want.shape != got.shape or want.dtype != got.dtype or not np.array_equal(
            want, got, equal_nan=want.dtype.kind in "fc"):
        raise Mismatch(f"{what}: the compiled run gives other values than the eager run")


def _fresh(case, sample, dtype, device, grad):
    tensors = [harness._to_tensor(a, dtype, device) for a in sample.args]
    if grad:
        for i in case.diff_args:
            if i < len(tensors) and isinstance(tensors[i], fnn.Tensor):
                tensors[i].requires_grad_(True)
    return tensors


@pytest.mark.conformance_cases("run")
def test_captured(case, dtype, device, rng, request):
    """The case's forward (and backward) replayed by fnn.compile equal eager, bit for bit."""
    if not request.config.getoption("--conformance-captured"):
        pytest.skip("captured mode: run with --conformance-captured")
    for sample in case.samples(rng):
        params = harness._params(case, sample, dtype)
        what = harness.describe(case, device, dtype, sample, "captured")
        forward = fnn.compile(lambda *ts, params=params: case.run(*ts, **params))
        with fnn.no_grad():
            for _ in range(3):
                got = forward(*_fresh(case, sample, dtype, device, False))
            want = case.run(*_fresh(case, sample, dtype, device, False), **params)
        _same(want.numpy(), got.numpy(), what)
        if not case.differentiable or not harness._float_output(case, dtype, sample):
            continue
        grad_out = harness._grad_out(rng, case, dtype, sample)

        def step(*ts, params=params, grad_out=grad_out):
            out = case.run(*ts, **params)
            out.backward(grad_out)
            return out

        compiled = fnn.compile(step)
        for _ in range(3):
            tensors = _fresh(case, sample, dtype, device, True)
            got = compiled(*tensors)
        eager = _fresh(case, sample, dtype, device, True)
        want = step(*eager)
        _same(want.numpy(), got.numpy(), what + " (forward with backward)")
        for i, (a, b) in enumerate(zip(eager, tensors)):
            if isinstance(a, fnn.Tensor) and a.requires_grad:
                if (a.grad is None) != (b.grad is None):
                    raise Mismatch(f"{what}: the gradient of argument {i} is missing")
                if a.grad is not None:
                    _same(a.grad.numpy(), b.grad.numpy(), f"{what}: gradient of argument {i}")
