"""Captured mode: every run-style case through ``fnn.compile``, against its eager result.

Each sample's forward is compiled and called three times on fresh tensors of the same
values (a recording, the first replay with its check against eager, a plain replay);
for a differentiable case the forward and its backward are compiled together. The
replay must give the eager output and gradients bit for bit (the core does not fuse).
Run with ``--conformance-captured`` (each recording scans the heap once: minutes, not
seconds, for the whole suite).

An op that reads values back to Python to compute its result (a shape that depends on the
values: nonzero, unique, argwhere; a reduction done on the host) cannot be one program:
with ``fullgraph=True`` fnn.compile must refuse it with :class:`fastnn.CaptureError`
naming the read and the line, and with ``fullgraph=False`` it runs as segments around
that read (a graph break), which must give eager's values as well. No case is left out.
"""

import functools
import warnings

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
        fullgraph = True
        forward = functools.partial(_forward, case, params)
        fresh = functools.partial(_fresh, case, sample, dtype, device, False)
        with fnn.no_grad():
            try:
                got = _three_calls(forward, fresh, True)
            except fnn.CaptureError as exc:
                _refused_clearly(exc, what)
                fullgraph = False  # a graph break where the op reads values back
                got = _three_calls(forward, fresh, False)
            want = case.run(*_fresh(case, sample, dtype, device, False), **params)
        _same(want.numpy(), got.numpy(), what)
        if not case.differentiable or not harness._float_output(case, dtype, sample):
            continue
        grad_out = harness._grad_out(rng, case, dtype, sample)

        def step(*ts, params=params, grad_out=grad_out):
            out = case.run(*ts, **params)
            out.backward(grad_out)
            return out

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the graph break's notice
            compiled = fnn.compile(step, fullgraph=fullgraph)
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


def _forward(case, params, *tensors):
    return case.run(*tensors, **params)


def _three_calls(fn, fresh, fullgraph):
    """``fn`` compiled, called three times (a recording, the checked first replay, a plain
    replay), each on fresh tensors; the last call's result."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a graph break's notice
        compiled = fnn.compile(fn, fullgraph=fullgraph)
        for _ in range(3):
            got = compiled(*fresh())
    return got


def _refused_clearly(exc, what):
    """fnn.compile's refusal of a read back to Python names what read and where."""
    text = str(exc)
    if "reads a tensor's value back to Python" not in text or " at " not in text or \
            "fullgraph=False" not in text:
        raise Mismatch(f"{what}: fnn.compile refused the case without saying which read "
                       f"and where: {text}")
