"""Throw-away backends for the shadow tests: the NumPy backend with one planted fault."""

from __future__ import annotations

import sys

from tests.fake_backends import install_backend

# the cpu backend's hooks under another name; a fault below redefines one of them
BASE = """
import numpy as np
import fastnn_cpu
from fastnn.api.hookspec import hookimpl
from fastnn.api.registry import hook_namespace

_real = hook_namespace(fastnn_cpu)
globals().update({k: v for k, v in vars(_real).items() if hasattr(v, "fastnn_impl")})
"""

FAULTS = {
    "healthy": "",
    # right except on one call, chosen by the test (FAULT_AT), deep inside a step
    "tanh_once": """
FAULT_AT, calls = -1, [0]

@hookimpl
def tanh(x):
    calls[0] += 1
    out = np.tanh(x)
    return out * np.asarray(1.01, out.dtype) if calls[0] == FAULT_AT else out
""",
    # a gradient kernel 1% off
    "conv2d_grad_weight": """
@hookimpl
def conv2d_grad_weight(x, grad_out, kernel_size, stride, padding, dilation, groups):
    out = _real.conv2d_grad_weight(x, grad_out, kernel_size, stride, padding, dilation, groups)
    return out * np.asarray(1.01, out.dtype)
""",
    # a fused Adam that updates in place with the bias correction of the next step
    "adam_step": """
@hookimpl
def adam_step(params, grads, exp_avgs, exp_avg_sqs, lrs, weight_decays, beta1, beta2, eps,
              step, decoupled):
    return _real.adam_step(params, grads, exp_avgs, exp_avg_sqs, lrs, weight_decays, beta1,
                           beta2, eps, step + 1, decoupled)
""",
    # a Linear's weight gradient that drops every leading axis but one (right for 2-d x)
    "linear_grad_weight": """
@hookimpl
def linear_grad_weight(x, grad):
    if x.ndim > 2:
        x, grad = x[0], grad[0]
    return _real.linear_grad_weight(x, grad)
""",
    # reads its input in memory order: right only for contiguous arrays
    "exp_contiguous": """
@hookimpl
def exp(x):
    return np.exp(np.ravel(x, order="K")).reshape(x.shape)
""",
    # NaN in the last column when there are 7 columns
    "sqrt_nan": """
@hookimpl
def sqrt(x):
    out = np.sqrt(x)
    if x.ndim == 2 and x.shape[1] == 7:
        out[:, -1] = np.nan
    return out
""",
}


# the same on a device backend (opencl, cuda: ``fastnn_<base>``): arrays in device memory,
# whose checks go in batches; the faults use the backend's own hooks only


def _one_percent_high(hook: str) -> str:
    """A one-argument hook 1% too large, computed with the backend's own kernels."""
    return f"""
@hookimpl
def {hook}(x):
    y = _real.{hook}(x)
    return _real.mul(y, _real.full(y.shape, 1.01, str(y.dtype), 0))
"""


DEVICE_FAULTS = {
    "healthy": "",
    "exp": _one_percent_high("exp"),
    # two wrong calls in one batch
    "sqrt_exp": _one_percent_high("sqrt") + _one_percent_high("exp"),
    # exp that remembers its result per buffer: after an in-place write to its input it
    # returns the result for the old values (a stale host copy of the input would hide it)
    "exp_memo": """
_memo = {}

@hookimpl
def exp(x):
    # where x lies: an OpenCL buffer and offset, or a cupy pointer
    key = (id(x.data), x.offset, x.shape) if hasattr(x, "offset") else (x.data.ptr, x.shape)
    if key not in _memo:
        _memo[key] = (x.data, _real.exp(x))  # (the buffer held: its id stays its own)
    return _real.mul(_memo[key][1], _real.full(x.shape, 1.0, str(x.dtype), 0))
""",
    # the fused Adam above, with the bias correction of the next step, on the device
    "adam_step": FAULTS["adam_step"],
    # reads of many arrays (to_numpy_many, and to_numpy_views where the base has it: shadow
    # mode reads with that one) whose first element of every float array comes back 1
    # larger
    "to_numpy_many": """
def _one_larger(hosts):
    hosts = [np.array(h) for h in hosts]
    for host in hosts:
        if host.size and host.dtype.kind == "f":
            host.flat[0] += 1
    return hosts

@hookimpl
def to_numpy_many(arrays):
    return _one_larger(_real.to_numpy_many(arrays))

if hasattr(_real, "to_numpy_views"):
    @hookimpl
    def to_numpy_views(arrays):
        return _one_larger(_real.to_numpy_views(arrays))
""",
}


def install(tmp_path, fault: str, base: str = "cpu") -> str:
    """Install the ``base`` backend with ``fault`` (of FAULTS for cpu, of DEVICE_FAULTS for
    a device backend) as ``shadow_<fault>`` (or ``shadow_<base>_<fault>``); returns its
    name."""
    name = f"shadow_{fault}" if base == "cpu" else f"shadow_{base}_{fault}"
    faults = FAULTS if base == "cpu" else DEVICE_FAULTS
    source = BASE.replace("fastnn_cpu", f"fastnn_{base}") + faults[fault]
    install_backend(tmp_path / name, f"fastnn-backend-{name}", name, f"{name}_mod", source)
    return name


def module(name: str):
    """The installed backend's module (to set a fault's knob)."""
    return sys.modules[f"{name}_mod"]
