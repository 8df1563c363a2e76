"""PyTorch's ``torch.nn.utils.fusion``: fold an eval-mode BatchNorm into the convolution or
linear layer before it.

With s = bn.weight / sqrt(running_var + eps), the fused layer has weight
``w * s`` (per output channel) and bias ``(b - running_mean) * s + bn.bias``, so
``fused(x) == bn(layer(x))`` in eval mode.
"""

from __future__ import annotations

import copy

from fastnn.nn.module import Module
from fastnn.nn.parameter import Parameter
from fastnn.ops.tensor import Tensor


def _eval_only(layer: Module, bn: Module) -> None:
    if layer.training or bn.training:
        raise AssertionError("Fusion only for eval! Call .eval() on both modules first")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("fusion needs a BatchNorm with running statistics "
                             "(track_running_stats=True)")


def _parameter(value: Tensor, like: Tensor | None, kind: str) -> Parameter:
    out = Parameter(value.detach(), getattr(like, "param_class", kind))
    out.requires_grad_(True if like is None else like.requires_grad)
    return out


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """(fused weight, fused bias) as Parameters, from a convolution's weight and bias (None:
    zeros) and a BatchNorm's statistics and affine parameters (None: 1 and 0).
    ``transpose``: the weight of a transposed convolution (output channels on dim 1)."""
    bias = conv_b if conv_b is not None else bn_rm.new_zeros(bn_rm.shape)
    scale_w = bn_w if bn_w is not None else bn_rm.new_ones(bn_rm.shape)
    shift = bn_b if bn_b is not None else bn_rm.new_zeros(bn_rm.shape)
    inv_std = (bn_rv + bn_eps).rsqrt()
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.ndim - 2)
    fused_w = (conv_w * (scale_w * inv_std).reshape(shape)).to(conv_w.dtype)
    fused_b = ((bias - bn_rm) * inv_std * scale_w + shift).to(
        conv_b.dtype if conv_b is not None else conv_w.dtype)
    return _parameter(fused_w, conv_w, "connective"), _parameter(fused_b, conv_b, "bias")


def fuse_conv_bn_eval(conv: Module, bn: Module, transpose: bool = False) -> Module:
    """A copy of ``conv`` (eval mode) that computes ``bn(conv(x))`` (bn in eval mode)."""
    _eval_only(conv, bn)
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean,
                                                    bn.running_var, bn.eps, bn.weight, bn.bias,
                                                    transpose)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """(fused weight, fused bias) as Parameters for a Linear followed by a BatchNorm1d."""
    bias = linear_b if linear_b is not None else bn_rm.new_zeros(bn_rm.shape)
    scale = bn_w * (bn_rv + bn_eps).rsqrt()
    fused_w = linear_w * scale.unsqueeze(-1).to(linear_w.dtype)
    fused_b = ((bias - bn_rm) * scale + bn_b).to(
        linear_b.dtype if linear_b is not None else linear_w.dtype)
    return _parameter(fused_w, linear_w, "connective"), _parameter(fused_b, linear_b, "bias")


def fuse_linear_bn_eval(linear: Module, bn: Module) -> Module:
    """A copy of ``linear`` (eval mode) that computes ``bn(linear(x))`` (bn in eval mode;
    its features equal to the linear's outputs, or 1)."""
    _eval_only(linear, bn)
    if not (linear.out_features == bn.num_features or bn.num_features == 1):
        raise AssertionError("To fuse, linear.out_features == bn.num_features or "
                             "bn.num_features == 1")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias,
                                                      bn.running_mean, bn.running_var, bn.eps,
                                                      bn.weight, bn.bias)
    return fused
