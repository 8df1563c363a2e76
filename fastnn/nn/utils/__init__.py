"""Helpers over a model's parameters, as PyTorch's ``torch.nn.utils``: gradient clipping
(also offered by :mod:`fastnn.optim`), and packed sequences (:mod:`fastnn.nn.utils.rnn`)."""

from fastnn.nn.utils import rnn
from fastnn.nn.utils.clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value,
    clip_grad_value_,
)
from fastnn.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value", "clip_grad_value_",
           "parameters_to_vector", "rnn", "vector_to_parameters"]
