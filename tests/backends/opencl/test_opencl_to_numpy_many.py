"""to_numpy_many on OpenCL: many small arrays gathered (more than one k_gather launch),
large ones read alone, views of one buffer read once, every result as to_numpy's; and
the same read from buffers kept mapped, where the device's buffers are host memory."""

import numpy as np
import pytest
from fastnn_opencl import host_map, runtime, transfer


@pytest.fixture(params=["commands", "mapped, in C", "mapped, in Python"])
def reads(request, ocl, monkeypatch):
    """Each test three times: read with commands (gathers, copies), and from mapped
    buffers (skipped where the device's buffers cannot be mapped so) with host_copy.c
    (skipped where it did not build) and with its Python loop."""
    if request.param == "commands":
        monkeypatch.setattr(host_map, "maps", lambda dev: None)
        monkeypatch.setattr(host_map, "_tables", {})  # (host_copy.c reads it first)
        return request.param
    if host_map.maps(runtime.state(0)) is None:
        pytest.skip("this device's buffers are not host memory kept mapped")
    if request.param.endswith("in C"):
        if transfer._native() is None:
            pytest.skip(f"host_copy.c did not build: {transfer._native_copy[1]}")
    else:
        monkeypatch.setattr(transfer, "_native_copy", [None, "off for a test"])
    return request.param


def test_gathered_and_direct_reads_match_to_numpy(ocl, reads, monkeypatch):
    monkeypatch.setattr(transfer, "GATHER_BELOW", 4096)  # 1,000+ float32 read alone
    rng = np.random.default_rng(0)
    hosts = [rng.normal(size=(n % 7 + 1, n % 5 + 1)).astype(np.float32) for n in range(40)]
    hosts += [np.arange(n + 1) % 2 == 1 for n in range(5)]  # 1-byte elements, odd lengths
    hosts += [rng.integers(-5, 5, n + 1).astype(np.int64) for n in range(3)]
    hosts += [rng.normal(size=(40, 30)).astype(np.float32), np.arange(3, dtype=np.float64)]
    arrays = [ocl.from_numpy(h, 0) for h in hosts]
    big = arrays[-2]
    views = [ocl.transpose(big, (1, 0)), ocl.slice(big, (2, 3), (9, 30), (3, 1)),
             ocl.broadcast_to(ocl.slice(arrays[0], (0, 0), (1, 1), (1, 1)), (4, 6)),
             ocl.slice(ocl.from_numpy(hosts[44].repeat(3), 0), (1,), (9,), (2,))]
    got = ocl.to_numpy_many(arrays + views)
    assert len(got) == len(arrays) + len(views)
    for array, host in zip(arrays + views, got):
        want = ocl.to_numpy(array)
        assert host.dtype == want.dtype and host.shape == want.shape
        np.testing.assert_array_equal(host, want)
    np.testing.assert_array_equal(got[0], hosts[0])
    assert not got[-2].flags.writeable  # a broadcast: read-only, as np.broadcast_to's


def test_gathered_ranges_longer_than_a_work_group_are_read_whole(ocl, reads):
    """Ranges of many work groups' length, of unlike lengths, more than one launch's."""
    rng = np.random.default_rng(3)
    hosts = [rng.normal(size=n).astype(np.float32) for n in (1, 255, 256, 257, 3000, 17, 9000)]
    hosts += [rng.integers(0, 9, size=(40, 33)).astype(np.int64), np.arange(1001) % 3 == 0]
    hosts += [rng.normal(size=n).astype(np.float64) for n in range(1, 40)]  # > 30 ranges
    arrays = [ocl.from_numpy(h, 0) for h in hosts]
    for host, got in zip(hosts, ocl.to_numpy_many(arrays)):
        assert got.dtype == host.dtype and got.shape == host.shape
        np.testing.assert_array_equal(got, host)


def test_gathered_ranges_read_by_vectors_from_any_word(ocl, reads):
    """k_gather copies 16 words at a time, then the tail: stretches that start at an odd
    word of their buffer, with lengths around multiples of 16 and of a work group's 4096."""
    rng = np.random.default_rng(5)
    lengths = (15, 16, 17, 31, 33, 4095, 4096, 4097, 8200, 20000)
    hosts = [rng.normal(size=n + 7).astype(np.float32) for n in lengths]
    arrays = [ocl.slice(ocl.from_numpy(h, 0), (3,), (3 + n,), (1,))
              for h, n in zip(hosts, lengths)]  # 3 words into the buffer
    for host, n, got in zip(hosts, lengths, ocl.to_numpy_many(arrays)):
        np.testing.assert_array_equal(got, host[3:3 + n])


