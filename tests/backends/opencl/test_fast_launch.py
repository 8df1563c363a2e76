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
