"""Reverse-mode automatic differentiation: the tape, its switches and the backward rules."""

from fastnn.autograd.engine import Node, attach, backward
from fastnn.autograd.grad_mode import (
    detect_anomaly,
    enable_grad,
    is_anomaly_enabled,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from fastnn.autograd.rules import RULES

__all__ = [
    "Node", "attach", "backward", "RULES", "no_grad", "enable_grad", "detect_anomaly",
    "is_grad_enabled", "is_anomaly_enabled", "set_grad_enabled",
]
