"""The progress bar: plain lines off a terminal, a redrawn bar on one."""

import io
import re
import types

import pytest

from fastnn.cli import progress as progress_module
from fastnn.cli.progress import (
    BAR_WIDTH,
    MIN_BAR_WIDTH,
    Progress,
    epoch_fields,
    final_lines,
    live_line,
)


def run_epoch(progress):
    progress.begin_epoch(1)
    progress.update(30, loss=2.0, correct=3)
    progress.update(10, loss=1.0, correct=7)
    return progress.end_epoch("held-out acc 50.00%")


def test_plain_lines_when_not_a_terminal():
    stream = io.StringIO()  # StringIO.isatty() is False, like a pipe or a log file
    line = run_epoch(Progress(epochs=3, samples=40, stream=stream))
    assert stream.getvalue() == line + "\n"  # one line per epoch, nothing in between
    assert "\r" not in stream.getvalue()
    # loss is sample-weighted: (30*2 + 10*1) / 40; accuracy 10/40
    assert "epoch 1/3" in line and "loss 1.7500" in line and "acc 25.00%" in line
    assert "samples/s" in line and line.endswith("held-out acc 50.00%")


def test_terminal_redraws_one_line():
    stream = io.StringIO()
    run_epoch(Progress(epochs=3, samples=40, stream=stream, interactive=True, width=200))
    text = stream.getvalue()
    # drawn after the first batch and when the epoch is complete (the second is within
    # REDRAW_SECONDS of the first), then the final line
    assert text.count("\n") == 1 and text.count("\r") == 3
    first_draw = text.split("\r")[1]
    assert first_draw.startswith("[" + "#" * 18 + "." * 6 + "]")  # 30 of 40 samples


class CountingScalar:
    """A stand-in for a 0-d device tensor that counts read-backs (float() and int())."""

    reads = 0

    def __init__(self, value):
        self.value = value

    def __add__(self, other):
        return CountingScalar(self.value + other.value)

    def __mul__(self, factor):
        return CountingScalar(self.value * factor)

    def __float__(self):
        CountingScalar.reads += 1
        return float(self.value)

    def __int__(self):
        CountingScalar.reads += 1
        return int(self.value)


def test_tensor_sums_are_read_back_only_when_a_line_is_drawn():
    CountingScalar.reads = 0
    stream = io.StringIO()
    progress = Progress(epochs=3, samples=40, stream=stream)
    progress.begin_epoch(1)
    for _ in range(4):  # off a terminal nothing is drawn until the epoch ends
        progress.update(10, loss=CountingScalar(2.0), correct=CountingScalar(3))
    assert CountingScalar.reads == 0
    line = progress.end_epoch()
    assert CountingScalar.reads == 2  # one sum of losses, one of right answers
    assert "loss 2.0000" in line and "acc 30.00%" in line


def test_device_tensors_as_the_training_loop_passes_them():
    import numpy as np

    import fastnn as fnn

    progress = Progress(epochs=1, samples=6, stream=io.StringIO())
    progress.begin_epoch(1)
    for loss, right in ((0.5, 2), (1.5, 1)):
        progress.update(3, fnn.tensor(np.float32(loss)), fnn.tensor(np.int64(right)))
    line = progress.end_epoch()
    assert "loss 1.0000" in line and "acc 50.00%" in line


def test_numpy_scalars_count_as_numbers():
    import numpy as np

    progress = Progress(epochs=1, samples=4, stream=io.StringIO())
    progress.begin_epoch(1)
    for loss, right in ((np.float32(0.5), np.True_), (np.float16(1.5), np.True_),
                        (0.5, np.int64(0)), (1.5, np.True_)):  # batches of one sample
        progress.update(1, loss, right)
    line = progress.end_epoch()
    assert "loss 1.0000" in line and "acc 75.00%" in line
    assert type(progress.loss_sum) is float and type(progress.correct) is int


def test_a_host_loss_with_a_device_count():
    import numpy as np

    import fastnn as fnn

    progress = Progress(epochs=1, samples=6, stream=io.StringIO())
    progress.begin_epoch(1)
    progress.update(3, 0.5, fnn.tensor(np.int64(2)))
    progress.update(3, fnn.tensor(np.float32(1.5)), 1)
    line = progress.end_epoch()
    assert "loss 1.0000" in line and "acc 50.00%" in line


def test_a_loss_that_requires_grad_is_summed_without_its_graph_and_float16_in_float32():
    import numpy as np

    import fastnn as fnn

    progress = Progress(epochs=1, samples=2000, stream=io.StringIO())
    progress.begin_epoch(1)
    w = fnn.tensor(np.float32(40000.0), requires_grad=True)
    for _ in range(2):  # two float16 losses of 40000 (x batch 1000) overflow a float16 sum
        loss = (w * 1.0).to(fnn.float16)
        progress.update(1000, loss, fnn.tensor(np.int64(0)))
    assert not progress._pending_loss.requires_grad
    assert progress._pending_loss.dtype == fnn.float32
    assert "loss 40000.0000" in progress.end_epoch()


# ---- lines fitted to the terminal's width -------------------------------------------------


def render(text: str, width: int) -> list:
    """The rows a terminal of ``width`` columns shows after ``text``: a reference model of
    one (``\r`` to column 0, ``\n`` to the next row, and a character past the last column
    wraps to a new row, as xterm and tmux do)."""
    rows, row, col = [[]], 0, 0
    for char in text:
        if char == "\r":
            col = 0
        elif char == "\n":
            row, col = row + 1, 0
        else:
            if col == width:
                row, col = row + 1, 0
            while len(rows) <= row:
                rows.append([])
            line = rows[row]
            line.extend(" " * (col + 1 - len(line)))
            line[col] = char
            col += 1
        while len(rows) <= row:
            rows.append([])
    return ["".join(r).rstrip() for r in rows]


