"""Helpers over a model's parameters, as PyTorch's ``torch.nn.utils``: gradient clipping
(also offered by :mod:`fastnn.optim`), packed sequences (:mod:`fastnn.nn.utils.rnn`),
parametrizations (:mod:`~fastnn.nn.utils.parametrize`, :mod:`~fastnn.nn.utils.parametrizations`),
the older hook-based weight and spectral normalisation, conv/linear-BatchNorm fusion,
pruning (:mod:`~fastnn.nn.utils.prune`), ``skip_init`` and the deprecated
:mod:`~fastnn.nn.utils.stateless`."""

from fastnn.nn.utils import parametrizations, parametrize, prune, rnn, stateless
from fastnn.nn.utils.clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from fastnn.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from fastnn.nn.utils.fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from fastnn.nn.utils.init import skip_init
from fastnn.nn.utils.spectral_norm import remove_spectral_norm, spectral_norm
from fastnn.nn.utils.weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value", "clip_grad_value_",
           "clip_grads_with_norm_", "fuse_conv_bn_eval", "fuse_conv_bn_weights",
           "fuse_linear_bn_eval", "fuse_linear_bn_weights", "get_total_norm",
           "parameters_to_vector", "parametrizations", "parametrize", "prune",
           "remove_spectral_norm", "remove_weight_norm", "rnn", "skip_init", "spectral_norm",
           "stateless", "vector_to_parameters", "weight_norm"]
