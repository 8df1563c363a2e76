"""PyTorch's ``torch.utils`` layout, so that ``import fastnn as torch`` scripts find their
data tools: ``fastnn.utils.data`` is :mod:`fastnn.data` itself (the same module object),
so ``from fastnn.utils.data import DataLoader, TensorDataset`` works; ``fastnn.utils.checkpoint``
is activation checkpointing, as ``torch.utils.checkpoint``."""

import sys

from fastnn import data
from fastnn.utils import checkpoint

# the same module under PyTorch's path: `import fastnn.utils.data` finds it here
sys.modules[__name__ + ".data"] = data

__all__ = ["data", "checkpoint"]
