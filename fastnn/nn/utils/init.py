"""PyTorch's ``torch.nn.utils.skip_init``: build a module without running its
initialisation."""

from __future__ import annotations

import inspect

from fastnn.nn.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` on ``device`` (default "cpu", as PyTorch's), whose
    parameters and buffers hold unspecified values that the caller is to initialise or
    load: PyTorch leaves them uninitialised; here they are what the initialisation gave
    (fastnn has no meta device to skip it on). ``module_cls`` must take ``device``."""
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    kwargs.setdefault("device", "cpu")
    return module_cls(*args, **kwargs)
