"""``torch.utils.hooks``: :class:`RemovableHandle`, the type of what every
``register_*_hook`` returns (tensor, module and optimizer hooks alike)."""

from fastnn.autograd.hooks import RemovableHandle

__all__ = ["RemovableHandle"]
