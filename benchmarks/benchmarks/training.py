"""Training steps and their peak memory, per backend.

* MLP: batch 128, 784-512-512-10, ReLU, softmax cross-entropy, SGD; with the
  tape (``loss.backward()``) and with ``reverse``/``apply``.
* Conv1d net: input (32, 8, 256), two k=5 convs (16 then 16 channels,
  padding 2), ReLU, mean over length, dense to 10 classes, SGD.

``peakmem_*`` records the peak resident memory of the benchmark process
around a few training steps (asv reports the process maximum, setup and
imports included, which is what a user sees).
"""

import numpy as np

import fastnn as fnn
import fastnn.functional as F

from .common import BACKENDS, host_array, mlp, sync

BATCH, SIZES = 128, (784, 512, 512, 10)


def _targets(batch, classes, device):
    return fnn.tensor(np.random.default_rng(0).integers(0, classes, batch), device=device)


class MLPStep:
    params = (BACKENDS, ["tape", "reverse"])
    param_names = ["backend", "mode"]

    def setup(self, backend, mode):
        self.model = mlp(SIZES, backend)
        self.opt = fnn.optim.SGD(self.model.parameters(), lr=0.01)
        self.x = fnn.tensor(host_array((BATCH, SIZES[0])), device=backend)
        self.y = _targets(BATCH, SIZES[-1], backend)
        self.onehot = F.one_hot(self.y, SIZES[-1])
        self.step(mode)

    def step(self, mode):
        if mode == "tape":
            self.opt.zero_grad()
            loss = F.cross_entropy(self.model(self.x), self.y)
            loss.backward()
            self.opt.step()
            sync(loss)
            return
        with fnn.no_grad():
            probs = F.softmax(self.model(self.x))
            grad = (probs - self.onehot) * (1.0 / BATCH)
            _, grads = self.model.reverse(self.x, grad)
            self.model.apply(self.opt, grads)
        sync(probs)

    def time_step(self, backend, mode):
        self.step(mode)

    def peakmem_step(self, backend, mode):
        for _ in range(5):
            self.step(mode)


class Conv1dStep:
    params = (BACKENDS,)
    param_names = ["backend"]

    def setup(self, backend):
        from fastnn import nn

        fnn.manual_seed(0)
        with fnn.use(backend):
            self.conv1 = nn.Conv1d(8, 16, 5, padding=2)
            self.conv2 = nn.Conv1d(16, 16, 5, padding=2)
            self.dense = nn.Linear(16, 10)
        params = [*self.conv1.parameters(), *self.conv2.parameters(), *self.dense.parameters()]
        self.opt = fnn.optim.SGD(params, lr=0.01)
        self.x = fnn.tensor(host_array((32, 8, 256)), device=backend)
        self.y = _targets(32, 10, backend)
        self.time_step(backend)

    def time_step(self, backend):
        self.opt.zero_grad()
        h = F.relu(self.conv1(self.x))
        h = F.relu(self.conv2(h)).mean(axis=2)
        loss = F.cross_entropy(self.dense(h), self.y)
        loss.backward()
        self.opt.step()
        sync(loss)

    def peakmem_step(self, backend):
        for _ in range(5):
            self.time_step(backend)
