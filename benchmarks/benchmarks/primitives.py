"""Primitives at a few sizes, per backend: matmul, conv1d, elementwise, softmax cross-entropy."""

import fastnn as fnn
import fastnn.functional as F

from .common import BACKENDS, host_array, sync


class Matmul:
    """(n, n) @ (n, n), float32: 2 n^3 flops."""

    params = (BACKENDS, [64, 256, 1024])
    param_names = ["backend", "n"]

    def setup(self, backend, n):
        self.a = fnn.tensor(host_array((n, n), 1), device=backend)
        self.b = fnn.tensor(host_array((n, n), 2), device=backend)
        sync(F.matmul(self.a, self.b))

    def time_matmul(self, backend, n):
        sync(F.matmul(self.a, self.b))


class Conv1d:
    """conv1d forward, input (batch, 8, 256), weight (16, 8, 5), padding 2."""

    params = (BACKENDS, [1, 32])
    param_names = ["backend", "batch"]

    def setup(self, backend, batch):
        self.x = fnn.tensor(host_array((batch, 8, 256), 1), device=backend)
        self.w = fnn.tensor(host_array((16, 8, 5), 2, 0.1), device=backend)
        sync(F.conv1d(self.x, self.w, padding=2))

    def time_conv1d(self, backend, batch):
        sync(F.conv1d(self.x, self.w, padding=2))


class Conv1dBackward:
    """conv1d forward and backward (both gradients through the tape), input (32, 32, 256),
    weight (32, 32, 5), padding 2: the middle layer of a small Conv1d net."""

    params = (BACKENDS,)
    param_names = ["backend"]

    def setup(self, backend):
        self.x = fnn.tensor(host_array((32, 32, 256), 1), device=backend, requires_grad=True)
        self.w = fnn.tensor(host_array((32, 32, 5), 2, 0.1), device=backend, requires_grad=True)
        self.time_forward_backward(backend)

    def time_forward_backward(self, backend):
        self.x.grad = self.w.grad = None
        F.conv1d(self.x, self.w, padding=2).sum().backward()
        sync(self.w.grad)


class Elementwise:
    """x * y + x and relu(x) on n elements: memory-bound ops."""

    params = (BACKENDS, [1_000, 1_000_000])
    param_names = ["backend", "n"]

    def setup(self, backend, n):
        self.x = fnn.tensor(host_array((n,), 1), device=backend)
        self.y = fnn.tensor(host_array((n,), 2), device=backend)
        # first calls may build device kernels: keep that out of the timings
        self.time_mul_add(backend, n)
        self.time_relu(backend, n)

    def time_mul_add(self, backend, n):
        sync(self.x * self.y + self.x)

    def time_relu(self, backend, n):
        sync(F.relu(self.x))


class CrossEntropy:
    """Fused softmax cross-entropy forward and backward, logits (batch, 10)."""

    params = (BACKENDS, [128, 4096])
    param_names = ["backend", "batch"]

    def setup(self, backend, batch):
        import numpy as np

        self.logits = fnn.tensor(host_array((batch, 10), 1), device=backend, requires_grad=True)
        labels = np.random.default_rng(0).integers(0, 10, batch)
        self.y = fnn.tensor(labels, device=backend)
        self.time_forward_backward(backend, batch)

    def time_forward_backward(self, backend, batch):
        self.logits.grad = None
        F.cross_entropy(self.logits, self.y).backward()
        sync(self.logits.grad)


class BiasActBackward:
    """Linear + ReLU layer's backward through the tape: the fused bias_act_backward hook
    (dz and the bias gradient at once), (batch, features) float32."""

    params = (BACKENDS, [(128, 512), (1024, 2048)])
    param_names = ["backend", "shape"]

    def setup(self, backend, shape):
        self.x = fnn.tensor(host_array(shape, 1), device=backend, requires_grad=True)
        self.b = fnn.tensor(host_array(shape[1:], 2), device=backend, requires_grad=True)
        self.g = fnn.tensor(host_array(shape, 3), device=backend)
        self.time_forward_backward(backend, shape)

    def time_forward_backward(self, backend, shape):
        self.x.grad = self.b.grad = None
        F.bias_act(self.x, self.b, "relu").backward(self.g)
        sync(self.b.grad)
