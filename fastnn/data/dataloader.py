"""``torch.utils.data.dataloader``'s names, for code that imports them from there:
``from fastnn.utils.data.dataloader import default_collate``."""

from fastnn.data.collate import default_collate, default_convert
from fastnn.data.loader import DataLoader
from fastnn.data.workers import get_worker_info

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]
