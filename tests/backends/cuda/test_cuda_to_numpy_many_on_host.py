"""The CUDA backend's to_numpy_many on a stand-in for cupy: copies queued, one sync, in order.

The stand-in's non-blocking ``asnumpy`` hands back an empty host array that only its
stream's ``synchronize`` fills, so a result read before the sync shows as wrong values.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from fastnn_cuda import primitives


class _Stream:
    ptr = 7

    def __init__(self):
        self.queued, self.syncs = [], 0

    def synchronize(self):
        for host, source in self.queued:
            host[...] = source
        self.queued.clear()
        self.syncs += 1


class _DeviceArray:
    """A device array of the stand-in: its values, on device 0."""

    def __init__(self, values):
        self.values, self.shape, self.device = values, values.shape, SimpleNamespace(id=0)


def test_every_copy_waits_for_one_sync_and_keeps_the_order(monkeypatch):
    stream, calls = _Stream(), []

    def asnumpy(x, stream=None, blocking=True):
        calls.append(blocking)
        host = np.full(x.values.shape, -1, x.values.dtype)
        stream.queued.append((host, x.values))
        return host

    fake = SimpleNamespace(asnumpy=asnumpy, cuda=SimpleNamespace(get_current_stream=lambda: stream))
    monkeypatch.setattr(primitives, "cp", fake)
    rng = np.random.default_rng(0)
    values = [rng.normal(size=(3, 4)).astype(np.float32), np.arange(5, dtype=np.int64),
              np.array(2.5), np.zeros((0, 2), np.float32), np.array([True, False])]
    got = primitives.to_numpy_many([_DeviceArray(v) for v in values])
    assert calls == [False] * len(values) and stream.syncs == 1
    for host, want in zip(got, values):
        assert host.dtype == want.dtype and host.shape == want.shape
        np.testing.assert_array_equal(host, want)
    assert primitives.to_numpy_many([]) == []
