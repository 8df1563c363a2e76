"""The eight model training steps of ``benchmarks/bench_models.py`` (issue 22), fastnn
alone, per backend: MLP, Conv1d, CNN (BatchNorm, max pooling), ResNet, LSTM, GRU,
TransformerEncoder and a nanoGPT block, each one SGD step on cross-entropy from fastnn's
own initial weights (bench_models.py compares them with PyTorch and the NumPy floors)."""

import sys
from pathlib import Path

import fastnn as fnn
import fastnn.functional as F

from .common import BACKENDS, sync

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import bench_models  # noqa: E402


class ModelStep:
    params = (BACKENDS, bench_models.define_names())
    param_names = ["backend", "model"]
    timeout = 600

    def setup(self, backend, model):
        fnn.manual_seed(0)
        self.model = bench_models.define(fnn, F)[model]().to(backend)
        self.opt = fnn.optim.SGD(list(self.model.parameters()), lr=0.01)
        x, y = bench_models.batch(model)
        self.x, self.y = fnn.tensor(x, device=backend), fnn.tensor(y, device=backend)
        self.time_step(backend, model)

    def time_step(self, backend, model):
        self.opt.zero_grad()
        loss = F.cross_entropy(self.model(self.x), self.y)
        loss.backward()
        self.opt.step()
        sync(loss)
