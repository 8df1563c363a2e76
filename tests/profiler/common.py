"""What the profiler tests share: a training step, an independent count of the hook calls
(a wrapper of our own on a backend's table), and a snapshot of everything the profiler
patches (to check that it puts all of it back)."""

from __future__ import annotations

from collections import Counter

import fastnn.nn.functional as F
import numpy as np

import fastnn as fnn
from fastnn import nn
from fastnn.api import hookspec, registry
from fastnn.api.device import as_device, parsed_devices
from fastnn.autograd import engine, tensor_ops
from fastnn.autograd.rules import RULES


def training(device="cpu"):
    """(model, optimizer, x, y): nn.Linear + relu + cross_entropy, trained by SGD."""
    fnn.manual_seed(0)
    model = nn.Linear(8, 4).to(device)
    opt = fnn.optim.SGD(model.parameters(), lr=0.1)
    x = fnn.tensor(np.random.default_rng(0).normal(size=(6, 8)).astype(np.float32),
                   device=device)
    y = fnn.tensor(np.arange(6) % 4, device=device)
    return model, opt, x, y


def step(model, opt, x, y):
    opt.zero_grad()
    loss = F.cross_entropy(F.relu(model(x)), y)  # step's forward
    loss.backward()
    opt.step()
    return loss


class Counting:
    """Count every hook call of backend ``name`` (and note the shapes of calls whose
    arguments are arrays and plain values), by wrapping its table in place."""

    def __init__(self, name="cpu"):
        self.backend = registry.get_backend(name)
        self.calls: Counter = Counter()
        self.shapes: list = []  # (hook, shapes) of the calls without lists of arrays

    def __enter__(self):
        table = self.backend.ops
        assert as_device(self.backend.name).ops is table  # the devices hold this table
        self.originals = {hook: getattr(table, hook) for hook in hookspec.HOOKS}
        for hook, fn in self.originals.items():
            setattr(table, hook, self._wrap(hook, fn))
        return self

    def _wrap(self, hook, fn):
        def call(*args):
            self.calls[hook] += 1
            if not any(isinstance(a, (list, tuple)) and any(hasattr(v, "shape") for v in a)
                       for a in args):
                self.shapes.append((hook, [list(a.shape) if hasattr(a, "shape") else []
                                           for a in args]))
            return fn(*args)
        return call

    def __exit__(self, *exc):
        for hook, fn in self.originals.items():
            setattr(self.backend.ops, hook, fn)


def snapshot():
    """Everything a profiler patches, by identity."""
    tables = {b.name: (b.ops, {hook: getattr(b.ops, hook) for hook in hookspec.HOOKS})
              for b in registry.loaded() if b.ops is not None}
    devices = [(dev, dev.ops) for dev in parsed_devices()]
    return (tables, devices, dict(RULES), dict(tensor_ops.TENSOR_RULES),
            engine.run_backward, list(registry._on_load))


def assert_same(before, after):
    tables, devices, rules, tensor_rules, run_backward, on_load = before
    assert after[0].keys() == tables.keys()
    for name, (table, hooks) in tables.items():
        assert after[0][name][0] is table
        changed = [h for h, fn in hooks.items() if after[0][name][1][h] is not fn]
        assert not changed, f"{name}: hooks left patched: {changed[:5]}"
    assert all(a[0] is d and a[1] is t for a, (d, t) in zip(after[1], devices))
    assert len(after[1]) == len(devices)
    assert all(after[2][op] is fn for op, fn in rules.items()) and after[2].keys() == rules.keys()
    assert all(after[3][op] is fn for op, fn in tensor_rules.items())
    assert after[4] is run_backward and after[5] == on_load
