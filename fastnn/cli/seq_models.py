"""The sequence models of ``fastnn train --data trace``: GRU, LSTM and a Transformer encoder.

Each reads a series (N, 1, L) as L / PATCH patches of PATCH consecutive values (so the
recurrence runs 25 steps on Trace, not 275), runs the sequence layer batch-first, takes
the maximum of its outputs over time (shift-invariant, as Trace's classes need; a mean
or the final state reached only 72% with the same layers, in PyTorch too) and classifies with a
Linear layer. Every part is a one-tensor reversible module, so ``--reverse`` works.
"""

from __future__ import annotations

from fastnn import nn
from fastnn.ops import movement

PATCH = 11
WIDTH = 32
MODELS = ("gru", "lstm", "transformer")
# per model, over the data set's defaults: what reaches >= 90% on Trace in a few seconds
DEFAULTS = {
    "gru": {"epochs": 20, "lr": 1e-2},
    "lstm": {"epochs": 20, "lr": 1e-2},
    "transformer": {"epochs": 15, "lr": 3e-3},
}


class Patches(nn.Module):
    """(N, C, L) -> (N, L / size, C * size): consecutive values as one step's features."""

    def __init__(self, size: int):
        super().__init__()
        self.size = size

    def extra_repr(self) -> str:
        return str(self.size)

    def forward(self, x):
        n, c, length = x.shape
        steps = length // self.size
        if steps * self.size != length:
            raise ValueError(f"Patches({self.size}): series length {length} is not a multiple "
                             f"of {self.size}")
        x = movement.reshape(x, (n, c, steps, self.size))
        return movement.reshape(movement.transpose(x, (0, 2, 1, 3)), (n, steps, c * self.size))


class SequenceOutput(nn.Module):
    """The output sequence of a recurrent layer (its final state dropped)."""

    def __init__(self, rnn: nn.Module):
        super().__init__()
        self.rnn = rnn

    def forward(self, x):
        return self.rnn(x)[0]

    def reverse(self, x, grad_out):
        grad_x, grads = self.rnn.reverse(x, grad_out)
        return grad_x, {f"rnn.{name}": g for name, g in grads.items()}


class MaxOverTime(nn.Module):
    """(N, L, F) -> (N, F), the largest value of each feature over the sequence."""

    def forward(self, x):
        return movement.max(x, 1)


def build(kind: str, input_shape: tuple, num_classes: int) -> nn.Module:
    channels, _ = input_shape
    features = channels * PATCH
    if kind == "transformer":
        body = [nn.Linear(features, WIDTH), nn.TransformerEncoder(
            nn.TransformerEncoderLayer(WIDTH, 4, 2 * WIDTH, dropout=0.0, batch_first=True), 2)]
    else:
        rnn = {"gru": nn.GRU, "lstm": nn.LSTM}[kind]
        body = [SequenceOutput(rnn(features, WIDTH, batch_first=True))]
    return nn.Sequential(Patches(PATCH), *body, MaxOverTime(), nn.Linear(WIDTH, num_classes))
