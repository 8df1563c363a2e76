"""The training step the capture tests compile: zero the gradients, cross-entropy of the
model's output against the targets, backward, the optimizer's step; the loss returned."""

from __future__ import annotations

import fastnn.functional as F


def classification_step(model, opt):
    """``step(x, y) -> loss`` for ``model`` and ``opt``, as a PyTorch user writes it."""

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step
