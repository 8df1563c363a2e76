"""The GELU backward and layer-norm hooks on cupy arrays: the core's composites over this
backend's own hooks (each a cupy elementwise or reduction call), so their arithmetic is
the composite's. No fused kernel yet: they are optional hooks (the cpu backend fuses them
for speed); this module only gives them a name here, as every hook has."""

from __future__ import annotations

from fastnn.api import composite, composite_norm
from fastnn.api.hookspec import hookimpl
from fastnn_cuda.fused import _own_hooks


@hookimpl
def gelu_backward(x, out, grad):
    return composite.gelu_backward(_own_hooks(), x, out, grad)


@hookimpl
def layer_norm_train(x, weight, bias, eps):
    return composite_norm.layer_norm_train(_own_hooks(), x, weight, bias, eps)


@hookimpl
def layer_norm_backward(x, weight, mean, rstd, grad):
    return composite_norm.layer_norm_backward(_own_hooks(), x, weight, mean, rstd, grad)
