"""Functional ops on tensors (``import fastnn.functional as F``), as in PyTorch's."""

from fastnn.ops.elementwise import (
    abs,
    add,
    div,
    erf,
    exp,
    log,
    maximum,
    minimum,
    mul,
    neg,
    pow,
    sqrt,
    sub,
)
from fastnn.ops.elementwise import where as where
from fastnn.ops.losses import (
    binary_cross_entropy_with_logits,
    cross_entropy,
    huber_loss,
    mse_loss,
)
from fastnn.ops.movement import argmax, broadcast_to, max, mean, one_hot, reshape, sum, transpose
from fastnn.ops.nnops import (
    activation,
    bias_act,
    conv1d,
    gelu,
    leaky_relu,
    linear,
    log_softmax,
    matmul,
    relu,
    rms_div,
    sigmoid,
    silu,
    softmax,
    softplus,
    tanh,
)

__all__ = [
    "abs", "activation", "add", "argmax", "bias_act", "binary_cross_entropy_with_logits",
    "broadcast_to", "conv1d", "cross_entropy", "div", "erf", "exp", "gelu", "huber_loss",
    "leaky_relu", "linear", "log", "log_softmax", "matmul", "max", "maximum", "mean", "minimum",
    "mse_loss", "mul", "neg", "one_hot", "pow", "relu", "reshape", "rms_div", "sigmoid", "silu",
    "softmax", "softplus", "sqrt", "sub", "sum", "tanh", "transpose", "where",
]
