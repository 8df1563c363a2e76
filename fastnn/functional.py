"""Functional ops on tensors (``import fastnn.functional as F``), as in PyTorch's.

Made from the op table (:mod:`fastnn.ops.table`): every op marked ``@public`` is here.
"""

import fastnn.ops  # noqa: F401  (importing the op modules fills the table)
from fastnn.ops.table import FUNCTIONAL as _FUNCTIONAL

globals().update(_FUNCTIONAL)
__all__ = sorted(_FUNCTIONAL)


def __dir__():
    return __all__