def test_mapped_reads_see_later_writes_and_are_copies(ocl):
    """A buffer stays mapped between reads: what a kernel writes after the first read is
    in the second, and a read is a copy (neither the device's later writes nor the
    caller's changes reach another read)."""
    table = host_map.maps(runtime.state(0))
    if table is None:
        pytest.skip("this device's buffers are not host memory kept mapped")
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = ocl.from_numpy(host, 0)
    first, view = ocl.to_numpy_many([x, ocl.transpose(x, (1, 0))])
    assert x.data.int_ptr in table.views
    ocl.assign(x, ocl.mul(x, ocl.from_numpy(np.full((3, 4), 2, np.float32), 0)))
    ocl.assign(x, ocl.add(x, ocl.from_numpy(np.ones((3, 4), np.float32), 0)))
    again, = ocl.to_numpy_many([x])  # (queued, not finished: the read waits for them)
    np.testing.assert_array_equal(first, host)
    np.testing.assert_array_equal(view, host.T)
    np.testing.assert_array_equal(again, host * 2 + 1)
    again[0, 0] = -7
    np.testing.assert_array_equal(ocl.to_numpy_many([x])[0], host * 2 + 1)


def test_mapped_table_is_emptied_past_its_limit(ocl, monkeypatch):
    dev = runtime.state(0)
    if host_map.maps(dev) is None:
        pytest.skip("this device's buffers are not host memory kept mapped")
    table = host_map.HostMaps(dev)  # (an empty one: the pool's buffers may be mapped)
    monkeypatch.setitem(host_map._tables, id(dev), table)
    monkeypatch.setattr(host_map, "LIMIT_BYTES", 1 << 12)
    arrays = [ocl.from_numpy(np.full(256, i, np.float32), 0) for i in range(6)]  # 1 KiB
    for i, got in enumerate(ocl.to_numpy_many(arrays)):
        np.testing.assert_array_equal(got, np.full(256, i, np.float32))
    assert len(table.views) <= 4 and table.nbytes <= 1 << 12


def test_transposed_views_read_first_and_of_three_axes(ocl, reads):
    """Views dense in another axis order (transposes of 2 and 3 axes, one of a buffer
    never read before), beside a broadcast and a strided slice, read as to_numpy does."""
    rng = np.random.default_rng(11)
    cube = rng.normal(size=(3, 4, 5)).astype(np.float32)
    flat = rng.normal(size=(6, 7)).astype(np.float64)
    a, b = ocl.from_numpy(cube, 0), ocl.from_numpy(flat, 0)
    views = [ocl.transpose(a, (2, 0, 1)), ocl.transpose(b, (1, 0)), a,
             ocl.transpose(ocl.slice(a, (0, 0, 0), (3, 1, 5), (1, 1, 1)), (2, 1, 0)),
             ocl.broadcast_to(ocl.slice(b, (0, 0), (1, 7), (1, 1)), (3, 7)),
             ocl.slice(b, (0, 0), (6, 7), (2, 3))]
    wants = [cube.transpose(2, 0, 1), flat.T, cube, cube[:, :1].transpose(2, 1, 0),
             np.broadcast_to(flat[:1], (3, 7)), flat[::2, ::3]]
    for got, want in zip(ocl.to_numpy_many(views), wants):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        if got.flags.writeable:  # a copy: the device's array keeps its values
            got[...] = 0
    np.testing.assert_array_equal(ocl.to_numpy(a), cube)


def test_sparse_views_of_mapped_buffers_are_copied_without_a_kernel(ocl, reads, monkeypatch):
    """Views that cover much more of their buffer than they hold (q, k and v of a packed
    projection, a strided slice) read as to_numpy does; where the buffers are mapped
    they are copied on the host, with no gather kernel (a launch each on PoCL): the three
    thirds as one stretch of the buffer, viewed (read-only: they share it), the sparser
    slice element by element (its copy the caller's: the device's array keeps its
    values)."""
    rng = np.random.default_rng(5)
    packed = rng.normal(size=(2, 5, 12)).astype(np.float32)
    x = ocl.from_numpy(packed, 0)
    views = [ocl.slice(x, (0, 0, 4 * k), (2, 5, 4 * k + 4), (1, 1, 1)) for k in range(3)]
    views.append(ocl.slice(x, (0, 1, 0), (2, 5, 12), (1, 3, 5)))
    wants = [packed[..., 4 * k:4 * k + 4] for k in range(3)] + [packed[:, 1::3, ::5]]
    launched = []
    real_copy = transfer.elementwise.copy
    monkeypatch.setattr(transfer.elementwise, "copy",
                        lambda a: launched.append(a) or real_copy(a))
    got = ocl.to_numpy_many(views)
    assert bool(launched) == (reads == "commands")
    for host, want in zip(got, wants):
        assert host.dtype == want.dtype and host.shape == want.shape
        np.testing.assert_array_equal(host, want)
    if reads != "commands":
        assert not any(host.flags.writeable for host in got[:3])
        assert np.may_share_memory(got[0], got[2])  # (one stretch: the thirds interleave)
    got[3][...] = 0
    np.testing.assert_array_equal(ocl.to_numpy(x), packed)


