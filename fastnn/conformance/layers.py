"""Layer-level conformance: each ``fastnn.nn`` layer's ``reverse`` against the tape.

``layer.reverse(x, grad_out)`` derives dL/dx and dL/d(parameters) by hand;
the tape derives them from the backward rules. On a correct backend the two
agree. Each spec is ``(label, make(dtype, device) -> layer, input shape)``;
layers with parameters get random (non-default) values so that no gradient
is trivially zero. The label starts with the layer's class name.

The layers to check are read off ``fastnn.nn.__all__``: a layer class with no
spec here gets a spec that fails, naming it, so a new layer cannot be missed.
"""

from __future__ import annotations

import numpy as np


def specs() -> list:
    """The layer specs, or [] when ``fastnn.nn`` is not installed."""
    try:
        from fastnn import nn
    except ImportError:
        return []
    out = [
        ("Dense", lambda d, dev: nn.Dense(4, 3, dtype=d, device=dev), (5, 4)),
        ("Linear", lambda d, dev: nn.Linear(4, 3, dtype=d, device=dev), (2, 5, 4)),
        ("Bias1d", lambda d, dev: nn.Bias1d(4, dtype=d, device=dev), (5, 4)),
        ("Diag", lambda d, dev: nn.Diag(4, dtype=d, device=dev), (5, 4)),
        ("ScalarScale", lambda d, dev: nn.ScalarScale(0.7, dtype=d, device=dev), (5, 4)),
        ("RMSDiv", lambda d, dev: nn.RMSDiv(), (5, 4)),
        ("RMSNorm", lambda d, dev: nn.RMSNorm(4, dtype=d, device=dev), (5, 4)),
        ("LayerNorm", lambda d, dev: nn.LayerNorm(4, dtype=d, device=dev), (5, 4)),
        ("Softmax", lambda d, dev: nn.Softmax(), (5, 4)),
        ("Softmax(temperature=2)", lambda d, dev: nn.Softmax(temperature=2.0), (5, 4)),
        ("Swish", lambda d, dev: nn.Swish(4, dtype=d, device=dev), (5, 4)),
        ("Dropout(p=0)", lambda d, dev: nn.Dropout(0.0), (5, 4)),
        ("Conv1d", lambda d, dev: nn.Conv1d(2, 3, 3, padding=1, dtype=d, device=dev), (2, 2, 7)),
        ("Conv1d(stride=2, dilation=2)",
         lambda d, dev: nn.Conv1d(2, 4, 2, stride=2, dilation=2, dtype=d, device=dev), (2, 2, 9)),
        ("Residual(Linear)", lambda d, dev: nn.Residual(nn.Linear(4, 4, dtype=d, device=dev)),
         (5, 4)),
        ("Sequential", lambda d, dev: nn.Sequential(
            nn.Linear(4, 6, dtype=d, device=dev), nn.Activation("tanh"),
            nn.RMSNorm(6, dtype=d, device=dev), nn.Linear(6, 3, dtype=d, device=dev)), (5, 4)),
    ]
    for kind in ("relu", "leaky_relu", "sigmoid", "tanh", "silu", "gelu", "softplus",
                 "identity"):
        out.append((f"Activation({kind})", lambda d, dev, k=kind: nn.Activation(k), (5, 4)))
    out += _vision_specs(nn)
    covered = {label.split("(")[0] for label, _, _ in out}
    out += [(f"{name} (no layer spec in fastnn/conformance/layers.py)", None, None)
            for name in layer_classes(nn) if name not in covered]
    return out


def layer_classes(nn) -> list:
    """The names of the layer classes ``fastnn.nn`` exports (Module subclasses)."""
    return [name for name in nn.__all__
            if isinstance(getattr(nn, name), type) and issubclass(getattr(nn, name), nn.Module)
            and getattr(nn, name) is not nn.Module]


