"""A capture's matrix products on the host: CupyCapture with cupy's refusal simulated.

cupy refuses cuBLAS while a stream captures (its matmul raises NotImplementedError: on an
H100 with cupy 14.2 every compiled step with a matmul fell back to the interpreter). Here
cupy is NumPy whose stream capture raises a flag and whose matmul then refuses float
operands, and cuBLAS is :class:`HostBlas`, which runs each call from its pointers as cuBLAS
reads memory. Every hook of the backend that multiplies matrices (matmul; conv1d, conv2d
and their gradients; the LSTM and GRU layers forward and backward; attention forward and
backward) runs inside ``CupyCapture.capture``: it must give what it gives eagerly, with
every product through the direct cuBLAS path. Kernels run from their own sources built for
the host, one thread after another.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from fastnn_cuda import (
    _cupy,
    capture,
    conv,
    conv_2d,
    cublas_lib,
    fused,
    kernels,
    layers,
    primitives,
    sdpa,
)

from tests.backends.cuda.conv_cases import CONV2D_CASES, CONV_CASES
from tests.backends.cuda.host_build import (
    SERIAL_SHIM,
    build_serial,
    compile_library,
    launch_serially,
    require_compiler,
)
from tests.backends.cuda.test_cuda_call_sites_on_host import _dev, _NumpyAsCupy
from tests.backends.cuda.test_cuda_gemm_plan import HostBlas

require_compiler()

TOL = {"float64": dict(rtol=1e-11, atol=1e-12), "float32": dict(rtol=2e-5, atol=2e-5),
       "float16": dict(rtol=2e-2, atol=2e-2)}


class RefusingCupy(_NumpyAsCupy):
    """NumPy as cupy, with stream capture: while a stream captures, matmul refuses float
    operands as cupy's cuBLAS wrappers do."""

    def __init__(self):
        super().__init__()
        self.capturing = False
        fake = self

        class Ctx:
            compute_capability = "90"

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return None

        class Stream(Ctx):
            ptr = 7

            def __init__(self, non_blocking=False):
                pass

            def begin_capture(self):
                fake.capturing = True

            def end_capture(self):
                fake.capturing = False
                return SimpleNamespace(launch=lambda: None)

            def is_capturing(self):
                return fake.capturing

        self.cuda = SimpleNamespace(Device=lambda i: Ctx(), Stream=Stream,
                                    MemoryPool=lambda: SimpleNamespace(malloc=None),
                                    using_allocator=lambda malloc: Ctx())

    def matmul(self, a, b):
        if self.capturing and np.result_type(a, b).kind == "f":
            raise NotImplementedError("calling cuBLAS API during stream capture is "
                                      "currently unsupported")
        return _dev(np.matmul(a, b))


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    directory = tmp_path_factory.mktemp("capture")
    text = SERIAL_SHIM + kernels.source("layers.cu").replace('#line 1 "', '#line 1 "host_')
    return {**build_serial(directory),
            "layers.cu": compile_library(directory, "layers", text)}


@pytest.fixture
def captured(libs, monkeypatch):
    """``run(fn, *args)``: fn(*args) eagerly, then inside CupyCapture.capture; returns both
    results and the HostBlas calls the capture made."""
    fake = RefusingCupy()
    monkeypatch.setattr(_cupy, "cupy", fake)
    for module in (conv, conv_2d, fused, layers, primitives, sdpa):
        monkeypatch.setattr(module, "cp", fake)
    blas = HostBlas()
    monkeypatch.setattr(cublas_lib, "handle", lambda device_id: blas)

    launch_serially(monkeypatch, libs, PLANE_THREADS_MAX=64)
    cap = capture.CupyCapture(0)

    def run(fn, *args):
        eager = fn(*args)
        before = len(blas.calls)
        _, got = cap.capture(lambda values: fn(*values), list(args))
        assert blas.bound == (7, cap.workspace.data.ptr, 32 << 20)
        return eager, got, blas.calls[before:]

    return run


def rand(shape, dtype, seed, scale=1.0):
    return _dev((np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype))


def same(got, want, dtype):
    if isinstance(want, tuple | list):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w, dtype)
        return
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               **TOL[dtype])


