"""fastnn.utils.tensorboard: the event files SummaryWriter writes, read back with
TensorBoard's own loader, against PyTorch's SummaryWriter given the same calls (where
PyTorch is installed) and against values computed here with NumPy."""

from __future__ import annotations

import glob
import io
import os

import numpy as np
import pytest

import fastnn as fnn

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader  # noqa: E402
from tensorboard.compat.proto.event_pb2 import Event  # noqa: E402
from tensorboard.plugins.hparams import plugin_data_pb2  # noqa: E402

from fastnn.utils.tensorboard import SummaryWriter  # noqa: E402

RNG = np.random.default_rng(0)
IMAGE = RNG.random((3, 6, 5)).astype(np.float32)
BATCH = RNG.random((3, 1, 4, 4)).astype(np.float32)
VALUES = RNG.normal(size=500).astype(np.float32)
LABELS = RNG.integers(0, 2, 40)
SCORES = RNG.random(40)


def _log(writer_class, tensor, root):
    """The same calls through either library's writer (``tensor``: its tensor maker)."""
    with writer_class(root) as w:
        w.add_scalar("loss", tensor(np.float32(0.25)), 3, walltime=1.0)
        w.add_scalar("plain", 7, 4, walltime=1.0)
        w.add_scalar("double", 0.1, 5, walltime=1.0, new_style=True, double_precision=True)
        w.add_histogram("weights", tensor(VALUES), 2, walltime=1.0)
        w.add_histogram("few", tensor(VALUES), 2, bins=10, walltime=1.0, max_bins=4)
        w.add_image("image", tensor(IMAGE), 1, walltime=1.0)
        w.add_image("hwc", tensor(IMAGE.transpose(1, 2, 0)), 1, walltime=1.0,
                    dataformats="HWC")
        w.add_images("batch", tensor(BATCH), 1, walltime=1.0)
        w.add_text("note", "**lr** 0.1", 0, walltime=1.0)
        w.add_scalars("curves", {"train": 1.0, "test": 2.0}, 6, walltime=1.0)
        w.add_pr_curve("pr", tensor(LABELS), tensor(SCORES), 0, walltime=1.0)
        w.add_hparams({"lr": 0.1, "opt": "adam", "flag": True, "layers": 3},
                      {"hp/acc": 0.9}, run_name="trial")


def _load(path) -> list:
    """The events of one file as written (TensorBoard's own loader would migrate old
    summary kinds to tensors)."""
    return [Event.FromString(record) for record in RawEventFileLoader(path).Load()]


def _events(root) -> dict:
    """{run folder relative to root: [(step, tag, what)]} with each value made comparable."""
    runs = {}
    for path in sorted(glob.glob(os.path.join(root, "**", "events.out.tfevents.*"),
                                 recursive=True)):
        run = os.path.relpath(os.path.dirname(path), root)
        found = runs.setdefault(run, [])
        for event in _load(path):
            for value in event.summary.value:
                found.append((event.step, value.tag, _what(value)))
    return runs


def _what(value):
    kind = value.WhichOneof("value")
    plugin = value.metadata.plugin_data.plugin_name
    if kind == "simple_value":
        return ("simple", value.simple_value)
    if kind == "histo":
        h = value.histo
        return ("histo", h.min, h.max, h.num, h.sum, h.sum_squares, list(h.bucket_limit),
                list(h.bucket))
    if kind == "image":
        from PIL import Image

        pixels = np.asarray(Image.open(io.BytesIO(value.image.encoded_image_string)))
        return ("image", value.image.height, value.image.width, value.image.colorspace,
                pixels)
    if plugin == "hparams":
        data = plugin_data_pb2.HParamsPluginData.FromString(value.metadata.plugin_data.content)
        return ("hparams", str(data))
    tensor = value.tensor
    return ("tensor", plugin, tensor.dtype, list(tensor.float_val), list(tensor.double_val),
            list(tensor.string_val), [d.size for d in tensor.tensor_shape.dim])


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    if isinstance(a, float) and isinstance(b, float):
        return np.isclose(a, b, rtol=1e-6, atol=1e-12)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


@pytest.fixture
def written(tmp_path):
    _log(SummaryWriter, fnn.tensor, str(tmp_path / "fastnn"))
    return _events(str(tmp_path / "fastnn"))


def test_same_events_as_pytorch(tmp_path, written):
    torch = pytest.importorskip("torch")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    _log(TorchWriter, torch.tensor, str(tmp_path / "torch"))
    theirs = _events(str(tmp_path / "torch"))
    assert sorted(written) == sorted(theirs)
    for run in theirs:
        assert len(written[run]) == len(theirs[run]), run
        for ours, expected in zip(written[run], theirs[run]):
            if expected[1] == "_hparams_/experiment":  # (its creation time differs)
                ours, expected = ours[:2], expected[:2]
            assert _same(ours, expected), (run, ours, expected)


