"""The ``fastnn train --model cnn`` network: the digits as 8x8 images through two
Conv2d-BatchNorm-ReLU-MaxPool blocks and a linear head."""

from __future__ import annotations


def build_cnn(input_shape: tuple, num_classes: int):
    """(N, 64) pixels -> (N, 1, 8, 8) -> 16 and 32 channels of 3x3 convolutions, each
    batch-normalised, rectified and max-pooled 2x2 -> (N, 32 * 2 * 2) -> logits."""
    from fastnn import nn

    side = int(round(int(input_shape[-1]) ** 0.5))
    if len(input_shape) != 1 or side * side != input_shape[0]:
        raise SystemExit(f"fastnn train: --model cnn needs square images given as flat "
                         f"vectors (digits), got inputs of shape {input_shape}")

    class AsImage(nn.Module):
        """(N, side * side) -> (N, 1, side, side)."""

        def forward(self, x):
            return x.reshape(x.shape[0], 1, side, side)

    return nn.Sequential(
        AsImage(),
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.Activation("relu"),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.Activation("relu"),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * (side // 4) ** 2, num_classes),
    )
