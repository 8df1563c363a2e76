"""PyTorch's ``torch.utils`` layout, so that ``import fastnn as torch`` scripts find their
data tools: ``fastnn.utils.data`` is :mod:`fastnn.data` itself (the same module object),
so ``from fastnn.utils.data import DataLoader, TensorDataset`` works; ``fastnn.utils.checkpoint``
is activation checkpointing, as ``torch.utils.checkpoint``."""

import sys

from fastnn import data
from fastnn.data import distributed as _data_distributed
from fastnn.utils import checkpoint

# the same modules under PyTorch's paths: `import fastnn.utils.data` finds them here
# (without the second, `fastnn.utils.data.distributed` would load the file again as a
# different module, with a DistributedSampler class of its own)
sys.modules[__name__ + ".data"] = data
sys.modules[__name__ + ".data.distributed"] = _data_distributed

__all__ = ["data", "checkpoint"]
