"""The progress bar: plain lines off a terminal, a redrawn bar on one."""

import io

from fastnn.cli.progress import Progress


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
    run_epoch(Progress(epochs=3, samples=40, stream=stream, interactive=True))
    text = stream.getvalue()
    # drawn after the first batch and when the epoch is complete (the second is within
    # REDRAW_SECONDS of the first), then the final line
    assert text.count("\n") == 1 and text.count("\r") == 3
    first_draw = text.split("\r")[1]
    assert first_draw.startswith("[" + "#" * 18 + "." * 6 + "]")  # 30 of 40 samples
