"""PyTorch's ``torch.nn.parallel``: :class:`DistributedDataParallel` over
:mod:`fastnn.distributed`, and :class:`DataParallel` and :func:`data_parallel` (one
process, one device).

A layer above the rest of ``fastnn.nn`` (it needs ``fastnn.distributed``), so
``fastnn.nn`` does not import it: ``from fastnn.nn.parallel import
DistributedDataParallel`` does, and so does ``import fastnn.distributed``, after which
``fnn.nn.parallel.DistributedDataParallel`` is there as in PyTorch.
"""

from fastnn.nn.data_parallel import DataParallel, data_parallel
from fastnn.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
