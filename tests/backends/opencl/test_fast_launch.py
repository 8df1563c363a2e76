"""The eager elementwise launch that keeps its kernel's arguments between calls
(fastnn_opencl.fast_launch): each call gets its own operands, scalars and offsets."""

import threading

import numpy as np

import fastnn as fnn

DEV = "opencl"
VALUES = np.array([-0.0, 1.0, np.nan, -2.0, 0.5, 3.0], np.float32)


def _same(got, want):
    assert got.dtype == want.dtype
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))  # -0.0 and 0.0 apart


def test_changing_scalars_reach_the_kernel(ocl):
    x = fnn.tensor(VALUES, device=DEV)
    for s in [0.0, -0.0, 2, 2.0, float("nan"), -0.0, 0.0, 3, np.float32(3), -1]:
        want = np.float32(s)
        _same((x + s).numpy(), VALUES + want)
        _same((x * s).numpy(), VALUES * want)
        _same(fnn.maximum(x, fnn.tensor(np.full(6, s, np.float32), device=DEV)).numpy(),
              np.maximum(VALUES, want))
    ints = fnn.tensor(np.arange(6), device=DEV)
    for s in [-100, 0, 3]:
        _same((ints == s).numpy(), np.arange(6) == s)


def test_operands_at_other_buffers_and_offsets(ocl):
    data = np.random.default_rng(0).standard_normal((8, 6)).astype(np.float32)
    big = fnn.tensor(data, device=DEV)
    for i in (0, 3, 3, 7, 0):
        a, b = big[i], big[(i + 1) % 8]  # contiguous rows at other offsets of one buffer
        _same((a - b).numpy(), data[i] - data[(i + 1) % 8])
        np.testing.assert_allclose(a.exp().numpy(), np.exp(data[i]), rtol=1e-6)  # ulps
        _same((a + 1.5).relu().numpy(), np.maximum(data[i] + np.float32(1.5), 0))
    for n in (3, 6, 1, 6):  # another size for the same kernel
        x = fnn.tensor(data[0, :n], device=DEV)
        _same((x * x).numpy(), data[0, :n] * data[0, :n])


def test_threads_each_launch_their_own_operands(ocl):
    data = np.random.default_rng(1).standard_normal((4, 256)).astype(np.float32)
    errors = []

    def work(k):
        try:
            a = fnn.tensor(data[k], device=DEV)
            for step in range(200):
                got = (a * float(step)).numpy()
                if not np.array_equal(got, data[k] * np.float32(step)):
                    errors.append((k, step))
        except Exception as exc:  # noqa: BLE001  (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]


def test_scalars_of_every_dtype_and_kind_reach_the_kernel(ocl):
    # set_scalar packs Python and NumPy scalars itself: the bytes set_arg(np scalar) gives
    from fastnn.api.registry import get_backend

    ops = get_backend("opencl").ops
    for dtype, scalars in [("float32", [2, 2.5, -0.0, 1e40, np.float32(0.1), 2**31 + 1]),
                           ("float64", [0.1, -3, np.float64(1e-300)]),
                           ("int32", [7, -2**31, 2.9, -2.9]),
                           ("int64", [2**40, -5, 3.7])]:
        data = np.arange(-3, 3).astype(dtype)
        x = ops.from_numpy(data, 0)
        for s in scalars:
            with np.errstate(over="ignore"):
                want = data + np.asarray(s, dtype=np.float64).astype(dtype)
            _same(ops.to_numpy(ops.add(x, s)), want)


def test_where_takes_a_changed_zero_scalar(ocl):
    cond = fnn.tensor(np.array([True, False, False]), device=DEV)
    x = fnn.tensor(np.ones(3, np.float32), device=DEV)
    for s in (0.0, -0.0, 0.0, -0.0):
        _same(fnn.where(cond, x, s).numpy(), np.where([True, False, False], np.float32(1),
                                                        np.float32(s)))


