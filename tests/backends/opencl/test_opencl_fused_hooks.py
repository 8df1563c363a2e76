"""The OpenCL backend's fused hooks (softmax family, bias + activation, cross-entropy,
optimizer steps) against the NumPy backend on the same random inputs."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn.api.hookspec import BIAS_ACT_KINDS
from tests.backends.opencl.hook_check import DTYPES, TOL, check, cpu, up


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_fused_softmax_family(ocl, rng, dtype):
    x = (rng.standard_normal((4, 6, 5)) * 5).astype(dtype)
    for axis in (0, 1, 2):
        check(ocl, ocl.softmax(up(ocl, x, True), axis), cpu.softmax(x, axis), dtype)
        check(ocl, ocl.log_softmax(up(ocl, x), axis), cpu.log_softmax(x, axis), dtype)
    logits = x[:, :, 0].copy()
    for tdtype in ("int64", "int32"):
        targets = rng.integers(0, 6, 4).astype(tdtype)
        loss, probs = ocl.softmax_cross_entropy(up(ocl, logits), up(ocl, targets))
        want_loss, want_probs = cpu.softmax_cross_entropy(logits, targets)
        check(ocl, loss, want_loss, dtype)
        check(ocl, probs, want_probs, dtype)
    # a bad target gives NaN, never an out-of-bounds read
    bad = ocl.softmax_cross_entropy(up(ocl, logits), up(ocl, np.array([0, 9, -1, 2])))[0]
    assert np.isnan(ocl.to_numpy(bad)[1:3]).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", BIAS_ACT_KINDS)
def test_bias_act_and_rms_div(ocl, rng, dtype, kind):
    x = rng.standard_normal((2, 3, 7)).astype(dtype)
    bias = rng.standard_normal(7).astype(dtype)
    check(ocl, ocl.bias_act(up(ocl, x), up(ocl, bias), kind, 0.05),
          cpu.bias_act(x, bias, kind, 0.05), dtype)
    out, r = ocl.rms_div(up(ocl, x, True), 1e-6)
    want_out, want_r = cpu.rms_div(x, 1e-6)
    check(ocl, out, want_out, dtype)
    check(ocl, r, want_r, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", BIAS_ACT_KINDS)
@pytest.mark.parametrize("design", ["column", "wide"])
def test_bias_act_backward_both_designs(ocl, rng, monkeypatch, dtype, kind, design):
    if design == "wide":  # wide arrays: a 2-d kernel, then a reduction for the bias
        from fastnn_opencl import fused

        monkeypatch.setattr(fused, "COLUMN_FEATURES_MAX", 0)
    x = rng.standard_normal((2, 9, 7)).astype(dtype)
    bias = rng.standard_normal(7).astype(dtype)
    grad = rng.standard_normal((2, 9, 7)).astype(dtype)
    out = cpu.bias_act(x, bias, kind, 0.05)
    dz, db = ocl.bias_act_backward(up(ocl, x, True), up(ocl, bias), up(ocl, out), up(ocl, grad),
                                   kind, 0.05)
    want_dz, want_db = fnn.Device("cpu").ops.bias_act_backward(x, bias, out, grad, kind, 0.05)
    check(ocl, dz, want_dz, dtype)
    check(ocl, db, want_db, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_entropy_backward_reads_a_broadcast_grad(ocl, rng, dtype):
    probs = rng.uniform(size=(6, 5)).astype(dtype)
    targets = rng.integers(0, 5, 6)
    scalar = ocl.from_numpy(np.array(0.3, dtype), 0)
    grad = ocl.broadcast_to(scalar, (6,))
    got = ocl.softmax_cross_entropy_backward(up(ocl, probs), ocl.from_numpy(targets, 0), grad)
    check(ocl, got, cpu.softmax_cross_entropy_backward(probs, targets, np.full(6, 0.3, dtype)),
          dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("path", ["fused", "composite"])
def test_cross_entropy_with_a_bad_target_gives_nan_loss_and_nan_gradient_rows(ocl, rng, dtype,
                                                                              path):
    """A target outside [0, C) (unchecked on a device) must stop the optimizer: its loss
    and its row of dL/dlogits are NaN (the gradient was finite and plausible before)."""
    from fastnn.api import composite

    logits = rng.standard_normal((5, 4)).astype(dtype)
    targets = np.array([0, 4, 2, -1, 3])
    grad = rng.uniform(size=5).astype(dtype)
    dev = fnn.Device("opencl").ops
    hooks = dev if path == "fused" else type("Composite", (), {
        "softmax_cross_entropy": staticmethod(
            lambda lg, t: composite.softmax_cross_entropy(dev, lg, t)),
        "softmax_cross_entropy_backward": staticmethod(
            lambda p, t, g: composite.softmax_cross_entropy_backward(dev, p, t, g))})
    loss, probs = hooks.softmax_cross_entropy(up(ocl, logits), ocl.from_numpy(targets, 0))
    dlogits = ocl.to_numpy(hooks.softmax_cross_entropy_backward(
        probs, ocl.from_numpy(targets, 0), ocl.from_numpy(grad, 0)))
    loss = ocl.to_numpy(loss)
    good = np.array([0, 2, 4])
    want_loss, want_probs = cpu.softmax_cross_entropy(logits[good], targets[good])
    want = cpu.softmax_cross_entropy_backward(want_probs, targets[good], grad[good])
    assert np.isnan(loss[[1, 3]]).all() and np.isnan(dlogits[[1, 3]]).all()
    np.testing.assert_allclose(loss[good], want_loss, **TOL[dtype])
    np.testing.assert_allclose(dlogits[good], want, **TOL[dtype])


def test_cross_entropy_with_a_bad_target_stops_training(ocl):
    """Through the public API: the loss is NaN and so is every weight after a step."""
    import fastnn.functional as F
    from fastnn import nn, optim

    with fnn.use("opencl"):
        model = nn.Linear(3, 4)
        opt = optim.SGD(model.parameters(), lr=0.1)
        x = fnn.tensor(np.ones((2, 3), np.float32))
        loss = F.cross_entropy(model(x), fnn.tensor(np.array([1, 7])))
        loss.backward()
        opt.step()
        assert np.isnan(loss.item())
        assert np.isnan(model.weight.grad.numpy()).any()
        assert np.isnan(model.weight.numpy()).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_optimizer_steps_match_numpy_over_three_steps(ocl, rng, dtype):
    shapes = [(5, 3), (3,)]
    params = [rng.standard_normal(s).astype(dtype) for s in shapes]
    grads = [[rng.standard_normal(s).astype(dtype) for s in shapes] for _ in range(3)]
    kw = dict(lrs=[0.1, 0.05], weight_decays=[0.01, 0.0])

    def run(backend, move, back):
        sgd_p, sgd_b = [move(p) for p in params], [None, None]
        adam_p = [move(p) for p in params]
        m = [backend.full(s, 0.0, dtype, 0) for s in shapes]
        v = [backend.full(s, 0.0, dtype, 0) for s in shapes]
        rms_p = [move(p) for p in params]
        sq = [backend.full(s, 0.0, dtype, 0) for s in shapes]
        for step, gs in enumerate(grads, 1):
            gs = [move(g) for g in gs]
            sgd_p, sgd_b = backend.sgd_step(sgd_p, gs, sgd_b, momentum=0.9, dampening=0.1,
                                            nesterov=True, first_step=step == 1, **kw)
            adam_p, m, v = backend.adam_step(adam_p, gs, m, v, beta1=0.9, beta2=0.99, eps=1e-8,
                                             step=step, decoupled=step % 2 == 0, **kw)
            rms_p, sq = backend.rmsprop_step(rms_p, gs, sq, alpha=0.9, eps=1e-8, **kw)
        return [back(a) for a in sgd_p + sgd_b + adam_p + m + v + rms_p + sq]

    want = run(cpu, lambda a: a.copy(), lambda a: a)
    got = run(ocl, lambda a: ocl.from_numpy(a, 0), ocl.to_numpy)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5 if dtype == "float32" else 1e-12, atol=1e-6)
