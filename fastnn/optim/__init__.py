"""Optimizers (``fastnn.optim``): PyTorch's rules, schedules and gradient clipping."""

from fastnn.nn.utils.clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value,
    clip_grad_value_,
)
from fastnn.optim import lr_scheduler, swa_utils
from fastnn.optim.adaptive import Adagrad, NAdam, RAdam
from fastnn.optim.classic import ASGD, Adadelta, Adamax, Rprop
from fastnn.optim.lbfgs import LBFGS
from fastnn.optim.matrix import Adafactor, Muon
from fastnn.optim.optimizer import Optimizer
from fastnn.optim.optimizers import SGD, Adam, AdamW, RMSProp, RMSprop

__all__ = ["ASGD", "LBFGS", "Adafactor", "Muon", "SGD", "Adadelta", "Adamax", "Rprop",
           "Adagrad", "Adam", "AdamW", "NAdam", "Optimizer", "RAdam", "RMSProp",
           "RMSprop", "clip_grad_norm", "clip_grad_norm_", "clip_grad_value", "clip_grad_value_",
           "lr_scheduler", "swa_utils"]
