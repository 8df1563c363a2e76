"""Run a conformance case on a device and compare with its reference.

The checks a run-style case generates:

- :func:`check_forward`: ``run`` on the backend vs ``ref`` in float64, on
  inputs rounded to the dtype; the reference is rounded to the output dtype.
- :func:`check_grad_analytic`: gradients through the core's backward rules
  (``out.backward(w)``) vs the reference's analytic gradient.
- :func:`check_grad_numeric`: the same gradients vs central finite differences
  of the backend's own float64 forward, d/dx sum(run(x) * w).
- :func:`check_cross`: two backends on the same inputs, outputs and gradients.

:func:`recording` wraps a backend's resolved ops so a check knows which hooks
it reached; the report uses this to tell a primitive's own failure from one
it inherited from another broken primitive.
"""

from __future__ import annotations

import contextlib

import numpy as np

import fastnn as fnn
from fastnn.api import hookspec
from fastnn.conformance.compare import (
    FINITE_DIFFERENCE,
    GRADIENT,
    Mismatch,
    assert_close,
    cast_like,
)

HOOKS = tuple(hookspec.HOOKS)


@contextlib.contextmanager
def recording(ops, used: set):
    """Add to ``used`` the name of every hook called on ``ops`` inside the block."""
    originals = {name: getattr(ops, name) for name in HOOKS}

    def wrap(name, fn):
        def call(*args, **kwargs):
            used.add(name)
            return fn(*args, **kwargs)

        return call

    for name, fn in originals.items():
        setattr(ops, name, wrap(name, fn))
    try:
        yield used
    finally:
        for name, fn in originals.items():
            setattr(ops, name, fn)


def floor_atol(atol: float, dtype: str) -> float:
    """Never demand more than a few smallest normals: some devices flush subnormals to 0."""
    return max(atol, 16 * float(np.finfo(dtype).tiny))


def _to_tensor(value, dtype, device, transposed=False):
    if not isinstance(value, np.ndarray):
        return value  # a Python scalar operand stays a scalar
    host = value.astype(dtype) if value.dtype.kind == "f" else value
    if transposed and host.ndim >= 2:
        # the same values, stored transposed: the op sees a non-contiguous view
        return fnn.tensor(np.ascontiguousarray(host.T), device=device).T
    return fnn.tensor(host, device=device)


def _params(case, sample, dtype):
    return dict(sample.params, dtype=dtype) if case.pass_dtype else dict(sample.params)


def run_forward(case, device, dtype, sample, transposed=False):
    """``case.run`` on ``device``: the output Tensor."""
    tensors = [_to_tensor(a, dtype, device, transposed) for a in sample.args]
    return case.run(*tensors, **_params(case, sample, dtype))


def reference(case, dtype, sample):
    """The float64 reference on the inputs rounded to ``dtype``."""
    args = [cast_like(a, dtype) if isinstance(a, np.ndarray) else a for a in sample.args]
    with np.errstate(all="ignore"):
        return np.asarray(case.ref(*args, **sample.params))


def describe(case, device, dtype, sample, check):
    return f"{case.name} {check} on {device}, {dtype}, {sample.describe()}"


def supports(sample, *devices) -> bool:
    """Whether every device lists every dtype the sample needs (:attr:`Sample.needs`)."""
    return all(d in device.backend.record.dtypes for d in sample.needs for device in devices)


def check_forward(case, device, dtype, sample, check="forward", transposed=False):
    if not supports(sample, device):  # (a dtype the device does not list)
        return
    out = run_forward(case, device, dtype, sample, transposed)
    got = out.numpy()
    what = describe(case, device, dtype, sample, check)
    if got.dtype != out.dtype.numpy:
        raise Mismatch(f"{what}: the backend returned a {got.dtype} array for a "
                       f"{out.dtype.name} tensor")
    expected = reference(case, dtype, sample)
    if expected.dtype.kind == "f":
        expected = cast_like(expected, got.dtype.name)
    rtol, atol = case.tol[dtype]
    assert_close(got, expected, rtol, floor_atol(atol, dtype), what)


def _grad_out(rng, case, dtype, sample):
    shape = reference(case, dtype, sample).shape
    # NOTE: values exact in float16 are exact in every float dtype, so an op that
    # changes dtype (astype) sees the same upstream gradient as the reference
    return cast_like(rng.normal(size=shape), "float16")


