"""The tensor and its ops: the layer above the backend contract and the tape.

Importing this package binds the operators and methods onto :class:`Tensor`.
"""

from fastnn.ops import conv as _conv  # noqa: F401  (each op module fills the op table)
from fastnn.ops import losses as _losses  # noqa: F401
from fastnn.ops import methods as _methods  # noqa: F401  (binds Tensor's operators)
from fastnn.ops import normalization as _normalization  # noqa: F401
from fastnn.ops import pooling as _pooling  # noqa: F401
from fastnn.ops.tensor import Tensor

__all__ = ["Tensor"]