DTYPES = ["float32", "float64", "float16"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_matmul_hook(captured, dtype):
    cases = [((5, 4), (4, 3), False), ((5, 4), (4, 3), True), ((2, 3, 5, 4), (4, 6), False),
             ((2, 5, 4), (2, 4, 3), True), ((4,), (3, 4, 2), False)]
    for n, (a_shape, b_shape, flip) in enumerate(cases):
        a, b = rand(a_shape, dtype, n), rand(b_shape, dtype, n + 10)
        if flip:  # transposed views: the transpose flags, no copies
            a = _dev(np.ascontiguousarray(a.swapaxes(-1, -2))).swapaxes(-1, -2)
            b = _dev(np.ascontiguousarray(b.swapaxes(-1, -2))).swapaxes(-1, -2)
        eager, got, calls = captured(primitives.matmul, a, b)
        same(got, eager, dtype)
        assert calls == [(dtype, 1 if len(b_shape) == 2 else int(np.prod(b_shape[:-2])))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", [CONV_CASES[0], CONV_CASES[1]])
def test_conv1d_and_its_gradients(captured, dtype, case):
    n, c_in, length, c_out, k, *attrs = case
    groups = attrs[-1]
    x, w = rand((n, c_in, length), dtype, 1), rand((c_out, c_in // groups, k), dtype, 2)
    eager, got, calls = captured(conv.conv1d, x, w, *attrs)
    same(got, eager, dtype)
    g = rand(eager.shape, dtype, 3)
    for fn, args in ((conv.conv1d_grad_weight, (x, g, k)),
                     (conv.conv1d_grad_input, (g, w, length))):
        more = captured(fn, *args, *attrs)
        same(more[1], more[0], dtype)
        calls += more[2]
    assert calls == [(dtype, groups)] * 3


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", [CONV2D_CASES[0], CONV2D_CASES[1]])
def test_conv2d_and_its_gradients(captured, dtype, case):
    x_shape, w_shape, *attrs = case
    groups = attrs[-1]
    x, w = rand(x_shape, dtype, 4), rand(w_shape, dtype, 5)
    eager, got, calls = captured(conv_2d.conv2d, x, w, *attrs)
    same(got, eager, dtype)
    g = rand(eager.shape, dtype, 6)
    for fn, args in ((conv_2d.conv2d_grad_weight, (x, g, w_shape[2:])),
                     (conv_2d.conv2d_grad_input, (g, w, x_shape[2:]))):
        more = captured(fn, *args, *attrs)
        same(more[1], more[0], dtype)
        calls += more[2]
    assert calls == [(dtype, groups)] * 3


@pytest.mark.parametrize("dtype", ["float32", "float64"])  # float16: the composite's matmuls
def test_lstm_and_gru_layers(captured, dtype):
    t_len, n, size, hid = 4, 3, 5, 6
    x = _dev(rand((n, t_len, size), dtype, 7).transpose(1, 0, 2))
    h0, c0 = rand((n, hid), dtype, 8), rand((n, hid), dtype, 9)
    w_ih, w_hh = rand((4 * hid, size), dtype, 10, 0.5), rand((4 * hid, hid), dtype, 11, 0.5)
    bias = rand((4 * hid,), dtype, 12)
    eager, got, calls = captured(layers.lstm_layer, x, h0, c0, w_ih, w_hh, bias)
    same(got, eager, dtype)
    assert len(calls) == 1 + t_len  # the input projection, then one product a step
    grad_out, grad_c = rand((t_len, n, hid), dtype, 13), rand((n, hid), dtype, 14)
    eager_b, got_b, calls = captured(layers.lstm_layer_backward, x, h0, c0, w_ih, w_hh,
                                     *eager, grad_out, grad_c, True)
    same(got_b, eager_b, dtype)
    assert len(calls) == t_len + 3  # a product a step, then d x, d w_ih, d w_hh
    w_ih, w_hh = w_ih[: 3 * hid], w_hh[: 3 * hid]
    b_ih, b_hh = bias[: 3 * hid], rand((3 * hid,), dtype, 15)
    eager, got, calls = captured(layers.gru_layer, x, h0, w_ih, w_hh, b_ih, b_hh)
    same(got, eager, dtype)
    assert len(calls) == 1 + t_len
    eager_b, got_b, calls = captured(layers.gru_layer_backward, x, h0, w_ih, w_hh, *eager,
                                     grad_out, True)
    same(got_b, eager_b, dtype)
    assert len(calls) == t_len + 3
    assert all(call == (dtype, 1) for call in calls)


@pytest.mark.parametrize("dtype", DTYPES)
def test_attention_forward_and_backward(captured, dtype, monkeypatch):
    monkeypatch.setattr(kernels, "has_kernel", lambda d: False)  # the softmax on cupy calls
    q, k, v = (rand((2, 3, 5, 4), dtype, seed) for seed in (16, 17, 18))
    mask = _dev(np.tril(np.ones((5, 5), bool)))
    eager, got, calls = captured(sdpa.attention, q, k, v, mask, 0.5)
    same(got, eager, dtype)
    assert calls == [(dtype, 6)] * 2
    grad = rand((2, 3, 5, 4), dtype, 19)
    eager_b, got_b, calls = captured(sdpa.attention_backward, q, k, v, eager[1], grad, 0.5)
    same(got_b, eager_b, dtype)
    assert calls == [(dtype, 6)] * 4
