"""The PyTorch training-loop lines that broke on fastnn, each on its own: in-place
activations in a training step, a clone read after its source is written in place,
``x.to(device, non_blocking=True)`` / ``x.to(other)`` / ``copy=True``, an fnn.Generator for
``random_split`` and the samplers, ``torch.cuda.manual_seed_all`` and friends without a
GPU, and ``torch.load(map_location=..., weights_only=True)``."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn
from fastnn.data import DataLoader, TensorDataset, random_split

IN_PLACE = {
    "relu": lambda F, y: F.relu(y, inplace=True),
    "leaky_relu": lambda F, y: F.leaky_relu(y, 0.1, inplace=True),
    "elu": lambda F, y: F.elu(y, inplace=True),
    "selu": lambda F, y: F.selu(y, inplace=True),
    "celu": lambda F, y: F.celu(y, inplace=True),
    "hardtanh": lambda F, y: F.hardtanh(y, inplace=True),
    "relu6": lambda F, y: F.relu6(y, inplace=True),
    "silu": lambda F, y: F.silu(y, inplace=True),
    "mish": lambda F, y: F.mish(y, inplace=True),
    "hardswish": lambda F, y: F.hardswish(y, inplace=True),
    "hardsigmoid": lambda F, y: F.hardsigmoid(y, inplace=True),
    "threshold": lambda F, y: F.threshold(y, 0.1, 0.0, inplace=True),
}
POINTS = np.linspace(-2.3, 2.7, 11)  # 1.5 x avoids every kink (0, +-1, +-3, 6)


def _gradient(lib, functional, op):
    x = lib.tensor(POINTS, requires_grad=True)
    y = x * 1.5
    out = op(functional, y)
    assert out is y  # written into y
    (out * lib.tensor(np.arange(11.0))).sum().backward()
    return y.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_in_place_activations_backpropagate(name):
    values, grad = _gradient(fnn, F, IN_PLACE[name])
    want = getattr(F, name)(fnn.tensor(POINTS * 1.5), *((0.1, 0.0) if name == "threshold"
                                                         else (0.1,) if name == "leaky_relu"
                                                         else ())).numpy()
    np.testing.assert_allclose(values, want)
    # the out-of-place op's gradient, by central differences of the weighted sum
    eps = 1e-6
    weights = np.arange(11.0)
    plain = {"leaky_relu": (0.1,), "threshold": (0.1, 0.0)}.get(name, ())
    f = getattr(F, name)
    plus = f(fnn.tensor(POINTS * 1.5 + eps), *plain).numpy()
    minus = f(fnn.tensor(POINTS * 1.5 - eps), *plain).numpy()
    np.testing.assert_allclose(grad, weights * (plus - minus) / (2 * eps) * 1.5, atol=1e-5)
    torch = pytest.importorskip("torch")
    t_values, t_grad = _gradient(torch, torch.nn.functional, IN_PLACE[name])
    np.testing.assert_allclose(values, t_values, rtol=1e-12)
    np.testing.assert_allclose(grad, t_grad, rtol=1e-7, atol=1e-12)  # (torch: 1/6 in float32)


MODULES_IN_PLACE = {  # the nn classes that take inplace=, with PyTorch's arguments
    "ReLU": (), "LeakyReLU": (0.1,), "ELU": (0.7,), "SELU": (), "CELU": (0.5,),
    "Hardtanh": (-1.5, 2.0), "ReLU6": (), "SiLU": (), "Mish": (), "Hardswish": (),
    "Hardsigmoid": (), "Threshold": (0.1, -0.5),
}


def _module_step(lib, nn_mod, name):
    x = lib.tensor(POINTS, requires_grad=True)
    y = x * 1.5
    layer = getattr(nn_mod, name)(*MODULES_IN_PLACE[name], inplace=True)
    out = layer(y)
    (out * lib.tensor(np.arange(11.0))).sum().backward()
    return out is y, y.detach().numpy(), x.grad.numpy(), repr(layer)


@pytest.mark.parametrize("name", sorted(MODULES_IN_PLACE))
def test_activation_modules_write_in_place_as_pytorchs(name):
    # nn.ReLU(inplace=True) used to compute out of place: code that kept the input saw
    # other values than under PyTorch
    same, values, grad, text = _module_step(fnn, nn, name)
    assert same
    plain = getattr(nn, name)(*MODULES_IN_PLACE[name])(fnn.tensor(POINTS * 1.5)).numpy()
    np.testing.assert_allclose(values, plain)  # the out-of-place layer's values
    assert ("inplace=True" in text) == (name not in ("Hardsigmoid", "Hardswish"))  # as torch
    torch = pytest.importorskip("torch")
    t_same, t_values, t_grad, t_text = _module_step(torch, torch.nn, name)
    assert t_same
    np.testing.assert_allclose(values, t_values, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(grad, t_grad, rtol=1e-7, atol=1e-12)
    assert text == t_text


def test_a_clone_keeps_its_backward_when_its_source_is_written():
    x = fnn.tensor([1.0, -2.0, 3.0], requires_grad=True)
    h = x * 2.0
    kept = h.clone()
    h.relu_()  # h is written; the clone's backward must not need h's old values
    (kept * 3.0 + h).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2 * 3 + 2, 2 * 3, 2 * 3 + 2])
    assert kept.grad_fn.name() == "CloneBackward0"


def test_to_takes_pytorchs_arguments():
    x = fnn.tensor([1.0, 2.0])
    assert x.to("cpu", non_blocking=True) is x
    assert x.to("cpu", True) is x  # positional non_blocking
    copied = x.to("cpu", copy=True)
    assert copied is not x
    copied.add_(1)
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])
    other = fnn.zeros(1, dtype=fnn.float64)
    assert x.to(other).dtype is fnn.float64


def test_an_fnn_generator_drives_random_split_and_the_samplers():
    data = TensorDataset(fnn.arange(20.0))
    a, _ = random_split(data, [0.5, 0.5], generator=fnn.Generator().manual_seed(3))
    b, _ = random_split(data, [0.5, 0.5], generator=fnn.Generator().manual_seed(3))
    assert list(a.indices) == list(b.indices) and sorted(a.indices) != list(range(10))
    first = [int(v) for (batch,) in DataLoader(data, batch_size=20, shuffle=True,
                                               generator=fnn.Generator().manual_seed(5))
             for v in batch]
    again = [int(v) for (batch,) in DataLoader(data, batch_size=20, shuffle=True,
                                               generator=fnn.Generator().manual_seed(5))
             for v in batch]
    assert first == again and sorted(first) == list(range(20))


def test_cuda_helpers_without_a_gpu_behave_as_pytorchs():
    if fnn.cuda.is_available():
        pytest.skip("a CUDA device is usable here")
    fnn.manual_seed(0)
    before = fnn.rand(3).numpy()
    fnn.manual_seed(0)
    fnn.cuda.manual_seed_all(123)  # silently nothing where no CUDA device is usable
    fnn.cuda.manual_seed(123)
    np.testing.assert_array_equal(fnn.rand(3).numpy(), before)
    fnn.cuda.empty_cache()
    assert fnn.cuda.is_bf16_supported() is False
    for call in (fnn.cuda.synchronize, fnn.cuda.current_device, fnn.cuda.get_device_name):
        with pytest.raises(RuntimeError, match="no usable CUDA device"):
            call()


def test_load_takes_pytorchs_keywords(tmp_path):
    path = tmp_path / "ckpt.fnn"
    fnn.save({"w": fnn.tensor([1.0, 2.0]), "epoch": 3}, path)
    loaded = fnn.load(path, map_location="cpu", weights_only=True)
    np.testing.assert_array_equal(loaded["w"], [1.0, 2.0])
    assert loaded["epoch"] == 3
