"""Learning-rate schedules against their formulas, and clip_grad_norm against NumPy."""

import math

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn, optim
from fastnn.optim import lr_scheduler as sched


def _opt(lr=0.5):
    p = nn.Parameter.from_numpy(np.zeros(3), "connective")
    return optim.SGD([{"params": [p]}, {"params": [nn.Parameter.from_numpy(np.zeros(2))],
                                        "lr": 2 * lr}], lr=lr)


def _lrs(scheduler, steps):
    out = [scheduler.optimizer.param_groups[0]["lr"]]
    for _ in range(steps):
        scheduler.step()
        out.append(scheduler.optimizer.param_groups[0]["lr"])
    return np.array(out)


def test_warmup_ramps_linearly_then_holds():
    lrs = _lrs(sched.LinearWarmup(_opt(), warmup_steps=4), 6)
    np.testing.assert_allclose(lrs, 0.5 * np.array([1, 2, 3, 4, 4, 4, 4]) / 4)


def test_cosine_follows_the_formula_and_holds_at_the_floor():
    s = sched.CosineAnnealing(_opt(), total_steps=10, min_factor=0.1)
    lrs = _lrs(s, 12)
    t = np.arange(13)
    expected = 0.1 + 0.9 * 0.5 * (1 + np.cos(np.pi * np.minimum(t, 10) / 10))
    np.testing.assert_allclose(lrs, 0.5 * expected)
    assert s.get_last_lr()[1] == pytest.approx(1.0 * expected[-1])  # second group, base lr 1.0


def test_linear_decay_and_warmup_variants():
    np.testing.assert_allclose(_lrs(sched.LinearDecay(_opt(), 4, end_factor=0.2), 5),
                               0.5 * np.array([1, 0.8, 0.6, 0.4, 0.2, 0.2]))
    lrs = _lrs(sched.WarmupCosine(_opt(), warmup_steps=2, total_steps=6), 7)
    np.testing.assert_allclose(lrs[:2], [0.25, 0.5])
    np.testing.assert_allclose(lrs[2:], 0.5 * np.array(
        [0.5 * (1 + math.cos(math.pi * k / 4)) for k in range(4)] + [0.0, 0.0]))
    lrs = _lrs(sched.WarmupLinear(_opt(), warmup_steps=1, total_steps=5), 5)
    np.testing.assert_allclose(lrs, 0.5 * np.array([1, 1, 0.75, 0.5, 0.25, 0.0]))
    np.testing.assert_allclose(_lrs(sched.LambdaLR(_opt(), lambda t: 0.9**t), 3),
                               0.5 * 0.9 ** np.arange(4))


def test_scheduler_state_dict_resumes():
    a = sched.WarmupCosine(_opt(), 3, 20)
    _lrs(a, 7)
    b = sched.WarmupCosine(_opt(), 3, 20)
    b.load_state_dict(a.state_dict())
    np.testing.assert_allclose(_lrs(b, 5), _lrs(a, 5))


def test_clip_grad_norm_matches_numpy():
    rng = np.random.default_rng(0)
    params = [nn.Parameter.from_numpy(rng.standard_normal(s), dtype=fnn.float64)
              for s in [(4, 3), (5,)]]
    grads = [rng.standard_normal(p.shape) * 3 for p in params]
    for p, g in zip(params, grads):
        p.grad = fnn.tensor(g)
    total = np.sqrt(sum((g**2).sum() for g in grads))
    assert float(optim.clip_grad_norm(params, 1.5)) == pytest.approx(total, rel=1e-12)
    for p, g in zip(params, grads):
        np.testing.assert_allclose(p.grad.numpy(), g * 1.5 / (total + 1e-6), rtol=1e-12)
    clipped = np.sqrt(sum((p.grad.numpy() ** 2).sum() for p in params))
    assert clipped == pytest.approx(1.5, rel=1e-6)
    before = [p.grad.numpy().copy() for p in params]
    optim.clip_grad_norm(params, 10.0)  # under the limit: unchanged
    for p, g in zip(params, before):
        np.testing.assert_array_equal(p.grad.numpy(), g)


