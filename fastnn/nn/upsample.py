"""Resizing and reshaping layers: Upsample, UpsamplingNearest2d, UpsamplingBilinear2d,
PixelShuffle, PixelUnshuffle, ChannelShuffle, Unflatten, Unfold and Fold, PyTorch's, over
:mod:`fastnn.ops.resample` and :mod:`fastnn.ops.conv_transpose` (no parameters; ``reverse``
is the tape's)."""

from __future__ import annotations

from fastnn.api.args import ints
from fastnn.nn.module import Module, check_tensor
from fastnn.ops import conv_transpose, resample
from fastnn.ops.viewing import unflatten


class Upsample(Module):
    """PyTorch's Upsample: :func:`~fastnn.ops.resample.interpolate` with fixed ``size`` or
    ``scale_factor``, ``mode`` (nearest, nearest-exact, linear, bilinear, trilinear) and
    ``align_corners``."""

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest",
                 align_corners=None, recompute_scale_factor=None):
        super().__init__()
        if (size is None) == (scale_factor is None):
            raise ValueError("Upsample: give exactly one of size and scale_factor")
        if mode not in resample.MODES:
            raise ValueError(f"Upsample: mode must be one of {', '.join(resample.MODES)}, got "
                             f"{mode!r}")
        self.name = type(self).__name__
        self.size = tuple(size) if isinstance(size, list) else size
        self.scale_factor = (tuple(float(s) for s in scale_factor)
                             if isinstance(scale_factor, (tuple, list))
                             else None if scale_factor is None else float(scale_factor))
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def extra_repr(self) -> str:
        info = (f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None
                else f"size={self.size!r}")
        return info + f", mode={self.mode!r}"

    def forward(self, x):
        return resample.interpolate(check_tensor(self.name, x), self.size, self.scale_factor,
                                    self.mode, self.align_corners, self.recompute_scale_factor)


class UpsamplingNearest2d(Upsample):
    """PyTorch's UpsamplingNearest2d: Upsample with mode nearest over (N, C, H, W)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, "nearest")


class UpsamplingBilinear2d(Upsample):
    """PyTorch's UpsamplingBilinear2d: Upsample with mode bilinear and align_corners=True."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, "bilinear", align_corners=True)


class PixelShuffle(Module):
    """PyTorch's PixelShuffle: (*, C r^2, H, W) -> (*, C, H r, W r)."""

    def __init__(self, upscale_factor: int):
        super().__init__()
        self.upscale_factor = upscale_factor

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"

    def forward(self, x):
        return resample.pixel_shuffle(check_tensor("PixelShuffle", x), self.upscale_factor)


class PixelUnshuffle(Module):
    """PyTorch's PixelUnshuffle: (*, C, H r, W r) -> (*, C r^2, H, W)."""

    def __init__(self, downscale_factor: int):
        super().__init__()
        self.downscale_factor = downscale_factor

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"

    def forward(self, x):
        return resample.pixel_unshuffle(check_tensor("PixelUnshuffle", x),
                                        self.downscale_factor)


class Unflatten(Module):
    """PyTorch's Unflatten: dim ``dim`` split into ``unflattened_size`` (one -1 allowed)."""

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        self.dim = dim
        self.unflattened_size = ints("Unflatten", "unflattened_size", unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"

    def forward(self, x):
        return unflatten(check_tensor("Unflatten", x), self.dim, self.unflattened_size)


class Unfold(Module):
    """PyTorch's Unfold (im2col): (N, C, H, W) -> (N, C * prod(kernel_size), L)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")

    def forward(self, x):
        return conv_transpose.unfold(check_tensor("Unfold", x), self.kernel_size,
                                     self.dilation, self.padding, self.stride)


class Fold(Module):
    """PyTorch's Fold (col2im): (N, C * prod(kernel_size), L) -> (N, C, *output_size),
    overlapping values summed."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")

    def forward(self, x):
        return conv_transpose.fold(check_tensor("Fold", x), self.output_size,
                                   self.kernel_size, self.dilation, self.padding, self.stride)


class ChannelShuffle(Module):
    """PyTorch's ChannelShuffle: (N, g * m, *) read as (N, g, m, *), returned as (N, m, g, *)
    flattened back."""

    def __init__(self, groups: int):
        super().__init__()
        self.groups = groups

    def extra_repr(self) -> str:
        return f"groups={self.groups}"

    def forward(self, x):
        return resample.channel_shuffle(check_tensor("ChannelShuffle", x), self.groups)
