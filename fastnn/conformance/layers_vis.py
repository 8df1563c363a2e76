"""Layer specs of issue 21's vision, normalisation and dropout layers (see
:mod:`fastnn.conformance.layers` for what a spec is). The dropout layers run in training
mode: ``reverse`` reuses the seed of the forward pass the check runs first."""

from __future__ import annotations


def specs(nn) -> list:
    """The specs, one or more per layer class."""

    def tracked(cls, d, dev):
        return cls(3, affine=True, track_running_stats=True, dtype=d, device=dev)

    pads = [(f"{kind}Pad{k}d", lambda d, dev, kind=kind, k=k: getattr(nn, f"{kind}Pad{k}d")(
        tuple(range(1, 2 * k + 1)) if kind not in ("Reflection", "Circular") else 1),
        (2, 3) + (4,) * k)
        for kind in ("Zero", "Constant", "Reflection", "Replication", "Circular")
        for k in (1, 2, 3)]
    return pads + [
        ("ConvTranspose1d(stride=2, groups=2)", lambda d, dev: nn.ConvTranspose1d(
            2, 4, 3, stride=2, padding=1, output_padding=1, groups=2, dtype=d, device=dev),
         (2, 2, 5)),
        ("ConvTranspose2d", lambda d, dev: nn.ConvTranspose2d(
            2, 3, (2, 3), stride=(2, 1), dilation=(1, 2), dtype=d, device=dev), (2, 2, 3, 4)),
        ("ConvTranspose3d(stride, groups)", lambda d, dev: nn.ConvTranspose3d(
            2, 4, (2, 1, 2), stride=(2, 1, 1), padding=(1, 0, 0), output_padding=(1, 0, 0),
            groups=2, dtype=d, device=dev), (2, 2, 2, 3, 2)),
        ("Conv3d(stride, padding, groups)", lambda d, dev: nn.Conv3d(
            2, 4, (2, 3, 2), stride=(2, 1, 1), padding=(1, 1, 0), groups=2, dtype=d, device=dev),
         (2, 2, 3, 4, 3)),
        ("LayerNorm([3, 4], bias=False)", lambda d, dev: nn.LayerNorm(
            [3, 4], bias=False, dtype=d, device=dev), (2, 3, 4)),
        ("LayerNorm(4, bias=False)", lambda d, dev: nn.LayerNorm(4, bias=False, dtype=d,
                                                                 device=dev), (3, 4)),
        ("LayerNorm(4, elementwise_affine=False)", lambda d, dev: nn.LayerNorm(
            4, elementwise_affine=False, dtype=d, device=dev), (3, 4)),
        ("RMSNorm(4, elementwise_affine=False)", lambda d, dev: nn.RMSNorm(
            4, elementwise_affine=False, dtype=d, device=dev), (3, 4)),
        ("RMSNorm([3, 4])", lambda d, dev: nn.RMSNorm([3, 4], dtype=d, device=dev), (2, 3, 4)),
        ("GroupNorm(2, 4)", lambda d, dev: nn.GroupNorm(2, 4, dtype=d, device=dev),
         (3, 4, 5)),
        ("InstanceNorm1d(affine)", lambda d, dev: nn.InstanceNorm1d(
            3, affine=True, dtype=d, device=dev), (2, 3, 5)),
        ("InstanceNorm2d(track_running_stats)", lambda d, dev: tracked(nn.InstanceNorm2d, d,
                                                                       dev), (2, 3, 3, 4)),
        ("InstanceNorm3d", lambda d, dev: nn.InstanceNorm3d(3), (2, 3, 2, 2, 3)),
        ("BatchNorm3d", lambda d, dev: nn.BatchNorm3d(3, dtype=d, device=dev),
         (2, 3, 2, 2, 3)),
        ("Dropout1d", lambda d, dev: nn.Dropout1d(0.5), (3, 4, 5)),
        ("Dropout2d", lambda d, dev: nn.Dropout2d(0.5), (3, 4, 2, 3)),
        ("Dropout3d", lambda d, dev: nn.Dropout3d(0.5), (2, 4, 2, 2, 3)),
        ("AlphaDropout", lambda d, dev: nn.AlphaDropout(0.3), (5, 4)),
        ("FeatureAlphaDropout", lambda d, dev: nn.FeatureAlphaDropout(0.3), (3, 4, 5)),
        ("Upsample(bilinear, align_corners)", lambda d, dev: nn.Upsample(
            scale_factor=1.5, mode="bilinear", align_corners=True), (2, 2, 3, 4)),
        ("Upsample(nearest)", lambda d, dev: nn.Upsample(size=(5, 3)), (2, 2, 3, 4)),
        ("UpsamplingNearest2d", lambda d, dev: nn.UpsamplingNearest2d(scale_factor=2),
         (1, 2, 3, 2)),
        ("UpsamplingBilinear2d", lambda d, dev: nn.UpsamplingBilinear2d(size=(4, 5)),
         (1, 2, 3, 2)),
        ("PixelShuffle", lambda d, dev: nn.PixelShuffle(2), (2, 8, 2, 3)),
        ("PixelUnshuffle", lambda d, dev: nn.PixelUnshuffle(2), (2, 2, 4, 6)),
        ("Unflatten", lambda d, dev: nn.Unflatten(1, (2, -1)), (3, 8)),
        ("Softmin", lambda d, dev: nn.Softmin(dim=1), (3, 4, 2)),
        ("ChannelShuffle", lambda d, dev: nn.ChannelShuffle(2), (2, 6, 3)),
        ("LocalResponseNorm", lambda d, dev: nn.LocalResponseNorm(3, alpha=0.5), (2, 5, 3)),
        ("Unfold", lambda d, dev: nn.Unfold((2, 3), padding=1, stride=2), (2, 2, 4, 5)),
        ("Fold", lambda d, dev: nn.Fold((4, 5), 2), (2, 8, 12)),
        ("Softmax2d", lambda d, dev: nn.Softmax2d(), (2, 3, 2, 2)),
    ]
