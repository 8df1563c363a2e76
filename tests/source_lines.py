"""The line of a marker comment in a test file: the line a mismatch must blame, or a
profiler's stack must name."""

from __future__ import annotations


def line_in(path: str, marker: str) -> int:
    """The 1-based line of ``path`` that ends with the comment ``# marker``."""
    with open(path, encoding="utf-8") as source:
        return next(i + 1 for i, text in enumerate(source)
                    if text.rstrip().endswith(f"# {marker}"))
