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
