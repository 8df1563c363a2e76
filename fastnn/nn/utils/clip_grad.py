"""Gradient clipping, as PyTorch's ``torch.nn.utils``: by the joint norm, or per value.

``clip_grad_norm_(params, max_norm, norm_type=2.0)``: total = the norm of all
gradients taken as one vector (p > 0: (sum |g|^p)^(1/p); inf: max |g|; as PyTorch,
for p = 0, p < 0 and -inf: that p-norm of the gradients' own p-norms); when total >
max_norm every gradient is multiplied by max_norm / (total + 1e-6). Returns the
total before clipping, as a 0-d tensor on the first gradient's device, as PyTorch's
(float32, float64 where a gradient is). Nothing is read back to the host (unless
``error_if_nonfinite``): the coefficient min(max_norm / (total + 1e-6), 1) stays on
the device and multiplies every gradient, as PyTorch's, so a GPU step does not wait.

``clip_grad_value_(params, clip_value)``: every gradient value clamped to
[-clip_value, clip_value] (minidx's per-value clipping).

Both work in place on ``.grad`` and are also named without the underscore.
``get_total_norm`` and ``clip_grads_with_norm_`` are clip_grad_norm_'s two halves.
"""

from __future__ import annotations

import math

import numpy as np

from fastnn.api import dtypes
from fastnn.api.args import real as check_number
from fastnn.api.composite_optim import norm_dtype
from fastnn.autograd.grad_mode import no_grad
from fastnn.ops.storage import rebind
from fastnn.ops.tensor import Tensor, tensor


def _params(owner: str, params) -> list:
    # a list: a generator (e.g. ``p for p in ... if ...``) is walked twice below
    try:
        params = [params] if isinstance(params, Tensor) else list(params)
    except TypeError:
        params = None
    if params is None or not all(isinstance(p, Tensor) for p in params):
        raise TypeError(f"{owner}: params must be tensors; pass model.parameters()")
    return params


def _device_total(grads, norm_type: float) -> Tensor:
    """The joint norm as a 0-d tensor on the first gradient's device, nothing read back:
    one ``total_norm`` hook call per device, the devices' norms joined on the first."""
    norms = []
    for device, group in _by_device(grads).items():
        arrays = [g._data for g in group]
        data = device.ops.total_norm(arrays, norm_type)
        norm = Tensor._make(data, dtypes.as_dtype(norm_dtype(arrays)), device)
        norms.append(norm if device is grads[0]._device else norm.to(grads[0].device))
    if len(norms) == 1:
        return norms[0]
    # the p-norm of the devices' p-norms is the p-norm of all the values
    if any(n._dtype is dtypes.float64 for n in norms):
        norms = [n.to(dtypes.float64) for n in norms]
    total = norms[0]
    for norm in norms[1:]:
        total = total.maximum(norm) if norm_type == math.inf else (
            (total ** norm_type + norm ** norm_type) ** (1.0 / norm_type))
    return total


def _total(grads, norm_type: float) -> Tensor:
    if norm_type > 0:
        return _device_total(grads, norm_type)
    # p = 0 (a count), p < 0 and -inf are not sums over all values: PyTorch takes the
    # p-norm of each gradient, then of those norms (rare: computed on the host)
    with np.errstate(divide="ignore"):
        norms = [np.linalg.norm(g.numpy().astype(np.float64).ravel(), norm_type)
                 for g in grads]
        return _as_tensor(float(np.linalg.norm(np.array(norms), norm_type)), grads)


def clip_grad_norm_(params, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Scale the ``.grad`` of ``params`` so their joint norm is at most ``max_norm``.

    A NaN total makes every gradient NaN, as in PyTorch (an infinite one: zero);
    ``error_if_nonfinite=True`` raises instead. ``foreach`` is accepted (PyTorch's choice
    of kernels; the result is the same).
    """
    params = _params("clip_grad_norm", params)
    max_norm = _max_norm("clip_grad_norm", max_norm)
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return tensor(0.0)
    total = _total_norm("clip_grad_norm", grads, norm_type, error_if_nonfinite)
    _scale(params, max_norm, total)
    return total


def _max_norm(owner: str, max_norm) -> float:
    max_norm = check_number(owner, "max_norm", max_norm)
    if not max_norm >= 0:
        raise ValueError(f"{owner}: max_norm must be >= 0, got {max_norm}")
    return max_norm


def _total_norm(owner: str, grads: list, norm_type, error_if_nonfinite: bool) -> Tensor:
    """The joint norm of ``grads`` (``norm_type`` checked: a number, or 'inf')."""
    if isinstance(norm_type, str):  # PyTorch takes float(norm_type): 'inf' too
        try:
            norm_type = float(norm_type)
        except ValueError:
            raise ValueError(f"{owner}: norm_type must be a number p (the p-norm) or 'inf', "
                             f"got {norm_type!r}") from None
    norm_type = float(check_number(owner, "norm_type", norm_type))
    if math.isnan(norm_type):
        raise ValueError(f"{owner}: norm_type must be a number p (the p-norm) or "
                         "float('inf'), got nan")
    with no_grad():
        total = _total(grads, norm_type)
    # the one read of the norm (PyTorch's too): only when asked for
    if error_if_nonfinite and not math.isfinite(float(total.item())):
        raise RuntimeError(f"{owner}: the total norm of the gradients is {total}; "
                           "error_if_nonfinite=False clips anyway")
    return total


def _as_tensor(total: float, grads: list) -> Tensor:
    """The norm as a 0-d tensor, as PyTorch's (``norm.item()`` in a training loop's log
    line): float32, float64 where a gradient is (half precision would overflow or round the
    total), on the first gradient's device."""
    wide = any(g._dtype is dtypes.float64 for g in grads)
    return tensor(total, dtype=dtypes.float64 if wide else dtypes.float32,
                  device=grads[0].device)


