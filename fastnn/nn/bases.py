"""PyTorch's shared base classes of the convolutions and the dropouts, under its names.

Code written for PyTorch tells layers apart by their bases: ``isinstance(m,
nn.modules.conv._ConvNd)`` in an init loop, ``isinstance(m, nn.modules.dropout._DropoutNd)``
to switch dropout off. fastnn's layers keep their own ``__init__`` and ``forward``; these
bases only make such checks answer as PyTorch's do (``fastnn.nn.modules`` names them where
PyTorch has them).
"""

from __future__ import annotations

from fastnn.nn.module import Module


class _ConvNd(Module):
    """What every convolution is an instance of: Conv1d/2d/3d, the transposed ones and
    their lazy forms (PyTorch's ``torch.nn.modules.conv._ConvNd``)."""


class _DropoutNd(Module):
    """What every dropout layer is an instance of: Dropout, Dropout1d/2d/3d, AlphaDropout
    and FeatureAlphaDropout (PyTorch's ``torch.nn.modules.dropout._DropoutNd``)."""
