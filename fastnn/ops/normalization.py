"""Batch normalisation as PyTorch's ``F.batch_norm``, composed from tensor ops (training
with weight and bias: the ``batch_norm_train`` hook and its backward).

Over every axis but the channels (axis 1): xhat = (x - mean) / sqrt(var + eps) with the
biased variance, y = xhat * weight + bias. In training the batch's statistics are used
and the running ones updated in place (without gradient):
running_mean = (1 - momentum) * running_mean + momentum * mean,
running_var likewise with the unbiased variance (var * n / (n - 1)).
"""

from __future__ import annotations

from fastnn.api.args import real
from fastnn.autograd.engine import attach
from fastnn.autograd.grad_mode import no_grad
from fastnn.ops.movement import reshape
from fastnn.ops.storage import rebind
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor


def _check(x, running_mean, running_var, weight, bias):
    if not isinstance(x, Tensor) or x.ndim < 2:
        raise ValueError(f"batch_norm: expected an input (N, C, ...) Tensor, got "
                         f"{getattr(x, 'shape', type(x).__name__)}")
    if not x._dtype.is_floating:
        raise TypeError(f"batch_norm: expected a floating-point input, got {x._dtype.name}")
    channels = x.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and (not isinstance(t, Tensor) or t.shape != (channels,)):
            raise ValueError(f"batch_norm: {name} must be None or a Tensor of shape "
                             f"({channels},) for an input of shape {x.shape}, got "
                             f"{getattr(t, 'shape', type(t).__name__)}")


@public()
def batch_norm(x: Tensor, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5) -> Tensor:
    """PyTorch's batch_norm: x (N, C, ...) normalised per channel (see the module docstring).

    ``momentum=None`` updates the running statistics as a cumulative average, which
    needs the count: pass ``momentum`` as 1 / num_batches_tracked then (BatchNorm does).
    """
    _check(x, running_mean, running_var, weight, bias)
    eps = real("batch_norm", "eps", eps)
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    if training or running_mean is None:
        count = x.numel() // max(x.shape[1], 1)
        if training and count <= 1:
            raise ValueError(f"batch_norm: expected more than 1 value per channel when "
                             f"training, got input of shape {x.shape}")
        if training and _fusable(x, weight, bias):
            return _fused(x, running_mean, running_var, weight, bias, momentum, eps, count)
        mean = x.mean(axis=axes, keepdims=True)
        centered = x - mean
        var = (centered * centered).mean(axis=axes, keepdims=True)
        if training and running_mean is not None:
            _update(running_mean, running_var, mean, var, count, momentum)
    else:
        centered = x - reshape(running_mean.to(x.dtype), shape)
        var = reshape(running_var.to(x.dtype), shape)
    out = centered * (var + eps) ** -0.5
    if weight is not None:
        out = out * reshape(weight, shape)
    if bias is not None:
        out = out + reshape(bias, shape)
    return out


def _fusable(x, weight, bias) -> bool:
    """The batch_norm_train hook's case: affine, one dtype and device throughout."""
    return (weight is not None and bias is not None and weight._dtype is x._dtype
            and bias._dtype is x._dtype and weight._device == x._device
            and bias._device == x._device)


def _fused(x, running_mean, running_var, weight, bias, momentum, eps, count):
    """Training with the batch's statistics through the batch_norm_train hook and its
    backward hook (the composite in fastnn.api.composite_norm where a backend lacks them)."""
    dev = x._device
    data, mean, var = dev.ops.batch_norm_train(x._data, weight._data, bias._data, eps)
    out = attach(Tensor._make(data, x._dtype, dev), "batch_norm_train", (x, weight, bias),
                 (x._data, weight._data, mean, var), eps)
    if running_mean is not None:
        _update(running_mean, running_var, Tensor._make(mean, x._dtype, dev),
                Tensor._make(var, x._dtype, dev), count, momentum)
    return out


def _update(running_mean, running_var, mean, var, count, momentum):
    """The running statistics' update, in place and off the tape."""
    momentum = real("batch_norm", "momentum", momentum)
    with no_grad():
        channels = running_mean.shape
        mean = reshape(mean.detach(), channels).to(running_mean.dtype)
        var = reshape(var.detach(), channels).to(running_var.dtype) * (count / (count - 1))
        new_mean = running_mean * (1.0 - momentum) + mean * momentum
        new_var = running_var * (1.0 - momentum) + var * momentum
    rebind(running_mean, new_mean._data)
    rebind(running_var, new_var._data)
