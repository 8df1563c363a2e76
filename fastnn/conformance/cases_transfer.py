"""The conformance case of ``to_numpy_many``: every array as ``to_numpy`` gives it, in order.

A custom case: it calls ``device.ops.to_numpy_many`` on a list that mixes layouts
(contiguous, transposed, broadcast, strided slices, slices that cover a third of their
buffer's rows, 0-d, size-0), dtypes and arrays that share one buffer, and compares each
result with ``to_numpy`` of the same array and with the host array it was made from,
exactly.
"""

from __future__ import annotations

import numpy as np

from fastnn.api.dtypes import integer_names
from fastnn.conformance.case import Case, register
from fastnn.conformance.compare import Mismatch, assert_close


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


def _check_to_numpy_many(device, dtype, rng):
    arrays = _arrays(device, dtype, rng)
    got = device.ops.to_numpy_many([a for a, _ in arrays.values()])
    if not isinstance(got, list) or len(got) != len(arrays):
        raise Mismatch(f"to_numpy_many of {len(arrays)} arrays returned "
                       f"{type(got).__name__} of length {len(got)}; it must return a list "
                       "with one host array per array, in order")
    for (label, (array, expected)), host in zip(arrays.items(), got):
        if not isinstance(host, np.ndarray) or host.dtype != expected.dtype \
                or host.shape != expected.shape:
            raise Mismatch(f"to_numpy_many, {label}: got {type(host).__name__} "
                           f"{getattr(host, 'dtype', '')} {getattr(host, 'shape', '')}, "
                           f"expected ndarray {expected.dtype} {expected.shape}")
        assert_close(host, expected, 0.0, 0.0, f"to_numpy_many, {label}, {dtype}")
        assert_close(host, np.asarray(device.ops.to_numpy(array)), 0.0, 0.0,
                     f"to_numpy_many against to_numpy, {label}, {dtype}")
    if device.ops.to_numpy_many([]) != []:
        raise Mismatch("to_numpy_many([]) must return []")


register(Case("to_numpy_many", check=_check_to_numpy_many))
