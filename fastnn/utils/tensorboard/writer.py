"""``SummaryWriter``: a training run's scalars, histograms, images, text, hyperparameters
and precision-recall curves in TensorBoard's event files, as ``torch.utils.tensorboard``'s.
"""

from __future__ import annotations

import os
import socket
import time
from datetime import datetime

import numpy as np
from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from fastnn.utils.tensorboard import summary as pb
from fastnn.utils.tensorboard.hparams import hparams


class FileWriter:
    """One event file in ``log_dir``: events queued and written by TensorBoard's writer
    thread (every ``flush_secs``, or when ``max_queue`` are waiting)."""

    def __init__(self, log_dir, max_queue: int = 10, flush_secs: float = 120,
                 filename_suffix: str = ""):
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs,
                                            filename_suffix)

    def get_logdir(self) -> str:
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None) -> None:
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None) -> None:
        self.add_event(Event(summary=summary), global_step, walltime)

    def flush(self) -> None:
        self.event_writer.flush()

    def close(self) -> None:
        self.event_writer.close()

    def reopen(self) -> None:
        self.event_writer.reopen()


def _unsupported(name: str, why: str):
    def method(self, *args, **kwargs):
        raise NotImplementedError(f"SummaryWriter.{name} is not in fastnn: {why}")

    method.__name__ = name
    method.__doc__ = f"Not in fastnn (raises NotImplementedError): {why}."
    return method


class SummaryWriter:
    """Write a run's summaries to TensorBoard event files in ``log_dir`` (default
    ``runs/<date>_<host><comment>``), as PyTorch's ``SummaryWriter``. Values may be fastnn
    tensors on any device, NumPy arrays or numbers; ``global_step`` and ``walltime``
    (seconds since the epoch, default now) place each one. ``purge_step``: a restarted
    run's first step; TensorBoard hides the earlier run's events from that step on.
    Use as a context manager, or call :meth:`close` (:meth:`flush` writes what is queued)."""

    def __init__(self, log_dir=None, comment: str = "", purge_step=None, max_queue: int = 10,
                 flush_secs: float = 120, filename_suffix: str = ""):
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self.max_queue, self.flush_secs = max_queue, flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer = self.all_writers = None
        self._get_file_writer()
        self.default_bins = pb.tensorflow_bins()

    def _get_file_writer(self) -> FileWriter:
        """The run's own writer (made again after :meth:`close`)."""
        if self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs,
                                          self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                step, self.purge_step = self.purge_step, None
                self.file_writer.add_event(Event(step=step, file_version="brain.Event:2"))
                self.file_writer.add_event(
                    Event(step=step, session_log=SessionLog(status=SessionLog.START)))
        return self.file_writer

    def _add(self, summary, global_step, walltime) -> None:
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def get_logdir(self) -> str:
        return self.log_dir

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None,
                   new_style=False, double_precision=False) -> None:
        self._add(pb.scalar(tag, scalar_value, new_style, double_precision), global_step,
                  walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None) -> None:
        """Several scalars in one chart: each in a run of its own beside this one
        (``<log_dir>/<main_tag>_<tag>``), under the tag ``main_tag``."""
        walltime = time.time() if walltime is None else walltime
        root = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            path = f"{root}/{main_tag.replace('/', '_')}_{tag}"
            writer = self.all_writers.get(path)
            if writer is None:
                writer = self.all_writers[path] = FileWriter(
                    path, self.max_queue, self.flush_secs, self.filename_suffix)
            writer.add_summary(pb.scalar(main_tag, value), global_step, walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None) -> None:
        """A histogram of all of ``values``; ``bins`` as NumPy's (a count, edges or a rule
        such as ``"auto"``), or TensorBoard's own exponential buckets (default)."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._add(pb.histogram(tag, values, bins, max_bins), global_step, walltime)

    def add_histogram_raw(self, tag, min, max, num, sum, sum_squares,  # noqa: A002 (PyTorch's names)
                          bucket_limits, bucket_counts, global_step=None,
                          walltime=None) -> None:
        self._add(pb.histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits,
                                   bucket_counts), global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None,
                  dataformats="CHW") -> None:
        """One image: uint8 in [0, 255], or floats in [0, 1]; ``dataformats`` names its
        dims (CHW, HWC, HW)."""
        self._add(pb.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None,
                   dataformats="NCHW") -> None:
        """A batch of images, shown as one grid (8 to a row)."""
        self._add(pb.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None) -> None:
        """A matplotlib figure (or a list of them, as a grid) rendered to an image."""
        figures = figure if isinstance(figure, list) else [figure]
        images = np.stack([_render(f, close) for f in figures])
        if isinstance(figure, list):
            self.add_images(tag, images, global_step, walltime, dataformats="NCHW")
        else:
            self.add_image(tag, images[0], global_step, walltime, dataformats="CHW")

    def add_text(self, tag, text_string, global_step=None, walltime=None) -> None:
        self._add(pb.text(tag, text_string), global_step, walltime)

    def add_pr_curve(self, tag, labels, predictions, global_step=None, num_thresholds=127,
                     weights=None, walltime=None) -> None:
        self._add(pb.pr_curve(tag, labels, predictions, num_thresholds, weights),
                  global_step, walltime)

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None,
                    run_name=None, global_step=None) -> None:
        """One trial's hyperparameters and final metrics, in a run of its own under this
        one (``run_name``, default the time)."""
        experiment, start, end = hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        path = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=path) as trial:
            for part in (experiment, start, end):
                trial.file_writer.add_summary(part, global_step)
            for name, value in metric_dict.items():
                trial.add_scalar(name, value, global_step)

    add_graph = _unsupported("add_graph", "fastnn has no traced graph in TensorBoard's "
                             "GraphDef format; print(model) shows the module tree")
    add_onnx_graph = _unsupported("add_onnx_graph", "fastnn does not read ONNX")
    add_embedding = _unsupported("add_embedding", "the projector plugin's files are not "
                                 "written; log the vectors with numpy.savetxt")
    add_video = _unsupported("add_video", "video summaries need moviepy; log frames "
                             "with add_images")
    add_audio = _unsupported("add_audio", "audio summaries are not written")
    add_mesh = _unsupported("add_mesh", "mesh summaries are not written")
    add_image_with_boxes = _unsupported("add_image_with_boxes", "boxes are not drawn; draw "
                                        "them into the image and use add_image")
    add_custom_scalars = _unsupported("add_custom_scalars", "custom scalar layouts are not "
                                      "written; add_scalars groups scalars in one chart")

    def flush(self) -> None:
        """Write every queued event to disk."""
        for writer in (self.all_writers or {}).values():
            writer.flush()

    def close(self) -> None:
        for writer in (self.all_writers or {}).values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _render(figure, close: bool) -> np.ndarray:
    """A matplotlib figure's pixels, (3, height, width) uint8."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    rgba = np.asarray(canvas.buffer_rgba())
    if close:
        import matplotlib.pyplot as plt

        plt.close(figure)
    return rgba[:, :, :3].transpose(2, 0, 1).copy()
