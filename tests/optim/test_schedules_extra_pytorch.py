"""MultiplicativeLR, ConstantLR, PolynomialLR, CosineAnnealingWarmRestarts, CyclicLR and
ChainedScheduler: the rates (and cycled momenta) of every step equal torch's over many steps,
and a state_dict() taken mid-run continues exactly as the uninterrupted run."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fastnn as fnn
from fastnn import optim
from fastnn.optim import lr_scheduler as sched

torch = pytest.importorskip("torch")

STEPS = 60


def _opt(lib, kind="sgd"):
    if lib is optim:
        a, b = fnn.zeros(3, requires_grad=True), fnn.zeros(2, requires_grad=True)
    else:
        a, b = lib.zeros(3, requires_grad=True), lib.zeros(2, requires_grad=True)
    groups = [{"params": [a]}, {"params": [b], "lr": 0.05}]
    if kind == "adam":
        return lib.optim.Adam(groups, lr=0.01) if lib is torch else optim.Adam(groups, lr=0.01)
    return (lib.optim.SGD if lib is torch else optim.SGD)(groups, lr=0.1, momentum=0.9)


CONFIGS = {
    "multiplicative": ("sgd", lambda s, o: s.MultiplicativeLR(o, lambda e: 0.95)),
    "multiplicative-per-group": ("sgd", lambda s, o: s.MultiplicativeLR(
        o, [lambda e: 0.9, lambda e: 1.0 if e % 2 else 0.8])),
    "constant": ("sgd", lambda s, o: s.ConstantLR(o, factor=0.25, total_iters=7)),
    "constant-default": ("sgd", lambda s, o: s.ConstantLR(o)),
    "polynomial": ("sgd", lambda s, o: s.PolynomialLR(o, total_iters=20, power=2.0)),
    "polynomial-linear": ("sgd", lambda s, o: s.PolynomialLR(o, total_iters=45)),
    "warm-restarts": ("sgd", lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=7)),
    "warm-restarts-mult": ("sgd", lambda s, o: s.CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2, eta_min=0.001)),
    "cyclic": ("sgd", lambda s, o: s.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=5)),
    "cyclic-triangular2": ("sgd", lambda s, o: s.CyclicLR(
        o, base_lr=[0.01, 0.02], max_lr=[0.1, 0.3], step_size_up=4, step_size_down=7,
        mode="triangular2", base_momentum=0.7, max_momentum=0.95)),
    "cyclic-exp-range": ("sgd", lambda s, o: s.CyclicLR(
        o, base_lr=0.01, max_lr=0.1, step_size_up=6, mode="exp_range", gamma=0.97)),
    "cyclic-adam": ("adam", lambda s, o: s.CyclicLR(o, base_lr=0.001, max_lr=0.01,
                                                    step_size_up=5)),
    "cyclic-scale-fn": ("sgd", lambda s, o: s.CyclicLR(
        o, base_lr=0.01, max_lr=0.1, step_size_up=3, scale_fn=lambda x: 1 / (1 + x),
        scale_mode="iterations", cycle_momentum=False)),
    "chained": ("sgd", lambda s, o: s.ChainedScheduler(
        [s.ConstantLR(o, factor=0.1, total_iters=4), s.ExponentialLR(o, gamma=0.93)])),
    "chained-warm-restarts": ("sgd", lambda s, o: s.ChainedScheduler(
        [s.LinearLR(o, start_factor=0.2, total_iters=6),
         s.CosineAnnealingWarmRestarts(o, T_0=10)])),
}


def _record(scheduler, opt):
    groups = opt.param_groups
    return (list(scheduler.get_last_lr()) + [g.get("momentum") or 0.0 for g in groups]
            + [g["betas"][0] if "betas" in g else 0.0 for g in groups])


def _run(lib, name, steps=STEPS):
    kind, make = CONFIGS[name]
    opt = _opt(lib, kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's "step() before optimizer.step()" warning
        scheduler = make(lib.optim.lr_scheduler if lib is torch else sched, opt)
        out = [_record(scheduler, opt)]
        for _ in range(steps):
            scheduler.step()
            out.append(_record(scheduler, opt))
    return out, scheduler, opt


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_rates_equal_torchs(name):
    ours, _, _ = _run(optim, name)
    theirs, _, _ = _run(torch, name)
    np.testing.assert_allclose(np.array(ours, float), np.array(theirs, float), rtol=1e-13,
                               atol=1e-15)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_state_dict_mid_run_continues(name):
    straight, _, _ = _run(optim, name)
    _, first, first_opt = _run(optim, name, steps=STEPS // 2)
    saved_sched, saved_opt = first.state_dict(), first_opt.state_dict()
    kind, make = CONFIGS[name]
    opt = _opt(optim, kind)
    scheduler = make(sched, opt)
    opt.load_state_dict(saved_opt)
    scheduler.load_state_dict(saved_sched)
    rest = []
    for _ in range(STEPS - STEPS // 2):
        scheduler.step()
        rest.append(_record(scheduler, opt))
    np.testing.assert_allclose(np.array(rest, float), np.array(straight[STEPS // 2 + 1:], float),
                               rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("epochs", [[0.5, 1.5, 2.25, 7.9, 20.0, 3.0], [13, 2, 45.5]])
def test_warm_restarts_step_to_an_epoch_as_torch(epochs):
    got, want = [], []
    for lib, out in ((optim, got), (torch, want)):
        opt = _opt(lib)
        s = (sched if lib is optim else torch.optim.lr_scheduler).CosineAnnealingWarmRestarts(
            opt, T_0=4, T_mult=2, eta_min=0.01)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for e in epochs:
                s.step(e)
                out.append(s.get_last_lr() + [s.T_cur, s.T_i, s.last_epoch])
    np.testing.assert_allclose(np.array(got, float), np.array(want, float), rtol=1e-13)


def test_sequential_with_the_new_schedules_equals_torchs():
    def run(lib):
        opt = _opt(lib)
        s = optim.lr_scheduler if lib is optim else torch.optim.lr_scheduler
        both = s.SequentialLR(opt, [s.ConstantLR(opt, factor=0.5, total_iters=3),
                                    s.PolynomialLR(opt, total_iters=10, power=1.5),
                                    s.CosineAnnealingWarmRestarts(opt, T_0=4, T_mult=2),
                                    s.CyclicLR(opt, 0.01, 0.1, step_size_up=3)],
                              milestones=[5, 12, 25])
        out = [both.get_last_lr()]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(40):
                both.step()
                out.append(both.get_last_lr())
        return out

    np.testing.assert_allclose(run(optim), run(torch), rtol=1e-13)


def test_bad_arguments_are_named():
    opt = _opt(optim)
    with pytest.raises(ValueError, match="factor"):
        sched.ConstantLR(opt, factor=2.0)
    with pytest.raises(ValueError, match="mode"):
        sched.CyclicLR(opt, 0.01, 0.1, mode="sawtooth")
    with pytest.raises(ValueError, match="lr_lambdas"):
        sched.MultiplicativeLR(opt, [lambda e: 1.0])
    with pytest.raises(ValueError, match="T_0"):
        sched.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(ValueError, match="momentum"):
        sched.CyclicLR(optim.Adagrad([fnn.zeros(2, requires_grad=True)]), 0.01, 0.1)
    with pytest.raises(ValueError, match="at least one"):
        sched.ChainedScheduler([])