def _scale(params: list, max_norm: float, total) -> None:
    """Each ``.grad`` times min(max_norm / (total + 1e-6), 1).

    ``total`` a tensor: the coefficient stays on its device and every gradient is
    multiplied (one ``clip_grads_with_norm`` hook call per device), as PyTorch does, so
    that a training step waits for no read-back (a NaN norm makes NaN gradients, an
    infinite one zeros). A Python number: multiplied only where the coefficient is under
    1 (or NaN)."""
    grads = [p.grad for p in params if p.grad is not None]
    with no_grad():
        if not isinstance(total, Tensor):
            coef = max_norm / (total + 1e-6)
            # "not >=" so that a NaN norm makes NaN gradients, as in PyTorch
            if not coef >= 1.0:  # (in place, as PyTorch: the views of .grad see it)
                for g in grads:
                    rebind(g, g._device.ops.mul(g._data, coef))
            return
        if not total._dtype.is_floating:  # (as PyTorch's division: a float coefficient)
            total = total.to(dtypes.float32)
        for device, group in _by_device(grads).items():
            here = total if device is total._device else total.to(group[0].device)
            scaled = device.ops.clip_grads_with_norm([g._data for g in group], max_norm,
                                                     here._data)
            for g, data in zip(group, scaled):
                rebind(g, data)


def _by_device(tensors: list) -> dict:
    """{device: [tensors on it]}, in the order the devices first appear."""
    groups: dict = {}
    for t in tensors:
        groups.setdefault(t._device, []).append(t)
    return groups


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None) -> Tensor:
    """The joint norm of ``tensors`` (e.g. the gradients) taken as one vector, as a 0-d
    tensor: :func:`clip_grad_norm_`'s first half, as PyTorch's."""
    tensors = _params("get_total_norm", tensors)
    if not tensors:
        return tensor(0.0)
    return _total_norm("get_total_norm", tensors, norm_type, error_if_nonfinite)


def clip_grads_with_norm_(parameters, max_norm: float, total_norm, foreach=None) -> None:
    """Scale the ``.grad`` of ``parameters`` by max_norm / (total_norm + 1e-6) when that is
    under 1 (``total_norm`` from :func:`get_total_norm`): :func:`clip_grad_norm_`'s second
    half, as PyTorch's."""
    params = _params("clip_grads_with_norm", parameters)
    if not isinstance(total_norm, Tensor):
        total_norm = check_number("clip_grads_with_norm", "total_norm", total_norm)
    _scale(params, _max_norm("clip_grads_with_norm", max_norm), total_norm)


def clip_grad_value_(params, clip_value: float, foreach=None) -> None:
    """Clamp every ``.grad`` value of ``params`` to [-clip_value, clip_value], in place
    (``foreach`` is accepted: PyTorch's choice of kernel, the same result)."""
    params = _params("clip_grad_value", params)
    clip_value = check_number("clip_grad_value", "clip_value", clip_value)
    if not clip_value >= 0:
        raise ValueError(f"clip_grad_value: clip_value must be >= 0, got {clip_value}")
    with no_grad():
        for p in params:
            if p.grad is not None:
                ops = p.grad._device.ops
                data = ops.minimum(ops.maximum(p.grad._data, -clip_value), clip_value)
                rebind(p.grad, data)


def clip_grad_norm(params, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach=None) -> float:
    """:func:`clip_grad_norm_` (the same function, named without the underscore)."""
    return clip_grad_norm_(params, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value(params, clip_value: float, foreach=None) -> None:
    """:func:`clip_grad_value_` (the same function, named without the underscore)."""
    clip_grad_value_(params, clip_value, foreach)