def test_arrays_of_one_stretch_share_one_read_only_copy(ocl, reads):
    """Arrays that hold the very same stretch of one buffer (an array, its reshape, its
    transpose) read as to_numpy does; from mapped buffers (in C) the stretch is copied
    once and each is viewed on it, read-only, as the hook's contract says of results
    that share memory (in Python the C-ordered ones only); an array of another stretch,
    and one read alone, are the caller's to write."""
    rng = np.random.default_rng(9)
    cube = rng.normal(size=(2, 3, 4)).astype(np.float32)
    x, other = ocl.from_numpy(cube, 0), ocl.from_numpy(cube + 1, 0)
    arrays = [x, ocl.reshape(x, (6, 4)), ocl.transpose(x, (2, 0, 1)), other,
              ocl.reshape(other, (24,))]
    wants = [cube, cube.reshape(6, 4), cube.transpose(2, 0, 1), cube + 1, cube.reshape(24) + 1]
    got = ocl.to_numpy_many(arrays)
    for host, want in zip(got, wants):
        assert host.dtype == want.dtype and host.shape == want.shape
        np.testing.assert_array_equal(host, want)
    if reads != "commands":
        assert not any(got[i].flags.writeable for i in (0, 1, 3, 4))
        assert np.may_share_memory(got[0], got[1]) and np.may_share_memory(got[3], got[4])
        native = reads == "mapped, in C"
        assert got[2].flags.writeable != native
        assert np.may_share_memory(got[0], got[2]) == native
        assert not np.may_share_memory(got[0], got[3])
    alone, = ocl.to_numpy_many([x])
    assert alone.flags.writeable
    alone[...] = 0
    np.testing.assert_array_equal(ocl.to_numpy(x), cube)


def test_the_c_copy_refuses_a_view_that_is_not_dense(ocl):
    """fastnn_copy_mapped, given a broadcast (which fastnn_split_mapped never gives it),
    raises instead of reading past what the view covers."""
    functions = transfer._native()
    table = host_map.maps(runtime.state(0))
    if functions is None or table is None:
        pytest.skip("no mapped reads in C here")
    row = ocl.from_numpy(np.arange(4, dtype=np.float32), 0)
    wide = ocl.broadcast_to(row, (3, 4))
    ocl.to_numpy_many([row])  # (its buffer mapped)
    groups, rest = functions[0]([wide, row], host_map._tables, host_map.maps)
    assert rest == [0] and [[i for i, _ in items] for _, items in groups] == [[1]]
    hosts = [None]
    with pytest.raises(ValueError, match="densely"):
        functions[1]([(0, wide)], table.views, runtime.NP_TYPES, np.empty, np.ndarray, hosts,
                     {}, False)
    assert hosts == [None]


def test_mapped_reads_hold_no_references(ocl, reads):
    """Reading the same arrays again and again leaves their counts, and their dtypes',
    as they were (host_copy.c's reads take and give back what they touch)."""
    import gc
    import sys

    cube = ocl.from_numpy(np.arange(24, dtype=np.float32).reshape(2, 3, 4), 0)
    arrays = [cube, ocl.transpose(cube, (2, 0, 1)), ocl.from_numpy(np.arange(5), 0)]
    held = arrays + [cube.data, cube.dtype, arrays[2].dtype, cube.shape,
                     runtime.NP_TYPES["float32"], runtime.NP_TYPES["int64"]]
    ocl.to_numpy_many(arrays)
    gc.collect()
    before = [sys.getrefcount(v) for v in held]
    for _ in range(100):
        ocl.to_numpy_many(arrays)
    gc.collect()
    after = [sys.getrefcount(v) for v in held]  # (a reference kept per read would add
    # 100 or more; a cache elsewhere may take or drop one of a name)
    assert after[:4] == before[:4] and all(abs(a - b) <= 2 for a, b in zip(after, before))


def test_views_are_the_device_memory_where_it_is_host_memory(ocl, reads):
    """to_numpy_views: every result as to_numpy's, read-only; from mapped buffers the
    dense arrays (a transpose, a reshape among them) are the buffers' own memory, so a
    later write by the device shows in them (what shadow mode's in-place rule is for);
    where the buffers are not mapped, None (nothing viewed: read with to_numpy_many)."""
    rng = np.random.default_rng(4)
    cube = rng.normal(size=(2, 3, 4)).astype(np.float32)
    x = ocl.from_numpy(cube, 0)
    arrays = [x, ocl.transpose(x, (2, 0, 1)), ocl.reshape(x, (6, 4)),
              ocl.slice(x, (0, 0, 0), (2, 3, 4), (1, 2, 1)), ocl.from_numpy(np.arange(5), 0)]
    wants = [cube, cube.transpose(2, 0, 1), cube.reshape(6, 4), cube[:, ::2], np.arange(5)]
    got = ocl.to_numpy_views(arrays)
    if reads == "commands":
        assert got is None
        return
    for host, want in zip(got, wants):
        assert host.dtype == want.dtype and host.shape == want.shape
        np.testing.assert_array_equal(host, want)
    ocl.assign(x, ocl.from_numpy(np.zeros_like(cube), 0))  # the device writes x's buffer
    ocl.to_numpy(x)  # (the queue finished)
    for host in got[:3] if reads.endswith("in C") else got[:1] + got[2:3]:
        assert not host.flags.writeable and not host.any()  # the buffer itself
    np.testing.assert_array_equal(got[4], np.arange(5))
