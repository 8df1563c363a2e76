"""A training progress bar: epoch, loss, accuracy, samples/s.

On a terminal it redraws one line per epoch as batches finish; when stdout is
not a terminal (a pipe, a log file, CI) it prints one plain line per epoch and
nothing in between, so logs stay readable.

A batch's loss and count of right answers may be numbers or 0-d tensors on the
training device: tensors are summed where they are and read back only when a
line is drawn, so a GPU is not made to wait after every batch.
"""

from __future__ import annotations

import numbers
import sys
import time

import numpy as np

BAR_WIDTH = 24
REDRAW_SECONDS = 0.1  # at most ~10 redraws a second: a terminal write costs more than a batch


class Progress:
    """Report training progress for ``epochs`` epochs of ``samples`` samples each.

    Call :meth:`update` after each batch and :meth:`end_epoch` after each epoch.
    """

    def __init__(self, epochs: int, samples: int, stream=None, interactive: bool | None = None):
        self.epochs = epochs
        self.samples = samples
        self.stream = sys.stdout if stream is None else stream
        if interactive is None:
            isatty = getattr(self.stream, "isatty", None)
            interactive = bool(isatty and isatty())
        self.interactive = interactive
        self._start_epoch(0)

    def _start_epoch(self, epoch: int) -> None:
        self.epoch = epoch
        self.seen = 0
        self.loss_sum = 0.0
        self.correct = 0
        self._pending_loss = self._pending_correct = None  # sums not read back yet
        self.started = time.perf_counter()
        self._drawn = 0.0

    def begin_epoch(self, epoch: int) -> None:
        """Start counting epoch ``epoch`` (1-based)."""
        self._start_epoch(epoch)

    @property
    def loss(self) -> float:
        """Mean training loss over the batches of this epoch so far."""
        self._read_back()
        return self.loss_sum / max(self.seen, 1)

    @property
    def accuracy(self) -> float:
        """Fraction of this epoch's training samples classified correctly so far."""
        self._read_back()
        return self.correct / max(self.seen, 1)

    def _read_back(self) -> None:
        if self._pending_loss is not None:
            self.loss_sum += float(self._pending_loss)
            self._pending_loss = None
        if self._pending_correct is not None:
            self.correct += int(self._pending_correct)
            self._pending_correct = None

    @property
    def rate(self) -> float:
        """Training samples per second in this epoch."""
        return self.seen / max(time.perf_counter() - self.started, 1e-9)

    def update(self, batch_size: int, loss, correct) -> None:
        """Record one batch: its size, its mean loss and how many it got right (numbers, or
        0-d tensors, summed on their device until a line is drawn)."""
        self.seen += batch_size
        # host numbers (NumPy scalars too: two np.bool_ would add up to True, not 2) are
        # summed here at once; only tensors wait on their device
        if _on_host(loss):
            self.loss_sum += float(loss) * batch_size
        else:
            weighted = _summable(loss) * float(batch_size)
            pending = self._pending_loss
            self._pending_loss = weighted if pending is None else pending + weighted
        if _on_host(correct):
            self.correct += int(correct)
        else:
            pending = self._pending_correct
            self._pending_correct = correct if pending is None else pending + correct
        now = time.perf_counter()
        if self.interactive and (now - self._drawn >= REDRAW_SECONDS or self.seen >= self.samples):
            self._drawn = now
            self.stream.write("\r" + self._line(bar=True))
            self.stream.flush()

    def end_epoch(self, extra: str = "") -> str:
        """Finish the epoch's line (with ``extra``, e.g. held-out accuracy) and return it."""
        line = self._line(bar=False) + (f"  {extra}" if extra else "")
        if self.interactive:
            # pad so the bar's longer line is fully overwritten
            self.stream.write("\r" + line.ljust(len(self._line(bar=True))) + "\n")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        return line

    def _line(self, bar: bool) -> str:
        width = len(str(self.epochs))
        text = (
            f"epoch {self.epoch:>{width}}/{self.epochs}  loss {self.loss:.4f}  "
            f"acc {self.accuracy:6.2%}  {self.rate:>8,.0f} samples/s"
        )
        if not bar:
            return text
        done = int(BAR_WIDTH * min(self.seen / max(self.samples, 1), 1.0))
        return f"[{'#' * done}{'.' * (BAR_WIDTH - done)}] {text}"


def _on_host(value) -> bool:
    return isinstance(value, (numbers.Number, np.generic))


def _summable(loss):
    """A device loss to add up for an epoch: without its graph (a loss that still requires
    grad would keep every batch's tape alive until a line is drawn), and in float32 at
    least (a float16 sum overflows past 65504)."""
    import fastnn as fnn

    if not isinstance(loss, fnn.Tensor):
        return loss
    loss = loss.detach()
    return loss.to(fnn.float32) if loss.dtype in (fnn.float16, fnn.bfloat16) else loss
