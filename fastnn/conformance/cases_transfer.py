"""The conformance cases of ``to_numpy_many`` and ``to_numpy_views``: every array as
``to_numpy`` gives it, in order.

Custom cases: each calls its hook on a list that mixes layouts
(contiguous, transposed, broadcast, strided slices, slices that cover a third of their
buffer's rows, 0-d, size-0), dtypes and arrays that share one buffer, and compares each
result with ``to_numpy`` of the same array and with the host array it was made from,
exactly. A result of ``to_numpy_views`` may be the device's memory, read-only; one that
is writable must be a copy: writing it leaves the device's array as it was (and it may
return None, viewing nothing).
"""

from __future__ import annotations

import numpy as np

from fastnn.api.dtypes import integer_names
from fastnn.conformance.case import Case, register
from fastnn.conformance.compare import EXACT, Mismatch, assert_close


def _arrays(device, dtype, rng) -> dict:
    """label -> (backend array, the host array it must read back as)."""
    ops, index = device.ops, device.index
    host = rng.normal(size=(4, 6)).astype(dtype)
    x = ops.from_numpy(host, index)
    column = host[:, :1]
    packed = rng.normal(size=(4, 12)).astype(dtype)  # (a projection of q, k and v packed)
    wide = ops.from_numpy(packed, index)
    arrays = {
        "contiguous": (x, host),
        "transposed": (ops.transpose(x, (1, 0)), host.T),
        "broadcast": (ops.broadcast_to(ops.reshape(x, (4, 1, 6)), (4, 3, 6)),
                      np.broadcast_to(host.reshape(4, 1, 6), (4, 3, 6))),
        "strided slice": (ops.slice(x, (1, 1), (4, 6), (2, 2)), host[1:4:2, 1:6:2]),
        "third of each row": (ops.slice(wide, (0, 4), (4, 8), (1, 1)), packed[:, 4:8]),
        "last third of each row": (ops.slice(wide, (0, 8), (4, 12), (1, 1)), packed[:, 8:]),
        "column broadcast": (ops.broadcast_to(ops.slice(x, (0, 0), (4, 1), (1, 1)), (4, 5)),
                             np.broadcast_to(column, (4, 5))),
        "0-d": (ops.from_numpy(np.array(1.5, dtype), index), np.array(1.5, dtype)),
        "size-0": (ops.from_numpy(np.zeros((0, 3), dtype), index), np.zeros((0, 3), dtype)),
        "the same array again": (x, host),
    }
    if dtype == "float32":  # integer and bool arrays in the same list, once
        for name in (*integer_names(), "bool"):
            if name in device.backend.record.dtypes:
                values = (rng.random((3, 2)) < 0.5 if name == "bool"
                          else rng.integers(-9, 9, (3, 2)).astype(name))
                arrays[name] = (ops.from_numpy(values, index), values)
    return arrays


def _check_reads(hook: str):
    """The check of ``hook`` (to_numpy_many or to_numpy_views)."""
    def check(device, dtype, rng):
        arrays = _arrays(device, dtype, rng)
        read = getattr(device.ops, hook)
        got = read([a for a, _ in arrays.values()])
        if got is None and hook == "to_numpy_views":
            return  # (it views none of them: shadow mode reads with to_numpy_many)
        if not isinstance(got, list) or len(got) != len(arrays):
            raise Mismatch(f"{hook} of {len(arrays)} arrays returned {type(got).__name__} of "
                           f"length {len(got)}; it must return a list with one host array "
                           "per array, in order")
        for (label, (array, expected)), host in zip(arrays.items(), got):
            if not isinstance(host, np.ndarray) or host.dtype != expected.dtype \
                    or host.shape != expected.shape:
                raise Mismatch(f"{hook}, {label}: got {type(host).__name__} "
                               f"{getattr(host, 'dtype', '')} {getattr(host, 'shape', '')}, "
                               f"expected ndarray {expected.dtype} {expected.shape}")
            assert_close(host, expected, 0.0, 0.0, f"{hook}, {label}, {dtype}")
            assert_close(host, np.asarray(device.ops.to_numpy(array)), 0.0, 0.0,
                         f"{hook} against to_numpy, {label}, {dtype}")
        if hook == "to_numpy_views":  # a writable result is the caller's copy
            for (label, (array, expected)), host in zip(arrays.items(), got):
                if host.flags.writeable and host.size:
                    host[...] = 0
                    assert_close(np.asarray(device.ops.to_numpy(array)), expected, 0.0, 0.0,
                                 f"{hook}, {label}, {dtype}: the device's array after its "
                                 f"writable result was written (a view must be read-only)")
        empty = read([])
        if empty is None and hook == "to_numpy_views":
            return  # (it views nothing of an empty list)
        if empty != []:
            raise Mismatch(f"{hook}([]) must return []" +
                           (" or None" if hook == "to_numpy_views" else ""))

    return check


register(Case("to_numpy_many", check=_check_reads("to_numpy_many"), tol=dict(EXACT)))
register(Case("to_numpy_views", check=_check_reads("to_numpy_views"), tol=dict(EXACT)))
