"""``padding_mode`` of the convolution layers, as PyTorch's: "zeros" pads inside the
convolution; "reflect", "replicate" and "circular" pad the input first (``F.pad`` with
those modes) and convolve it unpadded."""

from __future__ import annotations

from fastnn.ops.joining import pad

MODES = ("zeros", "reflect", "replicate", "circular")


def check_mode(owner: str, padding_mode) -> str:
    if padding_mode not in MODES:
        raise ValueError(f"{owner}: padding_mode must be one of {', '.join(map(repr, MODES))}, "
                         f"got {padding_mode!r}")
    return padding_mode


def pad_input(x, sides: tuple, padding_mode: str):
    """``x`` padded by ``sides`` ((before, after) per spatial dim, first dim first) in
    ``padding_mode`` (not "zeros"): F.pad's order is the last dim first."""
    widths = tuple(w for before_after in reversed(sides) for w in before_after)
    return pad(x, widths, mode=padding_mode)
