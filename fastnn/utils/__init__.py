"""PyTorch's ``torch.utils`` layout, so that ``import fastnn as torch`` scripts find their
data tools: ``fastnn.utils.data`` is :mod:`fastnn.data` itself (the same module object),
so ``from fastnn.utils.data import DataLoader, TensorDataset`` works; ``fastnn.utils.checkpoint``
is activation checkpointing, as ``torch.utils.checkpoint``."""

import sys

from fastnn import data
from fastnn.data import dataset as _data_dataset
from fastnn.data import distributed as _data_distributed
from fastnn.data import loader as _data_loader
from fastnn.data import sampler as _data_sampler
from fastnn.utils import checkpoint

# the same modules under PyTorch's paths: `import fastnn.utils.data` finds them here
# (without the submodules, `fastnn.utils.data.sampler` would load the file again as a
# different module, with classes of its own); PyTorch's `torch.utils.data.dataloader`
# is fastnn's `loader`
sys.modules[__name__ + ".data"] = data
for _name, _module in (("distributed", _data_distributed), ("dataset", _data_dataset),
                       ("sampler", _data_sampler), ("dataloader", _data_loader)):
    sys.modules[__name__ + ".data." + _name] = _module

__all__ = ["data", "checkpoint"]
