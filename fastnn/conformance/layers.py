"""Layer-level conformance: each ``fastnn.nn`` layer's ``reverse`` against the tape.

``layer.reverse(x, grad_out)`` derives dL/dx and dL/d(parameters) by hand;
the tape derives them from the backward rules. On a correct backend the two
agree. Each spec is ``(label, make(dtype, device) -> layer, input shape)``;
layers with parameters get random (non-default) values so that no gradient
is trivially zero.
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
    return out


def randomize(layer, rng) -> None:
    """Give every parameter random values of either sign, through ``load_state_dict``."""
    state = layer.state_dict()
    for name, param in layer.named_parameters():
        values = rng.uniform(0.5, 1.5, size=param.shape) * rng.choice([-1.0, 1.0], param.shape)
        state[name] = values.astype(param.dtype.numpy)
    layer.load_state_dict(state)


def away_from_kinks(rng, shape) -> np.ndarray:
    return rng.uniform(0.2, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
