"""Warnings at the user's line: the first frame outside fastnn's own files, as PyTorch's
warnings name the caller's line whatever the depth of the library calls in between."""

from __future__ import annotations

import os
import sys
import warnings

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def warn_user(message: str, category=UserWarning) -> None:
    """``warnings.warn(message, category)`` at the first frame outside fastnn."""
    level, frame = 1, sys._getframe(0)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(
            _PACKAGE + os.sep):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