def _vision_specs(nn) -> list:
    """Convolution, pooling and batch-normalisation layers (and the shape layers)."""

    def bn_eval(cls, d, dev):
        layer = cls(3, dtype=d, device=dev)
        return layer.eval()

    return [
        ("Conv2d", lambda d, dev: nn.Conv2d(2, 3, 3, padding=1, dtype=d, device=dev),
         (2, 2, 5, 6)),
        ("Conv2d(stride=2, dilation=(1, 2), groups=2)", lambda d, dev: nn.Conv2d(
            2, 4, (2, 3), stride=2, dilation=(1, 2), groups=2, dtype=d, device=dev),
         (2, 2, 7, 8)),
        ("Conv2d(padding='same', even kernel)", lambda d, dev: nn.Conv2d(
            3, 2, 2, padding="same", dtype=d, device=dev), (2, 3, 4, 5)),
        ("Conv1d(causal=True)", lambda d, dev: nn.Conv1d(2, 3, 3, dilation=2, causal=True,
                                                          dtype=d, device=dev), (2, 2, 9)),
        ("Conv1d(padding='same', k=4)", lambda d, dev: nn.Conv1d(2, 3, 4, padding="same",
                                                                 dtype=d, device=dev),
         (2, 2, 7)),
        ("MaxPool1d", lambda d, dev: nn.MaxPool1d(2), (2, 3, 8)),
        ("MaxPool1d(3, stride=2, padding=1)", lambda d, dev: nn.MaxPool1d(3, 2, 1), (2, 3, 9)),
        ("MaxPool2d", lambda d, dev: nn.MaxPool2d(2), (2, 3, 4, 6)),
        ("MaxPool2d(3, stride=2, padding=1)", lambda d, dev: nn.MaxPool2d(3, 2, 1),
         (2, 2, 7, 6)),
        ("AvgPool1d(3, stride=2, padding=1)", lambda d, dev: nn.AvgPool1d(3, 2, 1), (2, 3, 9)),
        ("AvgPool2d", lambda d, dev: nn.AvgPool2d(2), (2, 3, 4, 6)),
        ("AvgPool2d(3, 2, 1, count_include_pad=False)", lambda d, dev: nn.AvgPool2d(
            3, 2, 1, count_include_pad=False), (2, 2, 7, 6)),
        ("AdaptiveAvgPool1d(3)", lambda d, dev: nn.AdaptiveAvgPool1d(3), (2, 3, 8)),
        ("AdaptiveAvgPool2d((3, 2))", lambda d, dev: nn.AdaptiveAvgPool2d((3, 2)),
         (2, 2, 7, 5)),
        ("AdaptiveAvgPool2d(1)", lambda d, dev: nn.AdaptiveAvgPool2d(1), (2, 2, 4, 4)),
        ("BatchNorm1d", lambda d, dev: nn.BatchNorm1d(3, dtype=d, device=dev), (5, 3)),
        ("BatchNorm1d((N, C, L))", lambda d, dev: nn.BatchNorm1d(3, dtype=d, device=dev),
         (4, 3, 6)),
        ("BatchNorm2d", lambda d, dev: nn.BatchNorm2d(3, dtype=d, device=dev), (4, 3, 3, 5)),
        ("BatchNorm2d(eval)", lambda d, dev: bn_eval(nn.BatchNorm2d, d, dev), (4, 3, 3, 5)),
        ("Flatten", lambda d, dev: nn.Flatten(), (2, 3, 4)),
        ("GlobalAvgPool1d", lambda d, dev: nn.GlobalAvgPool1d(), (2, 3, 5)),
    ]


def randomize(layer, rng) -> None:
    """Give every parameter random values of either sign, through ``load_state_dict``."""
    state = layer.state_dict()
    for name, param in layer.named_parameters():
        values = rng.uniform(0.5, 1.5, size=param.shape) * rng.choice([-1.0, 1.0], param.shape)
        state[name] = values.astype(param.dtype.numpy)
    layer.load_state_dict(state)


def away_from_kinks(rng, shape) -> np.ndarray:
    return rng.uniform(0.2, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