def test_clip_grad_norm_non_finite_totals_as_pytorch():
    """A NaN total norm makes every gradient NaN (it was passed on unclipped); an infinite one
    scales finite gradients to 0. PyTorch's clip_grad_norm_ does the same by default."""
    params = [nn.Parameter.from_numpy(np.ones(s), dtype=fnn.float64) for s in [(3,), (2, 2)]]
    params[0].grad = fnn.tensor(np.array([1.0, np.nan, 2.0]))
    params[1].grad = fnn.tensor(np.full((2, 2), 3.0))
    assert np.isnan(float(optim.clip_grad_norm(params, 1.0)))
    assert all(np.isnan(p.grad.numpy()).all() for p in params)
    params[0].grad = fnn.tensor(np.array([1.0, np.inf, 2.0]))
    params[1].grad = fnn.tensor(np.full((2, 2), 3.0))
    assert float(optim.clip_grad_norm(params, 1.0)) == np.inf
    np.testing.assert_array_equal(params[1].grad.numpy(), np.zeros((2, 2)))
    torch = pytest.importorskip("torch")
    t = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
    t.grad = torch.tensor([1.0, float("nan"), 2.0], dtype=torch.float64)
    torch.nn.utils.clip_grad_norm_([t], 1.0)
    assert torch.isnan(t.grad).all()


# torch 2.13's totals for the gradients [3, 0, -4] and [1, -1]: as its docs say, the
# p-norm of all values for p > 0 and inf; for 0, p < 0 and -inf the p-norm of the norms
P_NORMS = [(1, 9.0), (3, 4.530655), (0.5, 32.856407), (2, 5.196152), (math.inf, 4.0),
           (0, 2.0), (-1, 0.0), (-math.inf, 0.0)]


@pytest.mark.parametrize("norm_type,want", P_NORMS)
def test_clip_grad_norm_of_any_p_as_pytorch(norm_type, want):
    # issue 25: norm_type=1 was refused (only 2 and inf were taken)
    grads = [[3.0, 0.0, -4.0], [1.0, -1.0]]
    params = [fnn.zeros((len(g),), requires_grad=True) for g in grads]
    for p, g in zip(params, grads):
        p.grad = fnn.tensor(g)
    total = nn.utils.clip_grad_norm_(params, 1.0, norm_type=norm_type)
    assert isinstance(total, fnn.Tensor) and total.ndim == 0  # a tensor, as torch's
    assert float(total) == pytest.approx(want, rel=1e-5)
    coef = min(1.0, 1.0 / (want + 1e-6))
    np.testing.assert_allclose(params[0].grad.numpy(), np.array(grads[0]) * coef, rtol=1e-5)
    torch = pytest.importorskip("torch")
    ours = [torch.zeros(len(g), requires_grad=True) for g in grads]
    for p, g in zip(ours, grads):
        p.grad = torch.tensor(g)
    assert float(torch.nn.utils.clip_grad_norm_(ours, 1.0, norm_type)) == pytest.approx(
        want, rel=1e-5)


def test_clip_grad_norm_sums_per_device_and_mixed_dtypes():
    rng = np.random.default_rng(3)
    grads = [rng.standard_normal((3, 2)), rng.standard_normal(5)]
    params = [nn.Parameter.from_numpy(np.zeros(g.shape), dtype=dt)
              for g, dt in zip(grads, (fnn.float64, fnn.float32))]
    for p, g, dt in zip(params, grads, (fnn.float64, fnn.float32)):
        p.grad = fnn.tensor(g, dtype=dt)
    total = np.sqrt(sum((g.astype(np.float32 if i else np.float64) ** 2).sum()
                        for i, g in enumerate(grads)))
    assert float(optim.clip_grad_norm(params, 100.0)) == pytest.approx(total, rel=1e-6)


def test_clip_grad_norm_over_two_devices():
    if not any(b.name == "opencl" and b.available for b in fnn.backends()):
        pytest.skip("needs the opencl backend")
    rng = np.random.default_rng(4)
    grads = [rng.standard_normal((4,)), rng.standard_normal((2, 3))]
    params = [nn.Parameter.from_numpy(np.zeros(g.shape), dtype=fnn.float64).to(device)
              for g, device in zip(grads, ("cpu", "opencl"))]
    for p, g in zip(params, grads):
        p.grad = fnn.tensor(g, device=p.device)
    total = np.sqrt(sum((g**2).sum() for g in grads))
    assert float(optim.clip_grad_norm(params, 1.0)) == pytest.approx(total, rel=1e-12)
    for p, g in zip(params, grads):
        assert p.grad.device == p.device
        np.testing.assert_allclose(p.grad.numpy(), g / (total + 1e-6), rtol=1e-12)


