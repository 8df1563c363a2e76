"""Layer specs of the activation modules in ``fastnn/nn/activation_more.py``."""

from __future__ import annotations


def specs(nn) -> list:
    """(name, make(dtype, device), input shape) for each activation module."""
    out = [(name, lambda d, dev, n=name: getattr(nn, n)(), (5, 4))
           for name in ("ReLU6", "Hardsigmoid", "Hardswish", "Softsign", "LogSigmoid",
                        "Tanhshrink", "Softshrink", "Hardshrink", "CELU")]
    out += [
        ("Softmin(dim=1)", lambda d, dev: nn.Softmin(dim=1), (5, 4)),
        ("Threshold(0.1, -2)", lambda d, dev: nn.Threshold(0.1, -2.0), (5, 4)),
        # evaluation mode: in training each call draws its slopes anew
        ("RReLU (eval)", lambda d, dev: nn.RReLU().eval(), (5, 4)),
        ("PReLU(4)", lambda d, dev: nn.PReLU(4, dtype=d, device=dev), (5, 4)),
    ]
    return out
