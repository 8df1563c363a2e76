"""``DataParallel``: PyTorch's single-process wrapper, on one device.

PyTorch's ``DataParallel`` splits each batch over the GPUs of one process; without
several devices (``device_ids`` of one device, or none on the CPU) it calls the module
itself, which is what this one does, on the module's own device. For several devices,
use :class:`~fastnn.nn.parallel.DistributedDataParallel` with one rank per device. It is
``fastnn.nn.DataParallel`` and ``fastnn.nn.parallel.DataParallel``, as in PyTorch.
"""

from __future__ import annotations

from fastnn.nn.module import Module


class DataParallel(Module):
    """``module`` wrapped as PyTorch's ``DataParallel`` is: ``.module``, parameter and
    ``state_dict`` names prefixed ``module.``; forward calls the module."""

    def __init__(self, module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel: module must be a fastnn nn.Module, got "
                            f"{type(module).__name__}")
        _one_device("DataParallel", device_ids)
        self.module = module
        self.device_ids, self.output_device, self.dim = device_ids, output_device, dim

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim: int = 0,
                  module_kwargs=None):
    """PyTorch's functional ``DataParallel``: ``module(*inputs, **module_kwargs)`` on the
    module's own device (``inputs`` one tensor or a tuple), as DataParallel's forward; more
    than one device in ``device_ids`` is refused as DataParallel refuses it."""
    _one_device("data_parallel", device_ids)
    if not isinstance(inputs, tuple):
        inputs = (inputs,)
    return module(*inputs, **(module_kwargs or {}))


def _one_device(op: str, device_ids) -> None:
    if device_ids is not None and len(list(device_ids)) > 1:
        raise ValueError(f"{op}: fastnn runs one process on one device, got "
                         f"device_ids={list(device_ids)}; for several devices use "
                         "DistributedDataParallel with one MPI rank per device")
