"""Dispatch overhead: a fastnn op on tiny arrays against the raw NumPy call it wraps.

On 2x2 arrays the arithmetic costs next to nothing, so the fastnn time minus
the NumPy time is what the framework adds per op (argument checks, dtype and
device bookkeeping, the tape when gradients are on).
"""

import numpy as np

import fastnn as fnn
import fastnn.functional as F

from .common import BACKENDS, host_array, sync


class RawNumpy:
    """The floor: the NumPy calls themselves."""

    def setup(self):
        self.a, self.b = host_array((2, 2), 1), host_array((2, 2), 2)

    def time_add(self):
        np.add(self.a, self.b)

    def time_matmul(self):
        np.matmul(self.a, self.b)

    def time_ten_op_chain(self):
        x = self.a
        for _ in range(10):
            x = np.maximum(x * self.b + self.a, 0)


class FastnnOp:
    """The same ops through fastnn, without and with the tape."""

    params = (BACKENDS,)
    param_names = ["backend"]

    def setup(self, backend):
        self.a = fnn.tensor(host_array((2, 2), 1), device=backend)
        self.b = fnn.tensor(host_array((2, 2), 2), device=backend)
        self.leaf = fnn.tensor(host_array((2, 2), 1), device=backend, requires_grad=True)
        # first calls may build device kernels: keep that out of the timings
        for name in dir(self):
            if name.startswith("time_"):
                getattr(self, name)(backend)

    def time_add(self, backend):
        self.a + self.b

    def time_matmul(self, backend):
        F.matmul(self.a, self.b)

    def time_ten_op_chain(self, backend):
        x = self.a
        for _ in range(10):
            x = F.relu(x * self.b + self.a)
        sync(x)

    def time_ten_op_forward_backward(self, backend):
        """A 30-op graph (10 x (mul, add, relu)) recorded and differentiated."""
        self.leaf.grad = None
        x = self.leaf
        for _ in range(10):
            x = F.relu(x * self.b + self.a)
        x.sum().backward()
        sync(self.leaf.grad)