def test_reductions_of_one_shape_take_each_calls_operand(ocl):
    data = np.random.default_rng(2).standard_normal((5, 4, 6)).astype(np.float32)
    big = fnn.tensor(data, device=DEV)
    for i in (0, 2, 2, 4, 0):  # contiguous (4, 6) blocks at other offsets of one buffer
        x, want = big[i], data[i].astype(np.float64)
        for axis, keep in [(None, False), (1, False), (0, True), ((0, 1), True), (-1, True)]:
            np.testing.assert_allclose(x.sum(axis, keep).numpy(), want.sum(axis, keepdims=keep),
                                       rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(x.mean(axis, keep).numpy(),
                                       want.mean(axis, keepdims=keep), rtol=1e-5, atol=1e-6)
            np.testing.assert_array_equal(fnn.amax(x, axis, keep).numpy(),
                                          data[i].max(axis, keepdims=keep))
    wide = np.random.default_rng(3).standard_normal((3, 2, 64)).astype(np.float32)
    w = fnn.tensor(wide, device=DEV)  # k_reduce_outer on CPU devices: the middle axis kept
    for _ in range(2):
        np.testing.assert_allclose(w.sum((0, 2)).numpy(), wide.astype(np.float64).sum((0, 2)),
                                   rtol=1e-5)
    ints = fnn.tensor(np.arange(24).reshape(4, 6), device=DEV)
    _same(ints.sum(1).numpy(), np.arange(24).reshape(4, 6).sum(1))  # another dtype
    t = fnn.tensor(np.ascontiguousarray(data[1].T), device=DEV).T  # (4, 6), strides (1, 4)
    for axis in (None, 1, 0):  # the plans of (4, 6) are kept: t's strides take the general path
        np.testing.assert_allclose(t.sum(axis).numpy(), data[1].astype(np.float64).sum(axis),
                                   rtol=1e-5, atol=1e-5)


def test_plans_keep_no_inputs_from_the_pool(ocl):
    # plans are kept per shape: one that held its last operands would keep their memory
    import gc

    pool = fnn.tensor(np.ones(1, np.float32), device=DEV)._data.dev.pool
    shape = (3, 37)  # a shape no other test uses: fresh plans
    data = np.ones(shape, np.float32)
    gc.collect()
    before = pool.active_blocks
    x = fnn.tensor(data, device=DEV)
    bias = fnn.tensor(data[0], device=DEV)
    outs = [x + x, x.exp(), x * 2.0, x + bias, x.T + x.T, x.sum(1), fnn.where(x > 0, x, 0.0),
            x @ x.T]
    assert all(np.isfinite(o.numpy()).all() for o in outs)
    del x, bias, outs
    gc.collect()
    assert pool.active_blocks == before


def test_a_kept_plan_is_taken_only_by_its_shape_dtype_and_operand_kind(ocl, monkeypatch):
    # plans are looked up by (op, dtype, device, operand kind, shape): after cached calls,
    # another dtype, operand kind or layout of the same shape computes its own result
    from fastnn_opencl import unary_vec

    from fastnn.api.registry import get_backend

    ops = get_backend("opencl").ops
    rng = np.random.default_rng(4)
    for _ in range(2):  # built, then taken from the table
        for dtype in ("float32", "float64", "int32", "int64", "float32"):
            a = (rng.standard_normal((3, 5)) * 4).astype(dtype)
            b = (rng.standard_normal((3, 5)) * 4).astype(dtype)
            x, y = ops.from_numpy(a, 0), ops.from_numpy(b, 0)
            _same(ops.to_numpy(ops.add(x, y)), a + b)
            _same(ops.to_numpy(ops.mul(x, 3)), a * np.asarray(3).astype(dtype))
            _same(ops.to_numpy(ops.neg(x)), -a)
            _same(ops.to_numpy(ops.add(x, ops.from_numpy(b[0], 0))), a + b[0])  # broadcast
            t = ops.from_numpy(np.ascontiguousarray(a.T), 0).view((3, 5), (1, 3))
            _same(ops.to_numpy(ops.add(t, y)), a + b)  # same shape, transposed strides
            _same(ops.to_numpy(ops.neg(t)), -a)
    # exp of a large contiguous array takes the vector kernel, not a flat plan, before
    # and after a small one of that op is kept, and a strided view of it neither
    calls = []
    real = unary_vec.launch
    monkeypatch.setattr(unary_vec, "launch", lambda op, x: (calls.append(op), real(op, x))[1])
    n = unary_vec.MIN_SIZE
    big = rng.standard_normal((2, n)).astype(np.float32)
    whole, small = ops.from_numpy(big, 0), ops.from_numpy(big[0, :8].copy(), 0)
    view = whole.view((n, 2), (1, n))  # big.T: strided, so the general strided kernel
    for arr, want, vector in [(small, big[0, :8], 0), (whole, big, 1), (small, big[0, :8], 0),
                              (view, big.T, 0), (whole, big, 1)]:
        before = len(calls)
        np.testing.assert_allclose(ops.to_numpy(ops.exp(arr)), np.exp(want), rtol=1e-6)
        assert len(calls) - before == vector