WIDE_FIELDS = [  # the widest values: 6-digit epochs, 100% accuracy, a huge rate
    epoch_fields(123456, 999999, 12.3456, 1.0, 123_456_789.0),
    epoch_fields(3, 20, 0.1234, 0.95, 12_345.0),
]


@pytest.mark.parametrize("width", [40, 80, 200])
@pytest.mark.parametrize("fields", WIDE_FIELDS, ids=["wide", "usual"])
def test_live_line_fits_and_shows_whole_fields(width, fields):
    for fraction in (0.0, 0.5, 1.0):
        line = live_line(fields, fraction, width)
        assert len(line) <= width - 1  # never the last column: no wrap, no cut-off row
        bar = re.match(r"\[(#*)(\.*)\] ", line)
        text = line[bar.end():] if bar else line
        # the most important fields, each complete, in order
        shown = [k for k in range(1, 5) if "  ".join(fields[:k]) == text]
        assert shown, (line, fields)
        if bar:
            done, todo = len(bar.group(1)), len(bar.group(2))
            assert MIN_BAR_WIDTH <= done + todo <= BAR_WIDTH
            assert done == int((done + todo) * fraction)
        if width == 200:  # room for everything
            assert len(bar.group(0)) == BAR_WIDTH + 3 and shown == [4]
        if width == 40:  # three fields at most fit, without the bar
            assert not bar and shown[0] >= 2


def test_live_line_gives_way_in_order():
    fields = epoch_fields(3, 20, 0.1234, 0.95, 12_345.0)
    full = "  ".join(fields)
    assert live_line(fields, 0.5, 200) == "[" + "#" * 12 + "." * 12 + "] " + full
    narrow = live_line(fields, 0.5, len(full) + 3 + MIN_BAR_WIDTH + 1)
    assert narrow == "[" + "#" * 4 + "." * 4 + "] " + full  # the bar narrows first
    assert live_line(fields, 0.5, 40) == "  ".join(fields[:3])  # then the rate, the bar
    assert live_line(fields, 0.5, 20) == fields[0]
    assert live_line(fields, 0.5, None).endswith(full)


@pytest.mark.parametrize("width", [40, 80, 200])
@pytest.mark.parametrize("fields", WIDE_FIELDS, ids=["wide", "usual"])
def test_final_lines_fit_and_break_between_fields(width, fields):
    fields = fields + ["held-out acc 96.00%"]
    rows = final_lines(fields, width)
    assert all(len(row) <= width - 1 for row in rows)
    # every field whole, in order, none split across rows: each row is a run of fields
    remaining = [field.strip() for field in fields]
    for row in rows:
        runs = [k for k in range(1, len(remaining) + 1)
                if row.strip() in ("  ".join(remaining[:k]), "  ".join(fields[:k]))]
        assert runs, (row, remaining)
        remaining = remaining[runs[0]:]
    assert remaining == []
    assert len(rows) == 1 if width == 200 else len(rows) >= 1
    assert final_lines(fields, None) == ["  ".join(fields)]


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def perf_counter(self):
        return self.now


@pytest.mark.parametrize("width", [40, 80, 200])
def test_redraws_leave_no_stray_text_on_a_terminal(width, monkeypatch):
    """The first draw of an epoch shows a huge rate (few samples in no time); a later,
    shorter draw must not leave the tail of the longer one (``samples/ss``)."""
    clock = FakeClock()
    monkeypatch.setattr(progress_module, "time", types.SimpleNamespace(
        perf_counter=clock.perf_counter))
    stream = io.StringIO()
    progress = Progress(epochs=12, samples=100, stream=stream, interactive=True, width=width)
    for epoch in (1, 2):
        progress.begin_epoch(epoch)
        for step, seconds in enumerate((1e-6, 0.2, 0.4, 3.0)):
            clock.now += seconds
            progress.update(25, loss=10.0 ** (1 - step), correct=25)  # loss 10.0 then 1.0
        progress.end_epoch("held-out acc 96.00%")
    rows = render(stream.getvalue(), width)
    assert rows[-1] == ""  # the cursor is on a fresh row
    finals = [row for row in rows if row]
    joined = " ".join(finals)
    for epoch in (1, 2):
        assert re.search(rf"epoch +{epoch}/12 +loss 2\.7775 +acc 100\.00% .*samples/s", joined)
    assert all(re.fullmatch(r"(epoch|  )[\w ./%,-]*[\d%s]", row) for row in finals), finals
    assert "samples/ss" not in joined and "%s" not in joined
    if width >= 80:
        assert len(finals) == 2  # one row per epoch
    assert all(len(row) < width for row in rows)


def test_close_ends_a_half_drawn_line():
    stream = io.StringIO()
    progress = Progress(epochs=3, samples=40, stream=stream, interactive=True, width=80)
    progress.begin_epoch(1)
    progress.close()
    assert stream.getvalue() == ""  # nothing drawn yet: nothing to end
    progress.update(10, loss=1.0, correct=1)
    progress.close()
    assert stream.getvalue().endswith("\n") and stream.getvalue().count("\n") == 1
    progress.close()
    assert stream.getvalue().count("\n") == 1
