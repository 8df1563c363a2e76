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


def pad_input(x, sides: tuple, padding_mode: str) -> tuple:
    """``(x, sides)`` for the convolution: as given for "zeros" (the convolution pads);
    else ``x`` padded by ``sides`` ((before, after) per spatial dim, first dim first; F.pad
    takes the last dim first) in ``padding_mode``, and no sides left to pad."""
    if padding_mode == "zeros":
        return x, sides
    widths = tuple(w for before_after in reversed(sides) for w in before_after)
    return pad(x, widths, mode=padding_mode), ((0, 0),) * len(sides)
