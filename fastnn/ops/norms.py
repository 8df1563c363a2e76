"""PyTorch's normalisation functions ``layer_norm``, ``rms_norm``, ``group_norm`` and
``instance_norm``, composed from tensor ops (so their gradients come from the tape).

With the biased variance over the normalised axes:

- layer_norm: over the last len(normalized_shape) axes, y = (x - mean) / sqrt(var + eps),
  then * weight + bias (both of normalized_shape);
- rms_norm: over the same axes, y = x / sqrt(mean(x^2) + eps) * weight; eps=None is the
  machine epsilon of x's dtype, as PyTorch;
- group_norm: x (N, C, *) in G groups of C / G channels, each (sample, group) normalised
  over its channels and positions; weight and bias per channel;
- local_response_norm: x / (k + alpha * mean of x^2 over ``size`` neighbouring channels)^beta,
  the window (size // 2 before, (size - 1) // 2 after) zero-padded at the ends;
- instance_norm: each (sample, channel) normalised over its positions; with running
  statistics, they are updated by the mean over the batch of the per-instance mean and
  unbiased variance (PyTorch's rule), or used instead when ``use_input_stats`` is False.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from fastnn.api.args import integer, nonnegative, real
from fastnn.autograd.engine import attach
from fastnn.autograd.grad_mode import no_grad
from fastnn.ops.joining import pad
from fastnn.ops.movement import reshape
from fastnn.ops.selecting import slice_tensor
from fastnn.ops.storage import rebind
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor


def normalized_shape_of(op: str, shape) -> tuple:
    """An int or a sequence of ints (each >= 1) as a tuple: PyTorch's normalized_shape."""
    if isinstance(shape, numbers.Integral) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)) or not shape:
        raise ValueError(f"{op}: normalized_shape must be an int or a non-empty list of "
                         f"ints, got {shape!r}")
    return tuple(integer(op, "normalized_shape", n) for n in shape)


def _check_input(op: str, x, shape: tuple) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: input must be a Tensor, got {type(x).__name__}")
    if not x._dtype.is_floating:
        raise TypeError(f"{op}: expected a floating-point input, got {x._dtype.name}")
    if x.ndim < len(shape) or x.shape[x.ndim - len(shape):] != shape:
        raise ValueError(f"{op}: normalized_shape {list(shape)} must match the last "
                         f"dimensions of the input, got input of shape {x.shape}")


def _check_param(op: str, name: str, t, shape: tuple) -> None:
    if t is not None and (not isinstance(t, Tensor) or t.shape != shape):
        raise ValueError(f"{op}: {name} must be None or a Tensor of shape {shape}, got "
                         f"{getattr(t, 'shape', type(t).__name__)}")


def _affine(x: Tensor, weight, bias, shape=None) -> Tensor:
    if weight is not None:
        x = x * (weight if shape is None else reshape(weight, shape))
    if bias is not None:
        x = x + (bias if shape is None else reshape(bias, shape))
    return x


def _standardize(x: Tensor, axes: tuple, eps: float) -> Tensor:
    centered = x - x.mean(axis=axes, keepdims=True)
    var = (centered * centered).mean(axis=axes, keepdims=True)
    return centered * (var + eps) ** -0.5


