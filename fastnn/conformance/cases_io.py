"""Conformance cases of creation/transfer hooks, astype, and the fused optimizer steps.

Most of these are *custom* cases: ``check(device, dtype, rng)`` raises
:class:`Mismatch` on a wrong result. The optimizer steps call
``device.ops.<hook>`` directly (no public API reaches them with chosen
arguments) and compare with the NumPy rule written in the hook's docstring.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fastnn as fnn
from fastnn.api.dtypes import integer_names
from fastnn.conformance.case import Case, Sample, register
from fastnn.conformance.compare import EXACT, GRADIENT, Mismatch, assert_close

NAN, INF = float("nan"), float("inf")


def _host_arrays(rng, dtype):
    base = rng.normal(size=(4, 6)).astype(dtype)
    return {
        "C-contiguous": base,
        "Fortran order": np.asfortranarray(base),
        "transposed view": base.T,
        "strided slice": base[::2, 1::2],
        "size-0": np.zeros((0, 3), dtype),
        "0-d": np.array(1.5, dtype),
        "NaN/Inf": np.array([NAN, INF, -INF, -0.0], dtype),
    }


def _check_from_numpy(device, dtype, rng):
    arrays = _host_arrays(rng, dtype)
    if dtype == "float32":  # integer and bool transfers, once
        arrays.update({name: _full_range(rng, (3, 2), name) for name in integer_names()},
                      bool=rng.random((2, 2)) < 0.5)
    for label, array in arrays.items():
        if array.dtype.name not in device.backend.record.dtypes:
            continue
        back = fnn.tensor(array, device=device).numpy()
        if back.dtype != array.dtype:
            raise Mismatch(f"from_numpy/to_numpy {label}: dtype {back.dtype}, "
                           f"expected {array.dtype}")
        assert_close(back, array, 0.0, 0.0, f"from_numpy then to_numpy, {label}, {dtype}")


def _full_range(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def _check_to_numpy(device, dtype, rng):
    host = rng.normal(size=(3, 4)).astype(dtype)
    x = fnn.tensor(host, device=device)
    views = {"transposed": (x.T, host.T), "reshaped": (x.reshape(2, 6), host.reshape(2, 6)),
             "broadcast": (x.reshape(3, 1, 4).broadcast_to((3, 2, 4)),
                           np.broadcast_to(host.reshape(3, 1, 4), (3, 2, 4)))}
    for label, (tensor, expected) in views.items():
        got = tensor.numpy()
        if not isinstance(got, np.ndarray) or got.dtype != expected.dtype:
            raise Mismatch(f"to_numpy of a {label} array: got {type(got).__name__} "
                           f"{getattr(got, 'dtype', '')}, expected ndarray {expected.dtype}")
        assert_close(got, expected, 0.0, 0.0, f"to_numpy of a {label} array, {dtype}")


def _check_full(device, dtype, rng):
    for shape, value in [((2, 3), 1.5), ((), -2.0), ((0, 4), 1.0), ((5,), NAN), ((2, 2), -INF)]:
        got = fnn.full(shape, value, dtype=dtype, device=device).numpy()
        assert_close(got, np.full(shape, value, dtype), 0.0, 0.0,
                     f"full({shape}, {value}), {dtype}")


def _check_uniform(device, dtype, rng):
    n = 4096
    a = fnn.rand((n,), dtype=dtype, device=device, seed=7).numpy()
    b = fnn.rand((n,), dtype=dtype, device=device, seed=7).numpy()
    c = fnn.rand((n,), dtype=dtype, device=device, seed=8).numpy()
    if a.shape != (n,) or a.dtype != np.dtype(dtype):
        raise Mismatch(f"uniform: got {a.shape} {a.dtype}, expected ({n},) {dtype}")
    if not ((a >= 0) & (a < 1)).all():
        raise Mismatch(f"uniform, {dtype}: values outside [0, 1): min {a.min()}, max {a.max()}")
    assert_close(a, b, 0.0, 0.0, f"uniform, {dtype}: the same seed must give the same array")
    if np.array_equal(a, c):
        raise Mismatch(f"uniform, {dtype}: seeds 7 and 8 gave the same array")
    a = a.astype(np.float64)  # (NumPy would sum ml_dtypes' bfloat16 in bfloat16)
    # NOTE: 5 standard errors: a correct generator fails this about once in 10**6 runs
    mean_err, var_err = 5 * np.sqrt(1 / 12 / n), 5 * np.sqrt(1 / 180 / n)
    if abs(a.mean() - 0.5) > mean_err or abs(a.var() - 1 / 12) > var_err:
        raise Mismatch(f"uniform, {dtype}: mean {a.mean():.4f} (want 0.5 +- {mean_err:.3f}), "
                       f"variance {a.var():.4f} (want {1 / 12:.4f} +- {var_err:.4f})")
    if fnn.rand((0, 3), dtype=dtype, device=device, seed=1).shape != (0, 3):
        raise Mismatch("uniform: a size-0 shape must give a size-0 array")


for _name, _check in [("from_numpy", _check_from_numpy), ("to_numpy", _check_to_numpy),
                      ("full", _check_full), ("uniform", _check_uniform)]:
    register(Case(_name, check=_check, tol=dict(EXACT)))


# ---------------------------------------------------------------- astype (differentiable)

def _astype_run(x, to, dtype):
    target = {"other float": "float64" if dtype != "float64" else "float32"}.get(to, to)
    return x.to(target)


def _astype_ref(x, to):
    if to in integer_names():
        return np.trunc(x).astype(to)
    return x  # float to float: the harness rounds the reference to the output's dtype


def _astype_random(draw):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))
    # (uint8 left out: a negative float cast to it is undefined, as in C and PyTorch)
    to = draw(st.sampled_from(["other float", "int64", "int32", "int16", "int8"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    return Sample(f"random shape {shape} to {to}", (rng.normal(scale=5.0, size=shape),),
                  {"to": to}, needs=(to,) if to in integer_names() else ())


# NOTE: no finite differences: rounding to a narrower dtype is a step function at
# float64 resolution, so only the analytic gradient (the identity) is checked.
register(Case("astype", run=_astype_run, ref=_astype_ref, pass_dtype=True, diff_args=(0,),
              grad_check="analytic", random=_astype_random,
              grad_ref=lambda x, grad_out, to: (grad_out,), tol=dict(EXACT),
              samples=lambda rng: [
                  Sample("to the other float dtype", (rng.normal(size=(3, 4)),),
                         {"to": "other float"}),
                  Sample("to int64 (truncates toward zero)",
                         (np.array([-2.7, -0.5, 0.0, 0.5, 2.7, 3.0]),), {"to": "int64"}),
                  Sample("to int32", (np.array([[-1.9, 1.9], [7.2, -7.2]]),), {"to": "int32"},
                         needs=("int32",)),
                  Sample("to int16", (np.array([-32000.5, -1.9, 1.9, 32000.7]),), {"to": "int16"},
                         needs=("int16",)),
                  Sample("to int8", (np.array([-127.9, -1.9, 1.9, 126.5]),), {"to": "int8"},
                         needs=("int8",)),
                  Sample("to uint8", (np.array([0.0, 0.9, 1.9, 254.7]),), {"to": "uint8"},
                         needs=("uint8",)),
                  Sample("size-0", (np.zeros((0, 2)),), {"to": "other float"})],
              edges=lambda rng, dtype: [
                  Sample("NaN/Inf to the other float", (np.array([NAN, INF, -INF, -0.0]),),
                         {"to": "other float"})]))


# ---------------------------------------------------------------- fused optimizer steps

def _sgd_ref(p, g, buf, lr, wd, momentum, dampening, nesterov, first_step):
    g = g + wd * p
    if momentum:
        buf = g.copy() if first_step else momentum * buf + (1 - dampening) * g
        g = g + momentum * buf if nesterov else buf
    return p - lr * g, buf


def _adam_ref(p, g, m, v, lr, wd, beta1, beta2, eps, step, decoupled):
    if decoupled:
        p = p * (1 - lr * wd)
    else:
        g = g + wd * p
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    m_hat, v_hat = m / (1 - beta1**step), v / (1 - beta2**step)
    return p - lr * m_hat / (np.sqrt(v_hat) + eps), m, v


def _rmsprop_ref(p, g, v, lr, wd, alpha, eps):
    g = g + wd * p
    v = alpha * v + (1 - alpha) * g * g
    return p - lr * g / (np.sqrt(v) + eps), v


SHAPES = [(3, 4), (5,), ()]
LRS, WDS = [0.1, 0.05, 0.2], [0.0, 0.01, 0.1]


def _state(rng, positive=False):
    return [np.abs(rng.normal(size=s)) if positive else rng.normal(size=s) for s in SHAPES]


def _compare_step(device, dtype, hook, got_lists, want_lists, names, variant):
    rtol, atol = GRADIENT[dtype]
    for got_list, want_list, name in zip(got_lists, want_lists, names):
        for i, (got, want) in enumerate(zip(got_list, want_list)):
            got = device.ops.to_numpy(got)
            assert_close(got, want.astype(dtype), rtol, atol,
                         f"{hook} {variant}: {name}[{i}] of shape {want.shape}, {dtype}")


def _check_sgd(device, dtype, rng):
    ops, put = device.ops, lambda a: device.ops.from_numpy(a.astype(dtype), device.index)
    for momentum, dampening, nesterov, first_step in [(0.0, 0.0, False, True),
                                                      (0.9, 0.0, False, True),
                                                      (0.9, 0.1, False, False),
                                                      (0.9, 0.0, True, False)]:
        p, g, buf = _state(rng), _state(rng), _state(rng)
        bufs = [put(b) for b in buf] if momentum else [None] * len(SHAPES)
        new_p, new_b = ops.sgd_step([put(a) for a in p], [put(a) for a in g], bufs, LRS, WDS,
                                    momentum, dampening, nesterov, first_step)
        want = [_sgd_ref(*args, momentum, dampening, nesterov, first_step)
                for args in zip(p, g, buf, LRS, WDS)]
        variant = f"momentum={momentum} dampening={dampening} nesterov={nesterov} " \
                  f"first_step={first_step}"
        got = [new_p, new_b] if momentum else [new_p]
        _compare_step(device, dtype, "sgd_step", got, [[w[0] for w in want], [w[1] for w in want]],
                      ["params", "bufs"], variant)


def _check_adam(device, dtype, rng):
    ops, put = device.ops, lambda a: device.ops.from_numpy(a.astype(dtype), device.index)
    for step, decoupled in [(1, False), (3, False), (1, True), (5, True)]:
        p, g, m, v = _state(rng), _state(rng), _state(rng), _state(rng, positive=True)
        got = ops.adam_step([put(a) for a in p], [put(a) for a in g], [put(a) for a in m],
                            [put(a) for a in v], LRS, WDS, 0.9, 0.999, 1e-8, step, decoupled)
        want = [_adam_ref(*args, 0.9, 0.999, 1e-8, step, decoupled)
                for args in zip(p, g, m, v, LRS, WDS)]
        _compare_step(device, dtype, "adam_step", got, [list(w) for w in zip(*want)],
                      ["params", "exp_avgs", "exp_avg_sqs"], f"step={step} decoupled={decoupled}")


def _check_rmsprop(device, dtype, rng):
    ops, put = device.ops, lambda a: device.ops.from_numpy(a.astype(dtype), device.index)
    for alpha, eps in [(0.99, 1e-8), (0.9, 1e-3)]:
        p, g, v = _state(rng), _state(rng), _state(rng, positive=True)
        got = ops.rmsprop_step([put(a) for a in p], [put(a) for a in g], [put(a) for a in v],
                               LRS, WDS, alpha, eps)
        want = [_rmsprop_ref(*args, alpha, eps) for args in zip(p, g, v, LRS, WDS)]
        _compare_step(device, dtype, "rmsprop_step", got, [list(w) for w in zip(*want)],
                      ["params", "square_avgs"], f"alpha={alpha} eps={eps}")


register(Case("sgd_step", check=_check_sgd, tol=dict(GRADIENT)))
register(Case("adam_step", check=_check_adam, tol=dict(GRADIENT)))
register(Case("rmsprop_step", check=_check_rmsprop, tol=dict(GRADIENT)))
