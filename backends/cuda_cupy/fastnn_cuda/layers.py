"""The pooling, batch-norm and recurrent-layer hooks on cupy arrays: the core's composites
(fastnn.api.composite_pool, composite_norm, composite_recurrent) over this backend's own
hooks, so every primitive they call is a cupy call or one of this backend's kernels.

NOTE: no native CUDA kernels yet; these run as many launches as the composites make (a
fused kernel per hook would take most of them out of a training step)."""

from __future__ import annotations

from fastnn.api import composite_norm, composite_pool, composite_recurrent
from fastnn.api.hookspec import hookimpl
from fastnn_cuda.fused import _own_hooks


@hookimpl
def max_pool2d(x, kernel, stride, padding, dilation, output_size):
    return composite_pool.max_pool2d(_own_hooks(), x, kernel, stride, padding, dilation,
                                     output_size)


@hookimpl
def max_pool2d_backward(x, out, grad, kernel, stride, padding, dilation):
    return composite_pool.max_pool2d_backward(_own_hooks(), x, out, grad, kernel, stride,
                                              padding, dilation)


@hookimpl
def batch_norm_train(x, weight, bias, eps):
    return composite_norm.batch_norm_train(_own_hooks(), x, weight, bias, eps)


@hookimpl
def batch_norm_backward(x, weight, mean, var, grad, eps):
    return composite_norm.batch_norm_backward(_own_hooks(), x, weight, mean, var, grad, eps)


@hookimpl
def lstm_layer(x, h0, c0, w_ih, w_hh, bias):
    return composite_recurrent.lstm_layer(_own_hooks(), x, h0, c0, w_ih, w_hh, bias)


@hookimpl
def lstm_layer_backward(x, h0, c0, w_ih, w_hh, out, gates, cells, grad_out, grad_c):
    return composite_recurrent.lstm_layer_backward(_own_hooks(), x, h0, c0, w_ih, w_hh, out,
                                                   gates, cells, grad_out, grad_c)


@hookimpl
def gru_layer(x, h0, w_ih, w_hh, b_ih, b_hh):
    return composite_recurrent.gru_layer(_own_hooks(), x, h0, w_ih, w_hh, b_ih, b_hh)


@hookimpl
def gru_layer_backward(x, h0, w_ih, w_hh, out, saved, grad_out):
    return composite_recurrent.gru_layer_backward(_own_hooks(), x, h0, w_ih, w_hh, out, saved,
                                                  grad_out)
