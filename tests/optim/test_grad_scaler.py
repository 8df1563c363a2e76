"""fnn.amp.GradScaler: loss scaling as PyTorch's (scale, unscale_, skipped steps, backoff
and growth of the scale, state_dict), checked against training without it and against
torch.amp.GradScaler("cpu") where PyTorch is installed."""

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn, optim

try:
    import torch
except ImportError:
    torch = None

X = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
Y = np.random.default_rng(1).integers(0, 3, 8)
POISONED = {2, 3}  # steps whose gradients hold an inf (the scaler must skip them)


def _train(lib, functional, scaler, steps=7, poison=False):
    lib.manual_seed(0)
    model = lib.nn.Linear(4, 3)
    model.weight.data = lib.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    model.bias.data = lib.tensor(np.float32([0.1, -0.2, 0.3]))
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scales = []
    for step in range(steps):
        opt.zero_grad()
        loss = functional.cross_entropy(model(lib.tensor(X)), lib.tensor(Y))
        (scaler.scale(loss) if scaler else loss).backward()
        if poison and step in POISONED:
            model.bias.grad[0] = float("inf")
        if scaler:
            scaler.step(opt)
            scaler.update()
            scales.append(scaler.get_scale())
        else:
            opt.step()
    return model.weight.detach().numpy(), scales


def test_a_power_of_two_scale_trains_to_the_same_weights():
    plain, _ = _train(fnn, F, None)
    scaled, scales = _train(fnn, F, fnn.amp.GradScaler("cpu", init_scale=2.0 ** 12))
    np.testing.assert_array_equal(scaled, plain)
    assert scales == [2.0 ** 12] * 7


def test_inf_gradients_skip_the_step_and_back_the_scale_off():
    scaler = fnn.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=2)
    weights, scales = _train(fnn, F, scaler, poison=True)
    assert scales == [1024.0, 2048.0, 1024.0, 512.0, 512.0, 1024.0, 1024.0]
    assert np.isfinite(weights).all()
    if torch is not None:
        theirs, their_scales = _train(torch, torch.nn.functional,
                                      torch.amp.GradScaler("cpu", init_scale=1024.0,
                                                           growth_interval=2), poison=True)
        assert their_scales == scales
        np.testing.assert_allclose(weights, theirs, rtol=1e-5, atol=1e-6)


def test_unscale_then_clip_then_step_and_the_misuse_errors():
    model = nn.Linear(2, 1)
    opt = optim.SGD(model.parameters(), lr=0.1)
    scaler = fnn.amp.GradScaler("cpu", init_scale=8.0)
    scaler.scale(model(fnn.ones(1, 2)).sum()).backward()
    np.testing.assert_allclose(model.bias.grad.numpy(), [8.0])
    scaler.unscale_(opt)
    np.testing.assert_allclose(model.bias.grad.numpy(), [1.0])
    with pytest.raises(RuntimeError, match="already called on this optimizer"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step: already called"):
        scaler.step(opt)
    scaler.update()
    state = scaler.state_dict()
    assert state["scale"] == 8.0 and state["_growth_tracker"] == 1
    other = fnn.amp.GradScaler("cpu")
    other.load_state_dict(state)
    assert other.get_scale() == 8.0


def test_a_disabled_scaler_passes_everything_through():
    plain, _ = _train(fnn, F, None)
    off, scales = _train(fnn, F, fnn.amp.GradScaler(enabled=False))
    np.testing.assert_array_equal(off, plain)
    assert scales == [1.0] * 7 and fnn.amp.GradScaler(enabled=False).state_dict() == {}


@pytest.mark.skipif(fnn.cuda.is_available(), reason="needs a machine without CUDA")
def test_a_cuda_scaler_without_cuda_disables_itself_as_pytorchs():
    # nanoGPT's train.py makes torch.cuda.amp.GradScaler(enabled=dtype == "float16"); on a
    # machine without CUDA PyTorch warns and disables it, so the loss is not multiplied
    for make in (fnn.cuda.amp.GradScaler, fnn.amp.GradScaler):
        with pytest.warns(UserWarning, match="CUDA is not available"):
            scaler = make(enabled=True)
        assert not scaler.is_enabled() and scaler.get_scale() == 1.0
        loss = fnn.tensor(2.5)
        assert scaler.scale(loss) is loss
    plain, _ = _train(fnn, F, None)
    with pytest.warns(UserWarning):
        off, scales = _train(fnn, F, fnn.cuda.amp.GradScaler())
    np.testing.assert_array_equal(off, plain)
    assert scales == [1.0] * 7
    if torch is not None and not torch.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA is not available"):
            assert not torch.amp.GradScaler("cuda").is_enabled()