def test_values_against_numpy(written):
    main = {tag: (step, what) for step, tag, what in written["."]}
    assert main["loss"] == (3, ("simple", 0.25))
    assert main["double"][1][4] == [0.1]
    _, low, high, num, total, squares, limits, counts = main["weights"][1]
    values = VALUES.astype(np.float64)
    assert (low, high, num) == (values.min(), values.max(), 500)
    assert np.isclose(total, values.sum()) and np.isclose(squares, values @ values)
    assert sum(counts) == 500 and len(limits) == len(counts)
    assert limits[0] <= values.min() and limits[-1] >= values.max()
    # the image: floats times 255, truncated to uint8, as HWC, decoded from the PNG
    kind, height, width, channels, pixels = main["image"][1]
    expected = (IMAGE.transpose(1, 2, 0) * 255).clip(0, 255).astype(np.uint8)
    assert (height, width, channels) == (6, 5, 3) and np.array_equal(pixels, expected)
    assert np.array_equal(main["hwc"][1][4], expected)
    # three grey images in one row of a grid, made RGB
    grid = main["batch"][1][4]
    assert grid.shape == (4, 12, 3)
    assert np.array_equal(grid[:, 4:8, 1], (BATCH[1, 0] * 255).astype(np.uint8))
    assert main["note/text_summary"][1][5] == [b"**lr** 0.1"]
    # the pr curve at threshold 0 counts every positive as found
    tp, fp, tn, fn, precision, recall = np.reshape(main["pr"][1][3], (6, 127))
    assert (tp[0], fp[0]) == (LABELS.sum(), len(LABELS) - LABELS.sum())
    assert tn[0] == 0 and fn[0] == 0 and recall[0] == 1.0
    above = SCORES >= 0.5  # bucket 63 of 127 holds the scores from 63/126 on
    assert tp[63] == (LABELS[above] == 1).sum() and fp[63] == (LABELS[above] == 0).sum()
    assert [step for step, _, _ in written["curves_train"]] == [6]
    assert written["curves_test"][0][2] == ("simple", 2.0)
    trial = {tag: what for _, tag, what in written["trial"]}
    assert trial["hp/acc"] == ("simple", pytest.approx(0.9))
    assert "adam" in trial["_hparams_/session_start_info"][1]


def test_purge_step_and_default_logdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with SummaryWriter(comment="_lr0.1", purge_step=5) as w:
        w.add_scalar("x", 1.0, 5)
        root = w.get_logdir()
    assert root.startswith("runs" + os.sep) and root.endswith("_lr0.1")
    events = _load(glob.glob(os.path.join(root, "events.*"))[0])
    assert any(e.session_log.status == e.session_log.START and e.step == 5 for e in events)


def test_tensors_that_need_grad_and_devices(tmp_path):
    w = SummaryWriter(str(tmp_path))
    x = fnn.ones(3, requires_grad=True)
    w.add_histogram("param", x * 2, 0)
    w.add_scalar("norm", (x * x).sum(), 0)
    w.close()
    values = {tag: what for _, tag, what in _events(str(tmp_path))["."]}
    assert values["norm"] == ("simple", 3.0) and values["param"][3] == 3


@pytest.mark.parametrize("call, error, words", [
    (lambda w: w.add_scalar("v", fnn.ones(3)), ValueError, "needs one value"),
    (lambda w: w.add_image("i", fnn.ones(3, 4, 4), dataformats="CHWN"), ValueError, "names 4"),
    (lambda w: w.add_image("i", fnn.ones(4, 4), dataformats="HH"), ValueError, "each once"),
    (lambda w: w.add_histogram("h", fnn.ones(0)), ValueError, "no values"),
    (lambda w: w.add_histogram_raw("h", 0, 1, 1, 1, 1, [1, 2], [1]), ValueError, "bucket"),
    (lambda w: w.add_hparams({"lr": [0.1]}, {}), ValueError, "must be int"),
    (lambda w: w.add_hparams([1], {}), TypeError, "dicts"),
    (lambda w: w.add_graph(fnn.nn.Linear(2, 2), fnn.ones(1, 2)), NotImplementedError,
     "add_graph"),
    (lambda w: w.add_embedding(fnn.ones(3, 2)), NotImplementedError, "add_embedding"),
])
def test_bad_input_raises_clearly(tmp_path, call, error, words):
    with SummaryWriter(str(tmp_path)) as w:
        with pytest.raises(error, match=words):
            call(w)


def test_reopens_after_close(tmp_path):
    w = SummaryWriter(str(tmp_path))
    w.add_scalar("a", 1.0, 0)
    w.close()
    w.add_scalar("a", 2.0, 1)  # as PyTorch's: a closed writer starts a new event file
    w.close()
    values = [what for _, _, what in _events(str(tmp_path))["."]]
    assert len(glob.glob(str(tmp_path / "events.*"))) == 2
    assert values == [("simple", 1.0), ("simple", 2.0)]


def test_figure_as_pytorch(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def draw():
        figure = plt.figure(figsize=(2, 1.5), dpi=40)
        plt.plot([0, 1, 2], [2, 0, 1])
        return figure

    with SummaryWriter(str(tmp_path / "fastnn")) as w:
        w.add_figure("one", draw(), 0, walltime=1.0)
        w.add_figure("two", [draw(), draw()], 0, walltime=1.0)
    ours = {tag: what for _, tag, what in _events(str(tmp_path / "fastnn"))["."]}
    assert ours["one"][1:4] == (60, 80, 3) and ours["two"][1:4] == (60, 160, 3)
    assert np.array_equal(ours["two"][4][:, :80], ours["one"][4])  # the grid's first cell
    assert ours["one"][4].min() < 100 < ours["one"][4].max()  # a line on a white canvas
    torch = pytest.importorskip("torch")  # noqa: F841
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    with TorchWriter(str(tmp_path / "torch")) as w:
        w.add_figure("one", draw(), 0, walltime=1.0)
        w.add_figure("two", [draw(), draw()], 0, walltime=1.0)
    theirs = {tag: what for _, tag, what in _events(str(tmp_path / "torch"))["."]}
    for tag in ("one", "two"):
        assert _same(ours[tag], theirs[tag]), tag
