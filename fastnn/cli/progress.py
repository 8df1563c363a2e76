"""A training progress bar: epoch, loss, accuracy, samples/s.

On a terminal it redraws one line per epoch as batches finish; when stdout is
not a terminal (a pipe, a log file, CI) it prints one plain line per epoch and
nothing in between, so logs stay readable.

On a terminal every line is fitted to its width, read at each redraw: a line
that wrapped would leave its first row behind at every redraw (``\\r`` only
returns to the start of the last row). The bar narrows first, then the least
useful fields go; an epoch's final line, drawn once, wraps between its fields
instead. A redraw pads over whatever the previous one left on the row.

A batch's loss and count of right answers may be numbers or 0-d tensors on the
training device: tensors are summed where they are and read back only when a
line is drawn, so a GPU is not made to wait after every batch.
"""

from __future__ import annotations

import numbers
import os
import shutil
import sys
import time

import numpy as np

BAR_WIDTH = 24
MIN_BAR_WIDTH = 8
REDRAW_SECONDS = 0.1  # at most ~10 redraws a second: a terminal write costs more than a batch
SEPARATOR = "  "


def epoch_fields(epoch: int, epochs: int, loss: float, accuracy: float, rate: float) -> list:
    """The parts of a progress line, most important first: epoch, loss, accuracy, rate."""
    digits = len(str(epochs))
    return [f"epoch {epoch:>{digits}}/{epochs}", f"loss {loss:.4f}", f"acc {accuracy:6.2%}",
            f"{rate:>8,.0f} samples/s"]


def live_line(fields: list, fraction: float, width: int | None) -> str:
    """The redrawn line: ``[###...] fields``, fitted into ``width - 1`` columns.

    ``width=None`` means no limit. Never the last column: some terminals wrap as
    soon as it is written. What goes, in order, when the line is too long: bar
    columns down to MIN_BAR_WIDTH, the rate, the bar, then the fields from the
    end; the epoch field alone is cut to fit.
    """
    limit = None if width is None else max(width - 1, 1)
    for shown in (fields, fields[:3]):
        text = SEPARATOR.join(shown)
        room = BAR_WIDTH if limit is None else min(BAR_WIDTH, limit - len(text) - 3)
        if room >= MIN_BAR_WIDTH:
            done = int(room * min(max(fraction, 0.0), 1.0))
            return f"[{'#' * done}{'.' * (room - done)}] {text}"
    for count in (3, 2, 1):
        text = SEPARATOR.join(fields[:count])
        if len(text) <= limit:
            return text
    return text[:limit]


def final_lines(fields: list, width: int | None) -> list:
    """An epoch's final line as rows of at most ``width - 1`` columns; one row with no width.

    A line too long even without the fields' alignment padding is broken between
    fields (continuation rows indented), so nothing is cut off.
    """
    if width is None:
        return [SEPARATOR.join(fields)]
    limit = max(width - 1, 1)
    stripped = [field.strip() for field in fields]  # without the alignment padding
    for shown in (fields, stripped):
        if len(SEPARATOR.join(shown)) <= limit:
            return [SEPARATOR.join(shown)]
    rows: list = []
    for field in stripped:
        if rows and len(rows[-1]) + len(SEPARATOR) + len(field) <= limit:
            rows[-1] += SEPARATOR + field
            continue
        piece = field if not rows else SEPARATOR + field
        if len(piece) > limit:  # a narrow terminal: break inside the field
            rows.extend(piece[i:i + limit] for i in range(0, len(piece), limit))
        else:
            rows.append(piece)
    return rows


def terminal_width(stream) -> int:
    """Columns of the terminal behind ``stream`` (80 when it does not say)."""
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        columns = shutil.get_terminal_size().columns
    return columns if columns > 0 else 80


class Progress:
    """Report training progress for ``epochs`` epochs of ``samples`` samples each.

    Call :meth:`update` after each batch, :meth:`end_epoch` after each epoch,
    and :meth:`close` when training stops early (it ends a half-drawn line).
    ``width`` fixes the terminal's columns (default: asked at every redraw).
    """

    def __init__(self, epochs: int, samples: int, stream=None, interactive: bool | None = None,
                 width: int | None = None):
        self.epochs = epochs
        self.samples = samples
        self.stream = sys.stdout if stream is None else stream
        if interactive is None:
            isatty = getattr(self.stream, "isatty", None)
            interactive = bool(isatty and isatty())
        self.interactive = interactive
        self.width = width
        self._shown = 0  # columns of a redrawn line still on the terminal's current row
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
            width = self._width()
            self._redraw(live_line(self._fields(), self.seen / max(self.samples, 1), width), width)
            self.stream.flush()

    def end_epoch(self, extra: str = "") -> str:
        """Finish the epoch's line (with ``extra``, e.g. held-out accuracy) and return it."""
        fields = self._fields() + ([extra] if extra else [])
        line = SEPARATOR.join(fields)
        if self.interactive:
            width = self._width()
            rows = final_lines(fields, width)
            self._redraw(rows[0], width)
            self.stream.write("\n" + "".join(row + "\n" for row in rows[1:]))
            self._shown = 0
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        return line

    def close(self) -> None:
        """End a redrawn line that an interruption left unfinished (nothing otherwise)."""
        if self._shown:
            self.stream.write("\n")
            self.stream.flush()
            self._shown = 0

    def _redraw(self, line: str, width: int) -> None:
        # pad over the previous draw: a shorter line (a rate with fewer digits) would
        # otherwise leave that line's last characters behind; never into the last column
        self.stream.write("\r" + line.ljust(min(self._shown, width - 1)))
        self._shown = len(line)

    def _width(self) -> int:
        return self.width if self.width is not None else terminal_width(self.stream)

    def _fields(self) -> list:
        return epoch_fields(self.epoch, self.epochs, self.loss, self.accuracy, self.rate)


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
