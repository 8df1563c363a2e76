"""Conformance cases of the collective hooks (allreduce, broadcast), on one rank.

A backend's collectives are checked here on a single-process communicator
(what every backend can run alone): each reduction of one rank is the input
itself, in new arrays of the same shapes and dtype, the inputs untouched, for
a list that mixes shapes (0-d and size-0 included). Several ranks are the
MPI tests' job (tests/distributed), where the results are compared across ranks.
"""

from __future__ import annotations

import numpy as np

from fastnn.conformance.case import Case, register
from fastnn.conformance.compare import ACCUMULATING, EXACT, Mismatch, assert_close
from fastnn.distributed.comm import Communicator

SHAPES = [(3, 4), (), (0, 2), (5,)]


def _lists(dtype, rng):
    """Lists of host arrays of one dtype each: the float dtype under test, and int64."""
    floats = [rng.normal(size=s).astype(dtype) for s in SHAPES]
    ints = [rng.integers(-9, 9, size=s).astype("int64") for s in SHAPES]
    return [floats, ints] if dtype == "float32" else [floats]


def _compare(device, hook, label, got, host):
    if len(got) != len(host):
        raise Mismatch(f"{hook} {label}: {len(got)} arrays back for {len(host)}")
    for i, (array, want) in enumerate(zip(got, host)):
        back = np.asarray(device.ops.to_numpy(array))
        if back.shape != want.shape or back.dtype != want.dtype:
            raise Mismatch(f"{hook} {label}: array {i} came back {back.shape} {back.dtype}, "
                           f"expected {want.shape} {want.dtype}")
        assert_close(back, want, 0.0, 0.0, f"{hook} {label}: array {i} of shape {want.shape}")


def _run(device, dtype, rng, hook, arguments):
    comm = Communicator(None)
    for host in _lists(dtype, rng):
        arrays = [device.ops.from_numpy(h, device.index) for h in host]
        for argument in arguments:
            label = f"{argument!r} on one rank, {host[0].dtype}"
            got = getattr(device.ops, hook)(arrays, argument, comm, device.index)
            _compare(device, hook, label, got, host)
            _compare(device, hook, f"{label} (the inputs afterwards)", arrays, host)


def _check_allreduce(device, dtype, rng):
    _run(device, dtype, rng, "allreduce", ("sum", "max", "min"))


def _check_broadcast(device, dtype, rng):
    _run(device, dtype, rng, "broadcast", (0,))


# on one rank the reduction must give its inputs back exactly; across ranks each backend
# sums in its own order, so the hook is held to the table of sums on a user's model
register(Case("allreduce", check=_check_allreduce, tol=dict(ACCUMULATING)))
register(Case("broadcast", check=_check_broadcast, tol=dict(EXACT)))