def backend_grads(case, device, dtype, sample, grad_out):
    """Gradients of sum(run(x) * grad_out) w.r.t. the differentiable args, through the tape."""
    tensors = [_to_tensor(a, dtype, device) for a in sample.args]
    for i in case.diff_args:
        if i < len(tensors) and isinstance(tensors[i], fnn.Tensor):
            tensors[i].requires_grad_(True)
    with fnn.enable_grad():
        out = case.run(*tensors, **_params(case, sample, dtype))
        out.backward(grad_out)  # a host array: the core makes it a tensor like out
    grads = {}
    for i in case.diff_args:
        if i < len(tensors) and isinstance(tensors[i], fnn.Tensor):
            grad = tensors[i].grad
            if grad is None:
                raise Mismatch(f"{case.name}: no gradient reached argument {i} "
                               f"({sample.describe()})")
            grads[i] = grad.numpy()
    return grads


def _float_output(case, dtype, sample) -> bool:
    return reference(case, dtype, sample).dtype.kind == "f"


def check_grad_analytic(case, device, dtype, sample, rng):
    if not supports(sample, device):  # (a dtype the device does not list)
        return
    if not _float_output(case, dtype, sample):
        return
    grad_out = _grad_out(rng, case, dtype, sample)
    got = backend_grads(case, device, dtype, sample, grad_out)
    args = [cast_like(a, dtype) if isinstance(a, np.ndarray) else a for a in sample.args]
    with np.errstate(all="ignore"):
        want = case.grad_ref(*args, grad_out=grad_out, **sample.params)
    rtol, atol = (case.grad_tol or GRADIENT)[dtype]
    for i, g in got.items():
        what = describe(case, device, dtype, sample, f"gradient of argument {i} vs analytic")
        assert_close(g, cast_like(np.asarray(want[i], dtype=np.float64), dtype), rtol,
                     floor_atol(atol, dtype), what)


def check_grad_numeric(case, device, sample, rng, step=1e-6):
    """Central differences of the backend's float64 forward (a few evaluations per element)."""
    if not supports(sample, device):  # (a dtype the device does not list)
        return
    dtype = "float64"
    if not _float_output(case, dtype, sample):
        return
    grad_out = _grad_out(rng, case, dtype, sample)
    got = backend_grads(case, device, dtype, sample, grad_out)

    def objective(args):
        with fnn.no_grad():
            out = case.run(*[_to_tensor(a, dtype, device) for a in args],
                           **_params(case, sample, dtype))
        return float(np.sum(out.numpy() * grad_out))

    rtol, atol = FINITE_DIFFERENCE
    for i, g in got.items():
        args = list(sample.args)
        x = np.array(args[i], dtype=np.float64)
        numeric = np.zeros_like(x)
        for index in np.ndindex(x.shape):
            h = step * max(1.0, abs(x[index]))
            values = []
            for sign in (1.0, -1.0):
                shifted = x.copy()
                shifted[index] += sign * h
                args[i] = shifted
                values.append(objective(args))
            numeric[index] = (values[0] - values[1]) / (2 * h)
        what = describe(case, device, dtype, sample, f"gradient of argument {i} vs finite "
                                                     f"differences")
        assert_close(g, numeric, rtol, atol, what)


def check_cross(case, device, other, dtype, sample, rng):
    """Outputs and gradients of ``device`` and ``other`` agree within 2x the tolerances."""
    if not supports(sample, device, other):  # (a dtype the device does not list)
        return
    mine = run_forward(case, device, dtype, sample).numpy()
    theirs = run_forward(case, other, dtype, sample).numpy()
    rtol, atol = case.tol[dtype]
    what = describe(case, device, dtype, sample, f"forward vs backend {other.type!r}")
    assert_close(mine, theirs, 2 * rtol, floor_atol(2 * atol, dtype), what)
    if not case.differentiable or mine.dtype.kind != "f":
        return
    grad_out = _grad_out(rng, case, dtype, sample)
    mine = backend_grads(case, device, dtype, sample, grad_out)
    theirs = backend_grads(case, other, dtype, sample, grad_out)
    rtol, atol = (case.grad_tol or GRADIENT)[dtype]
    for i in mine:
        what = describe(case, device, dtype, sample, f"gradient of argument {i} vs backend "
                                                     f"{other.type!r}")
        assert_close(mine[i], theirs[i], 2 * rtol, floor_atol(2 * atol, dtype), what)
