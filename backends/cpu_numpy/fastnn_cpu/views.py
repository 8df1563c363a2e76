"""Reshaped views that never copy.

``a.reshape(shape)`` silently copies where ``a``'s layout cannot be viewed as ``shape``;
a plan that keeps views (conv_batched's grids, gemm_split's column parts) must get an
error instead. The old idiom, assigning ``view.shape``, is deprecated from NumPy 2.5;
``np.reshape(a, shape, copy=False)`` says the same from NumPy 2.1 (pyproject allows 1.24).
"""

from __future__ import annotations

import numpy as np


def _reshape_no_copy(a, shape):
    return np.reshape(a, shape, copy=False)  # ValueError where it would copy


def _assign_shape(a, shape):
    view = a.view()
    view.shape = shape  # NumPy < 2.1 (no copy=): AttributeError where it would copy
    return view


#: ``reshaped_view(a, shape)``: ``a`` as ``shape``, a view of its memory; raises where
#: that would take a copy
reshaped_view = (_reshape_no_copy if np.lib.NumpyVersion(np.__version__) >= "2.1.0"
                 else _assign_shape)
