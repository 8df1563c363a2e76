"""On a real GPU: the fused expression kernels, the layer kernels and CUDA-graph replays.

Skips where no usable CUDA device exists (the host tests cover the same code on NumPy:
test_cuda_fused_program.py, test_cuda_layers_on_host.py, test_cuda_graph_on_host.py).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from fastnn_cuda import cublas_lib, fused_program, graph, layers

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn, optim
from fastnn.api import composite_norm, composite_pool, composite_recurrent
from fastnn.api.fusion import evaluate
from tests.backends.cuda.gpu_common import cupy_or_skip
from tests.steps import classification_step

cp = cupy_or_skip()
pytestmark = pytest.mark.gpu
CPU = fnn.Device("cpu").ops
TOL = dict(rtol=1e-10, atol=1e-12)


def rand(shape, seed, scale=1.0):
    return np.random.default_rng(seed).standard_normal(shape) * scale


def test_fused_expression_on_the_gpu():
    expr = ("where", ("greater", ("in", 0), ("in", 1)), ("sigmoid", ("in", 0)),
            ("maximum", ("tanh", ("in", 1)), ("const", 0.25)))
    for dtype in ("float32", "float64"):
        a, b = rand(1000, 1).astype(dtype), rand(1000, 2).astype(dtype)
        a[5] = np.nan
        got = fused_program.fused_elementwise(expr, [cp.asarray(a), cp.asarray(b)])
        want = evaluate(CPU, expr, [a, b])
        tol = dict(rtol=2e-6, atol=1e-7) if dtype == "float32" else TOL
        np.testing.assert_allclose(cp.asnumpy(got), want, equal_nan=True, **tol)


def test_layer_kernels_on_the_gpu():
    x = rand((2, 3, 9, 8), 3)
    out = layers.max_pool2d(cp.asarray(x), (3, 3), (2, 2), (1, 1), (1, 1), (5, 4))
    np.testing.assert_array_equal(cp.asnumpy(out), composite_pool.max_pool2d(
        CPU, x, (3, 3), (2, 2), (1, 1), (1, 1), (5, 4)))
    w, b = rand((3,), 4), rand((3,), 5)
    got = layers.batch_norm_train(cp.asarray(x), cp.asarray(w), cp.asarray(b), 1e-5)
    want = composite_norm.batch_norm_train(CPU, x, w, b, 1e-5)
    for g, e in zip(got, want):
        np.testing.assert_allclose(cp.asnumpy(g), e, **TOL)
    xs, h0, c0 = rand((6, 4, 5), 6), rand((4, 7), 7), rand((4, 7), 8)
    w_ih, w_hh, bias = rand((28, 5), 9, 0.4), rand((28, 7), 10, 0.4), rand((28,), 11)
    got = layers.lstm_layer(*(cp.asarray(a) for a in (xs, h0, c0, w_ih, w_hh, bias)))
    want = composite_recurrent.lstm_layer(CPU, xs, h0, c0, w_ih, w_hh, bias)
    for g, e in zip(got, want):
        np.testing.assert_allclose(cp.asnumpy(g), e, **TOL)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.lstm = nn.LSTM(16, 8)
        self.head = nn.Linear(8 * 4, 3)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)  # (N, 4, 4, 4)
        seq, _ = self.lstm(h.reshape(x.shape[0], 4, 16).transpose(0, 1))
        return self.head(seq.transpose(0, 1).reshape(x.shape[0], -1))


@pytest.mark.parametrize("use_graphs", [True, False])
def test_compiled_steps_on_the_gpu_match_eager(use_graphs, monkeypatch):
    """Adam with a schedule: the optimizer runs plain, the rest as one graph, its products
    (conv, LSTM, linear; forward and backward) through cuBLAS called directly (cupy refuses
    cuBLAS in a capture): a capture that failed and fell back would fail this test."""
    monkeypatch.setattr(graph, "ENABLED", use_graphs)
    runs, products = [], []
    compile_program = graph.compile_program
    monkeypatch.setattr(graph, "compile_program",
                        lambda program: runs.append(compile_program(program)) or runs[-1])
    gemm = cublas_lib.Handle.gemm
    monkeypatch.setattr(cublas_lib.Handle, "gemm",
                        lambda self, *args: products.append(args[-1]) or gemm(self, *args))
    results = []
    for compiled in (False, True):
        fnn.manual_seed(0)
        model = Net().to("cuda")
        opt = optim.Adam(model.parameters(), lr=0.01)
        sched = optim.lr_scheduler.StepLR(opt, 3, 0.5)

        step = classification_step(model, opt)

        run = fnn.compile(step) if compiled else step
        rng = np.random.default_rng(1)
        losses = []
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a failed capture would warn
            for _ in range(10):
                x = fnn.tensor(rng.standard_normal((5, 1, 8, 8)).astype(np.float32),
                               device="cuda")
                y = fnn.tensor(rng.integers(0, 3, 5), device="cuda")
                losses.append(float(run(x, y).numpy()))
                sched.step()
        results.append((losses, [p.numpy() for p in model.parameters()]))
    (l1, p1), (l2, p2) = results
    if use_graphs:
        plans = [run.state["plan"] for run in runs if hasattr(run, "state")]
        assert plans and all(plan is not None for plan in plans), "a capture fell back"
        assert len(products) >= 10 and set(products) == {np.dtype(np.float32)}
    else:
        assert not products
    np.testing.assert_allclose(l1, l2, rtol=1e-4, atol=1e-5)
    for a, b in zip(p1, p2):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_products_captured_through_cublas_match_numpy(dtype):
    """gemm.matmul inside CupyCapture (cuBLAS through ctypes, as cupy refuses cuBLAS there):
    2-D, batched, broadcast, 1-D and transposed operands, replayed twice."""
    from fastnn_cuda import capture, gemm

    cap = capture.CupyCapture(0)
    rng = np.random.default_rng(2)
    tol = {"float16": dict(rtol=1e-2, atol=5e-2), "float32": dict(rtol=1e-4, atol=1e-4),
           "float64": dict(rtol=1e-11, atol=1e-11)}[dtype]
    cases = [((64, 48), (48, 32)), ((3, 5, 7), (3, 7, 4)), ((2, 3, 5, 7), (7, 4)),
             ((7,), (3, 7, 2)), ((2, 1, 4, 6), (3, 6, 5)), ((300, 257), (257, 129))]
    for a_shape, b_shape in cases:
        a0 = rng.standard_normal(a_shape).astype(dtype)
        b0 = rng.standard_normal(b_shape).astype(dtype)
        want = np.matmul(a0.astype(np.float64), b0.astype(np.float64))
        for flip in (False, True):
            a, b = cp.asarray(a0), cp.asarray(b0)
            if flip:  # the same values through transposed views
                a, b = (cp.ascontiguousarray(x.swapaxes(-1, -2)).swapaxes(-1, -2)
                        if x.ndim > 1 else x for x in (a, b))
            graph_obj, (out,) = cap.capture(lambda v: [gemm.matmul(cp, v[0], v[1])], [a, b])
            for _ in range(2):
                out.fill(cp.nan)
                cap.launch(graph_obj)
                np.testing.assert_allclose(cp.asnumpy(out).astype(np.float64), want, **tol)
