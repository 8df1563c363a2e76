"""Optimizers and schedules pickle and deep-copy: the per-parameter state (kept by
``id(param)``) follows the copied parameters, and the copy steps on as the original."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn, optim
from fastnn.optim import lr_scheduler

OPTIMIZERS = {
    "SGD": dict(lr=0.1, momentum=0.9), "RMSprop": dict(lr=0.01, centered=True, momentum=0.5),
    "Adam": dict(lr=0.01, amsgrad=True), "AdamW": dict(lr=0.01), "Adagrad": dict(lr=0.1),
    "RAdam": dict(lr=0.01), "NAdam": dict(lr=0.01),
}


def _step(opt, params, seed):
    rng = np.random.default_rng(seed)
    opt.apply_gradients([(p, fnn.tensor(rng.standard_normal(p.shape), dtype=p.dtype))
                         for p in params])


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_state_follows_the_copied_parameters(name, how):
    model = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4))
    opt = getattr(optim, name)(model.parameters(), **OPTIMIZERS[name])
    for seed in range(3):
        _step(opt, list(model.parameters()), seed)
    twin_model, twin = (pickle.loads(pickle.dumps((model, opt))) if how == "pickle"
                        else copy.deepcopy((model, opt)))
    params, twin_params = list(model.parameters()), list(twin_model.parameters())
    assert [p for g in twin.param_groups for p in g["params"]] == twin_params
    # (iterating the state gives the parameters, as PyTorch's optimizer.state)
    assert {id(p) for p in twin.state} == {id(p) for p in twin_params}
    assert all(any(p is q for q in twin_params) for p in twin.state)
    for a, b in zip(*(o.state_dict()["state"].values() for o in (opt, twin))):
        assert a.keys() == b.keys()
        for key in a:
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    for seed in range(3, 6):
        _step(opt, params, seed)
        _step(twin, twin_params, seed)
    for a, b in zip(params, twin_params):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_schedules_pickle_with_their_optimizer():
    model = nn.Linear(2, 2)
    opt = optim.SGD(model.parameters(), lr=0.1)
    schedules = [lr_scheduler.StepLR(opt, 2), lr_scheduler.OneCycleLR(opt, 0.1, total_steps=10),
                 lr_scheduler.CosineAnnealingLR(opt, 5), lr_scheduler.ReduceLROnPlateau(opt)]
    for schedule in schedules:
        for _ in range(3):
            schedule.step(*([1.0] if isinstance(schedule, lr_scheduler.ReduceLROnPlateau)
                            else []))
        twin = pickle.loads(pickle.dumps(schedule))
        assert twin.optimizer is not opt and twin.state_dict() == schedule.state_dict()
        assert twin.optimizer.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
