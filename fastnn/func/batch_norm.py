"""PyTorch's ``torch.func.replace_all_batch_norm_modules_``: batch norm without running
statistics, so that ``vmap`` over a model in training mode needs no in-place buffer
updates (the per-sample-gradient recipe)."""

from __future__ import annotations

from fastnn.nn.batchnorm import _BatchNorm

__all__ = ["replace_all_batch_norm_modules_"]


def replace_all_batch_norm_modules_(root):
    """Every batch norm module in ``root`` (itself included) that tracks running statistics
    stops: ``running_mean``, ``running_var`` and ``num_batches_tracked`` become None and
    ``track_running_stats`` False, so it normalises with the batch's statistics in eval
    mode too. In place; returns ``root``."""
    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root
