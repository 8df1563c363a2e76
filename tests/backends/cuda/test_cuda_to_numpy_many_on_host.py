"""The CUDA backend's to_numpy_many on a stand-in for cupy whose "device memory" is host
memory: the hook's address arithmetic runs on real addresses.

A stand-in device array is a NumPy view (host_build's DevArray: its ``data.ptr`` is the
view's first byte);
``memcpyAsync`` only queues a copy, which its stream's ``synchronize`` performs, so a
result read before the wait shows as wrong values, and every queued copy is counted.
"""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import numpy as np
import pytest
from fastnn_cuda import transfer

from tests.backends.cuda.host_build import DevArray


class _Stream:
    ptr = 7

    def __init__(self):
        self.queued, self.syncs, self.copies = [], 0, 0

    def synchronize(self):
        for dst, src, size in self.queued:
            ctypes.memmove(dst, src, size)
        self.queued.clear()
        self.syncs += 1


class _Pinned(bytearray):
    """A page-locked allocation of the stand-in: bytes with an address."""

    def __init__(self, size):
        super().__init__(size)
        self.ptr = ctypes.addressof((ctypes.c_char * size).from_buffer(self))

    def size(self):
        return len(self)


@pytest.fixture
def stream(monkeypatch):
    stream = _Stream()

    def memcpy_async(dst, src, size, kind, stream_ptr):
        assert kind == 2 and stream_ptr == stream.ptr  # device to host, on the stream
        stream.queued.append((dst, src, size))
        stream.copies += 1

    fake = SimpleNamespace(
        cuda=SimpleNamespace(get_current_stream=lambda: stream, alloc_pinned_memory=_Pinned,
                             runtime=SimpleNamespace(memcpyAsync=memcpy_async)),
        ascontiguousarray=lambda x: np.ascontiguousarray(x).view(DevArray))
    monkeypatch.setattr(transfer, "cp", fake)
    monkeypatch.setattr(transfer, "_staging", {})
    return stream


rng = np.random.default_rng(0)
W = rng.normal(size=(6, 8)).astype(np.float32)
WIDE = rng.normal(size=(4, 64))
VIEWS = {
    "matrix": W, "reshape": W.reshape(48), "rows": W[2:4], "transpose": W.T,
    "columns": W[:, 1:5], "reversed": W[::-1, ::-2], "sparse": WIDE[:, ::16],
    "broadcast": np.broadcast_to(W[:, :1], (6, 5)),
    "int64": np.arange(5, dtype=np.int64), "scalar": np.array(2.5), "empty": np.zeros((0, 2)),
    "bool": np.array([True, False, True]), "float16": W[1].astype(np.float16),
}


def test_every_view_is_read_as_numpy_sees_it_after_one_wait(stream):
    got = transfer.to_numpy_many([v.view(DevArray) for v in VIEWS.values()])
    assert stream.syncs == 1 and not stream.queued
    for (name, want), host in zip(VIEWS.items(), got):
        assert host.dtype == want.dtype and host.shape == want.shape, name
        np.testing.assert_array_equal(host, want, err_msg=name)
        assert not np.shares_memory(host, want), name  # a copy, not the device's memory
    # the matrix and its reshape: one read, one shared (so read-only) host copy; each
    # other non-empty view has a read of its own and a writable result
    assert stream.copies == len(VIEWS) - 2
    assert np.shares_memory(got[0], got[1])
    assert not got[0].flags.writeable and not got[1].flags.writeable
    assert all(host.flags.writeable for host in got[2:])


def test_a_strided_view_is_read_as_its_span_and_a_sparse_one_made_contiguous(stream):
    made = []
    contiguous = transfer.cp.ascontiguousarray
    transfer.cp.ascontiguousarray = lambda x: made.append(x) or contiguous(x)
    got = transfer.to_numpy_many([W.T.view(DevArray), WIDE[:, ::16].view(DevArray)])
    assert [m.shape for m in made] == [(4, 4)]  # only the sparse one: 16x its bytes
    assert got[0].strides == W.T.strides  # the transpose viewed on its span, as on device
    np.testing.assert_array_equal(got[1], WIDE[:, ::16])


def test_reads_go_in_rounds_that_fit_the_staging_buffer(stream, monkeypatch):
    monkeypatch.setattr(transfer, "STAGING_MAX", 1024)
    arrays = [rng.normal(size=n) for n in (20, 100, 30, 300, 1)]  # 300 doubles: 2400 bytes
    got = transfer.to_numpy_many([a.view(DevArray) for a in arrays])
    for host, want in zip(got, arrays):
        np.testing.assert_array_equal(host, want)
    assert stream.syncs >= 2 and not stream.queued
    assert transfer._staging[0].size() <= 1024 * 2


def test_nothing_to_read(stream):
    assert transfer.to_numpy_many([]) == []
    got = transfer.to_numpy_many([np.zeros((3, 0), np.int8).view(DevArray)])
    assert got[0].shape == (3, 0) and got[0].dtype == np.int8 and stream.copies == 0
