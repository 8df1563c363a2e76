"""Layers as reversible modules (``fastnn.nn``).

Every layer runs forward on the tape (``layer(x)``) and also offers
``layer.reverse(x, grad_out) -> (grad_x, self_grads)`` and
``layer.apply(optimizer, self_grads)``; see :mod:`fastnn.nn.module`.
"""

from fastnn.nn.activation import Activation, Dropout, Softmax, Swish
from fastnn.nn.batchnorm import BatchNorm1d, BatchNorm2d
from fastnn.nn.container import Residual, Sequential
from fastnn.nn.conv import Conv1d
from fastnn.nn.conv2d import Conv2d
from fastnn.nn.flatten import Flatten, GlobalAvgPool1d
from fastnn.nn.linear import Bias1d, Dense, Diag, Linear, ScalarScale
from fastnn.nn.module import PARAM_CLASSES, Module, Parameter
from fastnn.nn.norm import LayerNorm, RMSDiv, RMSNorm
from fastnn.nn.pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AvgPool1d,
    AvgPool2d,
    MaxPool1d,
    MaxPool2d,
)

__all__ = [
    "Activation", "Bias1d", "Conv1d", "Dense", "Diag", "Dropout", "Flatten", "GlobalAvgPool1d",
    "LayerNorm", "Linear",
    "Module", "PARAM_CLASSES", "Parameter", "RMSDiv", "RMSNorm", "Residual", "ScalarScale",
    "Sequential", "Softmax", "Swish",
    # vision layers
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AvgPool1d", "AvgPool2d", "BatchNorm1d",
    "BatchNorm2d", "Conv2d", "MaxPool1d", "MaxPool2d",
]
