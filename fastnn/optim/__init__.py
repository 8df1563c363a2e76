"""Optimizers (``fastnn.optim``): SGD, RMSProp, Adam, AdamW, schedules and gradient clipping."""

from fastnn.optim import lr_scheduler
from fastnn.optim.optimizer import Optimizer, clip_grad_norm
from fastnn.optim.optimizers import SGD, Adam, AdamW, RMSProp

__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "RMSProp", "clip_grad_norm", "lr_scheduler"]
