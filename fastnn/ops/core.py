"""What every tensor op shares: device and broadcast checks, dtype conversion, transfer.

Sits below :mod:`fastnn.ops.tensor` (which uses it for ``.to`` and ``backward``),
so it never imports the Tensor class: new tensors are made with ``type(x)._make``.
"""

from __future__ import annotations

from fastnn.api import dtypes
from fastnn.api.errors import DeviceMismatchError, ShapeError
from fastnn.autograd.engine import attach


def check_same_device(op, a, b) -> None:
    if a._device is not b._device and a._device != b._device:
        raise DeviceMismatchError(
            f"{op}: tensors are on different devices ({a._device} and {b._device}); "
            f"move one explicitly with .to({str(a._device)!r})"
        )


def broadcast_shape(op, sa, sb) -> tuple:
    """NumPy's broadcast of two shapes, or ValueError naming the op and both shapes."""
    if sa == sb:
        return sa
    n = max(len(sa), len(sb))
    pa, pb = (1,) * (n - len(sa)) + tuple(sa), (1,) * (n - len(sb)) + tuple(sb)
    out = []
    for x, y in zip(pa, pb):
        if x != y and x != 1 and y != 1:
            raise ShapeError(f"{op}: shapes {tuple(sa)} and {tuple(sb)} do not broadcast")
        out.append(y if x == 1 else x)
    return tuple(out)


def astype(x, dtype):
    """Convert to ``dtype``; gradients flow back between floating dtypes."""
    dtype = dtypes.as_dtype(dtype)
    if dtype is x._dtype:
        return x
    x._device.check_dtype(dtype, "astype")
    out = type(x)._make(x._device.ops.astype(x._data, dtype.name), dtype, x._device)
    if not (dtype.is_floating and x._dtype.is_floating):
        return out
    return attach(out, "astype", (x,), (), x._dtype.name)


def transfer(x, device):
    """Copy ``x`` to ``device`` through the host; gradients flow back to the source device."""
    if device is x._device or device == x._device:
        return x
    device.check_dtype(x._dtype, "to")
    host = x._device.ops.to_numpy(x._data)
    out = type(x)._make(device.ops.from_numpy(host, device.index), x._dtype, device)
    return attach(out, "transfer", (x,), (), x._device)