@public()
def layer_norm(input: Tensor, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    """PyTorch's layer_norm over the last len(normalized_shape) axes (module docstring)."""
    shape = normalized_shape_of("layer_norm", normalized_shape)
    _check_input("layer_norm", input, shape)
    _check_param("layer_norm", "weight", weight, shape)
    _check_param("layer_norm", "bias", bias, shape)
    eps = nonnegative("layer_norm", "eps", eps)
    if len(shape) == 1 and _fusable(input, weight, bias):
        dev = input._device
        data, mean, rstd = dev.ops.layer_norm_train(input._data, weight._data, bias._data, eps)
        return attach(Tensor._make(data, input._dtype, dev), "layer_norm_train",
                      (input, weight, bias), (input._data, weight._data, mean, rstd), eps)
    axes = tuple(range(input.ndim - len(shape), input.ndim))
    return _affine(_standardize(input, axes, eps), weight, bias)


def _fusable(x, weight, bias) -> bool:
    """The layer_norm_train hook's case (over the last axis): affine, one dtype and device."""
    return (weight is not None and bias is not None and weight._dtype is x._dtype
            and bias._dtype is x._dtype and weight._device == x._device
            and bias._device == x._device)


def machine_eps(x: Tensor) -> float:
    """The spacing of 1.0 in x's dtype (PyTorch's ``torch.finfo(dtype).eps``)."""
    return float(np.finfo(x._dtype.numpy).eps)


@public()
def rms_norm(input: Tensor, normalized_shape, weight=None, eps=None) -> Tensor:
    """PyTorch's rms_norm: x / sqrt(mean(x^2 over the last len(normalized_shape) axes) + eps)
    * weight; eps=None is the machine epsilon of x's dtype."""
    shape = normalized_shape_of("rms_norm", normalized_shape)
    _check_input("rms_norm", input, shape)
    _check_param("rms_norm", "weight", weight, shape)
    eps = machine_eps(input) if eps is None else nonnegative("rms_norm", "eps", eps)
    axes = tuple(range(input.ndim - len(shape), input.ndim))
    out = input * ((input * input).mean(axis=axes, keepdims=True) + eps) ** -0.5
    return out if weight is None else out * weight


@public()
def group_norm(input: Tensor, num_groups: int, weight=None, bias=None, eps: float = 1e-5):
    """PyTorch's group_norm: x (N, C, *) normalised per sample over each group of
    C / num_groups channels and all positions; weight and bias (C,) per channel."""
    groups = integer("group_norm", "num_groups", num_groups)
    if not isinstance(input, Tensor) or input.ndim < 2:
        raise ValueError(f"group_norm: expected an (N, C, *) input Tensor, got "
                         f"{getattr(input, 'shape', type(input).__name__)}")
    if not input._dtype.is_floating:
        raise TypeError(f"group_norm: expected a floating-point input, got {input._dtype.name}")
    n, c = input.shape[:2]
    if c % groups:
        raise ValueError(f"group_norm: the {c} channels of input {input.shape} do not divide "
                         f"into num_groups={groups}")
    _check_param("group_norm", "weight", weight, (c,))
    _check_param("group_norm", "bias", bias, (c,))
    eps = nonnegative("group_norm", "eps", eps)
    rest = math.prod(input.shape[2:])
    grouped = reshape(input, (n, groups, (c // groups) * rest))
    out = reshape(_standardize(grouped, (2,), eps), input.shape)
    return _affine(out, weight, bias, (c,) + (1,) * (input.ndim - 2))


@public()
def instance_norm(input: Tensor, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats: bool = True, momentum: float = 0.1, eps: float = 1e-5):
    """PyTorch's instance_norm: each (sample, channel) of x (N, C, *) normalised over its
    positions (see the module docstring for the running statistics)."""
    if not isinstance(input, Tensor) or input.ndim < 3:
        raise ValueError(f"instance_norm: expected an (N, C, *spatial) input Tensor, got "
                         f"{getattr(input, 'shape', type(input).__name__)}")
    if not input._dtype.is_floating:
        raise TypeError(f"instance_norm: expected a floating-point input, got "
                        f"{input._dtype.name}")
    c = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        _check_param("instance_norm", name, t, (c,))
    eps = nonnegative("instance_norm", "eps", eps)
    channel = (c,) + (1,) * (input.ndim - 2)
    axes = tuple(range(2, input.ndim))
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ValueError("instance_norm: use_input_stats=False needs running_mean and "
                             "running_var")
        centered = input - reshape(running_mean.to(input.dtype), channel)
        out = centered * (reshape(running_var.to(input.dtype), channel) + eps) ** -0.5
        return _affine(out, weight, bias, channel)
    count = math.prod(input.shape[2:])
    if count <= 1:
        raise ValueError(f"instance_norm: expected more than 1 spatial element when "
                         f"training, got input of shape {input.shape}")
    mean = input.mean(axis=axes, keepdims=True)
    centered = input - mean
    var = (centered * centered).mean(axis=axes, keepdims=True)
    if running_mean is not None or running_var is not None:
        _update(running_mean, running_var, mean, var, count, momentum)
    return _affine(centered * (var + eps) ** -0.5, weight, bias, channel)


def _update(running_mean, running_var, mean, var, count, momentum) -> None:
    """Running statistics moved toward the batch's mean per-instance statistics, in place."""
    momentum = real("instance_norm", "momentum", momentum)
    with no_grad():
        for running, stat in ((running_mean, mean), (running_var, var * (count / (count - 1)))):
            if running is None:
                continue
            batch = reshape(stat.detach(), stat.shape[:2]).mean(axis=0).to(running.dtype)
            rebind(running, (running * (1.0 - momentum) + batch * momentum)._data)


@public()
def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """PyTorch's local_response_norm over the channels of (N, C, *): x / (k + alpha *
    mean(x^2 over a window of ``size`` channels))^beta."""
    size = integer("local_response_norm", "size", size)
    if not isinstance(input, Tensor) or input.ndim < 3:
        raise ValueError(f"local_response_norm: expected an input of 3 or more dims (N, C, "
                         f"*), got {getattr(input, 'shape', type(input).__name__)}")
    alpha = real("local_response_norm", "alpha", alpha)
    beta, k = real("local_response_norm", "beta", beta), real("local_response_norm", "k", k)
    channels = input.shape[1]
    square = input * input
    widths = [0, 0] * (input.ndim - 2) + [size // 2, (size - 1) // 2]
    padded = pad(square, tuple(widths))
    total = None
    for shift in range(size):
        starts = (0, shift) + (0,) * (input.ndim - 2)
        stops = (input.shape[0], shift + channels) + input.shape[2:]
        part = slice_tensor(padded, starts, stops, (1,) * input.ndim)
        total = part if total is None else total + part
    return input / (total * (alpha / size) + k) ** beta
