"""Layer specs of the lazy modules (see :mod:`fastnn.conformance.layers` for what a spec
is). Each is built and given its shape by ``initialize_parameters`` over a dummy input, so
that it is still of its lazy class when the check randomises its parameters; the check's
forward then turns it into the non-lazy layer, whose ``reverse`` is compared."""

from __future__ import annotations


def _shaped(layer, shape, dtype, device):
    import fastnn as fnn

    layer.initialize_parameters(fnn.zeros(shape, dtype=dtype, device=device))
    return layer


def specs(nn) -> list:
    """One spec per lazy class."""
    cases = [
        ("LazyLinear", lambda d, dev: nn.LazyLinear(3, dtype=d, device=dev), (2, 5, 4)),
        ("LazyConv1d", lambda d, dev: nn.LazyConv1d(4, 3, padding=1, groups=2, dtype=d,
                                                    device=dev), (2, 2, 6)),
        ("LazyConv2d", lambda d, dev: nn.LazyConv2d(3, (2, 3), stride=2, dtype=d, device=dev),
         (2, 2, 5, 6)),
        ("LazyConv3d", lambda d, dev: nn.LazyConv3d(2, 2, padding=1, dtype=d, device=dev),
         (1, 2, 3, 2, 3)),
        ("LazyConvTranspose1d", lambda d, dev: nn.LazyConvTranspose1d(
            3, 3, stride=2, dtype=d, device=dev), (2, 2, 4)),
        ("LazyConvTranspose2d", lambda d, dev: nn.LazyConvTranspose2d(
            2, 2, stride=2, padding=1, dtype=d, device=dev), (2, 3, 3, 2)),
        ("LazyConvTranspose3d", lambda d, dev: nn.LazyConvTranspose3d(
            2, 2, dilation=(1, 2, 1), dtype=d, device=dev), (1, 2, 2, 2, 3)),
        ("LazyBatchNorm1d", lambda d, dev: nn.LazyBatchNorm1d(dtype=d, device=dev), (5, 3)),
        ("LazyBatchNorm2d", lambda d, dev: nn.LazyBatchNorm2d(dtype=d, device=dev),
         (4, 3, 2, 3)),
        ("LazyBatchNorm3d", lambda d, dev: nn.LazyBatchNorm3d(dtype=d, device=dev),
         (2, 3, 2, 2, 3)),
        ("LazyInstanceNorm1d", lambda d, dev: nn.LazyInstanceNorm1d(dtype=d, device=dev),
         (2, 3, 5)),
        ("LazyInstanceNorm2d", lambda d, dev: nn.LazyInstanceNorm2d(dtype=d, device=dev),
         (2, 3, 3, 4)),
        ("LazyInstanceNorm3d", lambda d, dev: nn.LazyInstanceNorm3d(dtype=d, device=dev),
         (2, 3, 2, 2, 3)),
    ]
    return [(label, lambda d, dev, make=make, shape=shape: _shaped(make(d, dev), shape, d, dev),
             shape) for label, make, shape in cases]
