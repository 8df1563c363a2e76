"""PyTorch's schedules: the rates of every step equal torch's (computed the same way, so
exactly), with a written-out formula where one exists; state_dict() mid-run continues."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import fastnn as fnn
from fastnn import optim
from fastnn.optim import lr_scheduler as sched

STEPS = 40

# name -> (class name, factory of keyword arguments given the optimizer module)
CONFIGS = {
    "step": ("StepLR", dict(step_size=7, gamma=0.5)),
    # the transformer tutorial's StepLR(optimizer, 1.0, gamma=0.95): PyTorch takes a float
    "step-float": ("StepLR", dict(step_size=1.0, gamma=0.95)),
    "step-fraction": ("StepLR", dict(step_size=2.5, gamma=0.5)),
    "multistep": ("MultiStepLR", dict(milestones=[3, 10, 10, 25], gamma=0.3)),
    "exponential": ("ExponentialLR", dict(gamma=0.9)),
    "cosine": ("CosineAnnealingLR", dict(T_max=12, eta_min=0.001)),
    "linear": ("LinearLR", dict(start_factor=0.1, end_factor=1.0, total_iters=8)),
    "linear-decay": ("LinearLR", dict(start_factor=1.0, end_factor=0.2, total_iters=30)),
    "lambda": ("LambdaLR", dict(lr_lambda=lambda e: 1.0 / (1 + e))),
    "onecycle": ("OneCycleLR", dict(max_lr=0.5, total_steps=STEPS + 1)),
    "onecycle-linear-3": ("OneCycleLR", dict(max_lr=[0.5, 0.2], total_steps=STEPS + 1,
                                             anneal_strategy="linear", three_phase=True)),
}


def _two_groups(lib, momentum=0.9):
    if lib is optim:
        a, b = fnn.zeros(3, requires_grad=True), fnn.zeros(2, requires_grad=True)
    else:
        a, b = lib.zeros(3, requires_grad=True), lib.zeros(2, requires_grad=True)
    opt_cls = optim.SGD if lib is optim else lib.optim.SGD
    return opt_cls([{"params": [a]}, {"params": [b], "lr": 0.05}], lr=0.1, momentum=momentum)


def _make(lib_sched, opt, name):
    cls, kwargs = CONFIGS[name]
    return getattr(lib_sched, cls)(opt, **kwargs)


def _rates(scheduler, opt, steps):
    """The rates (and momenta, which OneCycleLR cycles) after construction and each step."""
    out = []
    for t in range(steps + 1):
        if t:
            scheduler.step()
        out.append(scheduler.get_last_lr() + [g.get("momentum") for g in opt.param_groups])
    return out


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_rates_equal_pytorchs(name):
    torch = pytest.importorskip("torch")
    ours_opt, theirs_opt = _two_groups(optim), _two_groups(torch)
    ours = _rates(_make(sched, ours_opt, name), ours_opt, STEPS)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's "step() before optimizer.step()" warning
        theirs = _rates(_make(torch.optim.lr_scheduler, theirs_opt, name), theirs_opt, STEPS)
    np.testing.assert_allclose(np.array(ours, dtype=float), np.array(theirs, dtype=float),
                               rtol=1e-13, atol=0)


# epochs passed to step(epoch): jumps forward and back, as an old script's resume does
JUMPS = [3, 4, 4, 7, 2, 10, 11, 12, 1, 0, 13, 30]


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_step_with_an_epoch_equals_pytorchs(name):
    """``scheduler.step(epoch)`` is deprecated in PyTorch but still honoured (with a
    UserWarning): the closed form at that epoch where the rule has one."""
    torch = pytest.importorskip("torch")
    import warnings

    def run(lib_sched, opt):
        scheduler = _make(lib_sched, opt, name)
        out = []
        for epoch in JUMPS:
            with pytest.warns(UserWarning, match="epoch parameter in `scheduler.step"):
                scheduler.step(epoch)
            out.append(scheduler.get_last_lr() + [g.get("momentum") for g in opt.param_groups])
        return out

    ours = run(sched, _two_groups(optim))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = run(torch.optim.lr_scheduler, _two_groups(torch))
    np.testing.assert_allclose(np.array(ours, dtype=float), np.array(theirs, dtype=float),
                               rtol=1e-13, atol=0)


def test_plateau_step_with_an_epoch_sets_last_epoch():
    torch = pytest.importorskip("torch")

    def run(lib_sched, opt):
        plateau = lib_sched.ReduceLROnPlateau(opt, patience=0)
        with pytest.warns(UserWarning, match="epoch parameter"):
            plateau.step(1.0, 5)
        plateau.step(2.0)
        return plateau.last_epoch, plateau.get_last_lr()

    assert run(sched, _two_groups(optim)) == run(torch.optim.lr_scheduler, _two_groups(torch))


def test_sequential_and_plateau_equal_pytorchs():
    torch = pytest.importorskip("torch")
    import warnings

    def run(lib_sched, opt):
        warm = lib_sched.LinearLR(opt, start_factor=0.25, total_iters=4)
        decay = lib_sched.CosineAnnealingLR(opt, T_max=10)
        both = lib_sched.SequentialLR(opt, [warm, decay], milestones=[5])
        return _rates(both, opt, STEPS)

    def plateau(lib_sched, opt):
        s = lib_sched.ReduceLROnPlateau(opt, patience=2, factor=0.5, cooldown=1, min_lr=0.004)
        losses = [1.0, 0.9, 0.95, 0.96, 0.97, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.4] * 3
        out = []
        for loss in losses:
            s.step(loss)
            out.append(s.get_last_lr())
        return out

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fn in (run, plateau):
            theirs = fn(torch.optim.lr_scheduler, _two_groups(torch))
            ours = fn(sched, _two_groups(optim))
            np.testing.assert_allclose(np.array(ours, float), np.array(theirs, float),
                                       rtol=1e-13, atol=0)


def test_cosine_rises_again_past_t_max():
    opt = _two_groups(optim)
    s = sched.CosineAnnealingLR(opt, T_max=10, eta_min=0.0)
    lrs = [s.get_last_lr()[0]] + [(s.step(), s.get_last_lr()[0])[1] for _ in range(20)]
    want = [0.1 * (1 + math.cos(math.pi * t / 10)) / 2 for t in range(21)]
    np.testing.assert_allclose(lrs, want, rtol=1e-9, atol=1e-15)
    assert lrs[10] == pytest.approx(0.0, abs=1e-15) and lrs[20] == pytest.approx(0.1)


@pytest.mark.parametrize("kind", ["closed", "formula"])
def test_written_out_formulas(kind):
    opt = _two_groups(optim, momentum=0.0)
    s = sched.StepLR(opt, step_size=3, gamma=0.5) if kind == "closed" else sched.LinearLR(
        opt, start_factor=0.5, total_iters=4)
    got = [s.get_last_lr()[1]] + [(s.step(), s.get_last_lr()[1])[1] for _ in range(8)]
    if kind == "closed":
        want = [0.05 * 0.5 ** (t // 3) for t in range(9)]
    else:
        want = [0.05 * (0.5 + 0.5 * min(t, 4) / 4) for t in range(9)]
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(CONFIGS) + ["sequential", "plateau"])
def test_state_dict_round_trip_mid_run(name, tmp_path):
    def build(opt):
        if name == "sequential":
            return sched.SequentialLR(opt, [sched.LinearLR(opt, total_iters=3),
                                            sched.ExponentialLR(opt, 0.8)], milestones=[4])
        if name == "plateau":
            return sched.ReduceLROnPlateau(opt, patience=1)
        return _make(sched, opt, name)

    def advance(s, steps, start):
        out = []
        for t in range(start, start + steps):
            s.step(1.0 / (1 + t % 5)) if name == "plateau" else s.step()
            out.append(s.get_last_lr())
        return out

    opt = _two_groups(optim)
    straight = advance(build(opt), STEPS, 0)
    opt = _two_groups(optim)
    first = build(opt)
    head = advance(first, STEPS // 2, 0)
    fnn.save({"sched": first.state_dict(), "opt": opt.state_dict()}, tmp_path / "s.safetensors")
    saved = fnn.load(tmp_path / "s.safetensors")
    opt2 = _two_groups(optim)
    second = build(opt2)
    opt2.load_state_dict(saved["opt"])
    second.load_state_dict(saved["sched"])
    tail = advance(second, STEPS - STEPS // 2, STEPS // 2)
    np.testing.assert_array_equal(np.array(head + tail), np.array(straight))


# (class, the saved scheduler's arguments, the arguments of the one that loads its state)
RESTORED = [
    ("StepLR", dict(step_size=3, gamma=0.5), dict(step_size=5, gamma=0.9)),
    ("MultiStepLR", dict(milestones=[2, 8, 8, 12], gamma=0.5), dict(milestones=[3])),
    ("ExponentialLR", dict(gamma=0.9), dict(gamma=0.5)),
    ("LinearLR", dict(start_factor=0.1, total_iters=10), dict(start_factor=0.5, total_iters=3)),
    ("CosineAnnealingLR", dict(T_max=10, eta_min=0.01), dict(T_max=30)),
    ("ConstantLR", dict(factor=0.3, total_iters=8), dict(factor=0.5, total_iters=2)),
    ("PolynomialLR", dict(total_iters=12, power=2.0), dict(total_iters=30)),
    ("OneCycleLR", dict(max_lr=1.0, total_steps=30, anneal_strategy="linear"),
     dict(max_lr=1.0, total_steps=40, pct_start=0.5)),
    ("ReduceLROnPlateau", dict(patience=1, factor=0.5, cooldown=2), dict(patience=6)),
]


def _resumed_both(run, torch, tmp_path) -> tuple:
    """``run(lib, lib_sched, checkpoint)`` with fastnn (its scheduler state saved to a file
    and loaded back) and with torch (the state dict as it is): (ours, theirs)."""
    def checkpoint(state):
        fnn.save({"s": state}, tmp_path / "s.safetensors")
        return fnn.load(tmp_path / "s.safetensors")["s"]

    ours = run(optim, sched, checkpoint)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = run(torch, torch.optim.lr_scheduler, lambda state: state)
    return ours, theirs


@pytest.mark.parametrize("cls, saved_args, new_args", RESTORED, ids=[r[0] for r in RESTORED])
def test_load_state_dict_restores_the_saved_hyperparameters(cls, saved_args, new_args,
                                                            tmp_path):
    """PyTorch's scheduler state_dict is its __dict__: loading it into a scheduler built
    with other arguments continues with the saved ones (through a checkpoint here)."""
    torch = pytest.importorskip("torch")

    metrics = [1.0, 0.9, 0.95, 0.96, 0.97, 0.98] + [0.99] * 14

    def run(lib, lib_sched, save):
        opt = _two_groups(lib)
        first = getattr(lib_sched, cls)(opt, **saved_args)
        second_opt = _two_groups(lib)
        second = getattr(lib_sched, cls)(second_opt, **new_args)
        out = []
        for t, metric in enumerate(metrics):
            scheduler = first if t < 6 else second
            (scheduler.step(metric) if cls == "ReduceLROnPlateau" else scheduler.step())
            if t == 5:
                opt_state, state = save(opt.state_dict()), save(first.state_dict())
                second_opt.load_state_dict(opt_state)
                second.load_state_dict(state)
            out.append(scheduler.get_last_lr())
        return out

    ours, theirs = _resumed_both(run, torch, tmp_path)
    np.testing.assert_allclose(np.array(ours), np.array(theirs), rtol=1e-13, atol=0)


def test_a_rate_changed_between_steps_carries_on():
    opt = _two_groups(optim)
    s = sched.ExponentialLR(opt, gamma=0.5)
    s.step()
    opt.param_groups[0]["lr"] = 1.0
    s.step()
    assert s.get_last_lr() == [0.5, 0.05 * 0.25]


@pytest.mark.parametrize("make, error, match", [
    (lambda o: sched.StepLR(o, 0), ValueError, "step_size must be > 0"),
    (lambda o: sched.StepLR(o, "2"), TypeError, "step_size must be a real number"),
    (lambda o: sched.CosineAnnealingLR(o, T_max=0), ValueError, "T_max must be an integer"),
    (lambda o: sched.LinearLR(o, start_factor=0), ValueError, r"start_factor must be in \(0, 1\]"),
    (lambda o: sched.ExponentialLR(o, gamma="x"), TypeError, "gamma must be a real number"),
    (lambda o: sched.OneCycleLR(o, max_lr=1.0), ValueError, "give total_steps"),
    (lambda o: sched.ReduceLROnPlateau(o, mode="low"), ValueError, "mode must be 'min' or"),
    (lambda o: sched.SequentialLR(o, [sched.StepLR(o, 2)], milestones=[3]), ValueError,
     "1 schedulers need 0 milestones"),
    (lambda o: sched.LambdaLR(o, 3), TypeError, "lr_lambda must be a function"),
    (lambda o: sched.LambdaLR(o, "a"), TypeError, "lr_lambda must be a function"),
    (lambda o: sched.LambdaLR(o, lambda e: "x"), TypeError,
     r"lr_lambda\(0\) returned str 'x'; it must return a number"),
    (lambda o: sched.LambdaLR(o, lambda e: -1.0), ValueError,
     r"learning rate at epoch 0 is -0.1; it must be finite and >= 0"),
    (lambda o: sched.StepLR(fnn.nn.Linear(2, 2), 3), TypeError, "expected an optimizer"),
])
def test_bad_arguments_are_named(make, error, match):
    with pytest.raises(error, match=match):
        make(_two_groups(optim))


def test_step_size_may_be_a_float_as_in_the_transformer_tutorial():
    opt = _two_groups(optim, momentum=0.0)
    s = sched.StepLR(opt, 1.0, gamma=0.95)
    got = [s.get_last_lr()[0]] + [(s.step(), s.get_last_lr()[0])[1] for _ in range(5)]
    np.testing.assert_allclose(got, [0.1 * 0.95 ** t for t in range(6)], rtol=1e-12)
    assert s.step_size == 1.0  # kept as given, as PyTorch keeps it


@pytest.mark.parametrize("optimizer_first", [True, False])
def test_stepping_the_scheduler_first_warns_as_torch(optimizer_first):
    """PyTorch warns when the first scheduler.step() comes before any optimizer.step()
    (the schedule's first rate is skipped); the usual order is silent."""
    torch = pytest.importorskip("torch")
    import warnings

    def warned(lib):
        opt = _two_groups(lib)
        s = (sched if lib is optim else torch.optim.lr_scheduler).StepLR(opt, 2)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            if optimizer_first:
                opt.step()
            s.step()
            opt.step()
            s.step()
        return ["before `optimizer.step()`" in str(w.message) for w in seen]

    assert warned(optim) == warned(torch) == ([] if optimizer_first else [True])


def _restarting(lib_sched):
    """A user's schedule that keeps a counter of its own (PyTorch saves every attribute)."""

    class Restarting(lib_sched.LRScheduler):
        def __init__(self, optimizer, period):
            self.period, self.restarts = period, 0
            super().__init__(optimizer)

        def get_lr(self):
            if self.last_epoch and self.last_epoch % self.period == 0:
                self.restarts += 1
            return [b / (1 + self.restarts) * (1 - (self.last_epoch % self.period) / self.period)
                    for b in self.base_lrs]

    return Restarting


def test_a_users_subclass_saves_its_own_attributes_as_torch(tmp_path):
    """A subclass's own attributes (its counters, its arguments) go into state_dict and come
    back with load_state_dict, through a checkpoint, as PyTorch's whole-__dict__ state."""
    torch = pytest.importorskip("torch")

    def run(lib, lib_sched, save):
        Restarting = _restarting(lib_sched)
        opt = _two_groups(lib)
        first = Restarting(opt, period=4)
        for _ in range(9):
            first.step()
        second = Restarting(_two_groups(lib), period=7)
        second.load_state_dict(save(first.state_dict()))
        out = []
        for _ in range(10):
            second.step()
            out.append(second.get_last_lr())
        return out, second.restarts, second.period

    ours, theirs = _resumed_both(run, torch, tmp_path)
    assert ours[1:] == theirs[1:]
    np.testing.assert_allclose(np.array(ours[0]), np.array(theirs[0]), rtol=1e-13, atol=0)


class _Decay:
    """A callable lr_lambda with state of its own, as PyTorch's docs show."""

    def __init__(self, rate):
        self.rate = rate

    def __call__(self, epoch):
        return self.rate**epoch


@pytest.mark.parametrize("cls", ["LambdaLR", "MultiplicativeLR"])
def test_callable_lr_lambdas_state_as_torch(cls, tmp_path):
    """PyTorch saves a callable object's __dict__ for each lr_lambda (None for a function)
    and puts it back into the lambda the loading scheduler holds."""
    torch = pytest.importorskip("torch")

    def run(lib, lib_sched, save):
        opt = _two_groups(lib)
        first = getattr(lib_sched, cls)(opt, [_Decay(0.5), lambda e: 0.9])
        for _ in range(3):
            first.step()
        state = save(first.state_dict())
        second = getattr(lib_sched, cls)(_two_groups(lib), [_Decay(0.8), lambda e: 0.7])
        second.load_state_dict(state)
        second.step()
        return (second.lr_lambdas[0].rate, [s is None for s in state["lr_lambdas"]],
                second.get_last_lr())

    ours, theirs = _resumed_both(run, torch, tmp_path)
    assert ours[:2] == theirs[:2] == (0.5, [False, True])
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-13)