def test_clip_grad_norm_of_float16_gradients_does_not_overflow_in_float16():
    # Each sum of squares fits float16 (45000 < 65504), their total does not: the norm
    # (300) must not come out infinite and zero every gradient.
    params = [nn.Parameter.from_numpy(np.zeros(2), dtype=fnn.float16) for _ in range(2)]
    for p in params:
        p.grad = fnn.full((2,), 150.0, dtype=fnn.float16)
    assert float(optim.clip_grad_norm(params, 1000.0)) == pytest.approx(300.0)
    for p in params:
        assert p.grad.dtype == fnn.float16
        np.testing.assert_array_equal(p.grad.numpy(), [150.0, 150.0])
    assert float(optim.clip_grad_norm(params, 30.0)) == pytest.approx(300.0)
    for p in params:
        np.testing.assert_allclose(p.grad.numpy().astype(np.float64), [15.0, 15.0], rtol=1e-3)


def _backend_names():
    return [b.name for b in fnn.backends() if b.name in ("cpu", "opencl") and b.available]


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
@pytest.mark.parametrize("device", _backend_names())
def test_clip_grad_norm_reads_nothing_back_and_matches_pytorch(device, norm_type):
    # one total_norm and one clip_grads_with_norm a device, no read of the norm (PyTorch's
    # keeps it on the device too); the result as torch's
    torch = pytest.importorskip("torch")
    from fastnn.api.device import as_device
    from fastnn.conformance.harness import recording

    rng = np.random.default_rng(5)
    grads = [np.asarray(rng.standard_normal(s) * 3, np.float32) for s in [(6, 5), (5,), (), (4, 7)]]
    params = [fnn.zeros(g.shape, device=device, requires_grad=True) for g in grads]
    for p, g in zip(params, grads):
        p.grad = fnn.tensor(g, device=device)
    params[3].grad = params[3].grad.T.contiguous().T  # a gradient of another layout
    with recording(as_device(device).ops, set()) as used:
        total = nn.utils.clip_grad_norm_(params, 1.0, norm_type)
    # (and, on a device backend, the write through the view of the transposed gradient)
    assert sorted(used - {"assign"}) == ["clip_grads_with_norm", "total_norm"], used
    theirs = [torch.zeros(g.shape, requires_grad=True) for g in grads]
    for t, g in zip(theirs, grads):
        t.grad = torch.from_numpy(g.copy())
    want = torch.nn.utils.clip_grad_norm_(theirs, 1.0, norm_type)
    assert total.device.type == device and total.dtype is fnn.float32
    np.testing.assert_allclose(float(total), float(want), rtol=1e-5)
    for p, t in zip(params, theirs):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("device", _backend_names())
def test_clip_grads_with_an_integer_total_divides_as_pytorch(device):
    # max_norm / (total + 1e-6) is a float division for an integer total too (a kernel
    # computing in the total's type would divide integers: 2 // 13 = 0)
    p = fnn.zeros(3, requires_grad=True, device=device)
    p.grad = fnn.tensor([3.0, 4.0, 12.0], device=device)
    nn.utils.clip_grads_with_norm_([p], 2.0, fnn.tensor(13, device=device))
    np.testing.assert_allclose(p.grad.numpy(), np.array([3.0, 4.0, 12.0]) * 2.0 / 13.000001,
                               rtol=1e-6)


@pytest.mark.parametrize("name", ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_",
                                  "clip_grads_with_norm_"])
def test_clip_functions_take_torchs_keywords(name):
    """Every keyword of PyTorch's clipping functions (``foreach=`` included) is taken."""
    torch = pytest.importorskip("torch")
    import inspect

    theirs = list(inspect.signature(getattr(torch.nn.utils, name)).parameters)
    ours = list(inspect.signature(getattr(nn.utils, name)).parameters)
    assert ours[1:] == theirs[1:]
    p = fnn.tensor([1.0, 2.0], requires_grad=True)
    p.grad = fnn.tensor([3.0, -3.0])
    nn.utils.clip_grad_value_([p], 1.0, foreach=True)
    assert p.grad.tolist() == [1.0, -1.0]
