"""Reverse-mode automatic differentiation: the tape, its switches and the backward rules.

``grad`` and ``backward`` are PyTorch's ``autograd.grad`` and ``autograd.backward``;
``Tensor.backward``, ``retain_grad`` and ``register_hook`` are methods of the tensor.
"""

from fastnn.autograd.engine import Node, attach
from fastnn.autograd.function import Function, FunctionCtx, once_differentiable
from fastnn.autograd.functional import backward, grad
from fastnn.autograd.grad_mode import (
    detect_anomaly,
    enable_grad,
    inference_mode,
    is_anomaly_enabled,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_anomaly_enabled,
    set_detect_anomaly,
    set_grad_enabled,
)
from fastnn.autograd.hooks import RemovableHandle
from fastnn.autograd.rules import RULES
from fastnn.autograd.variable import Variable

__all__ = [
    "Node", "attach", "backward", "grad", "RULES", "no_grad", "enable_grad", "detect_anomaly",
    "is_grad_enabled", "is_anomaly_enabled", "RemovableHandle", "set_grad_enabled",
    "inference_mode", "is_inference_mode_enabled", "set_anomaly_enabled", "set_detect_anomaly",
    "Function", "FunctionCtx", "once_differentiable", "Variable",
]
