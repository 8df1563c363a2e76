"""TensorBoard's summary protocol buffers built from tensors, arrays and numbers.

Each function returns one ``Summary`` that :class:`~fastnn.utils.tensorboard.SummaryWriter`
files under a step: what ``torch.utils.tensorboard`` writes for the same call (tags,
plugin names, the histogram's buckets, the images' scaling), so TensorBoard shows a
fastnn run as it shows a PyTorch one.
"""

from __future__ import annotations

import io

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.pr_curve.plugin_data_pb2 import PrCurvePluginData
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData


def as_numpy(value) -> np.ndarray:
    """A host NumPy array of a tensor (any device, detached), an array, or numbers."""
    if hasattr(value, "detach") and hasattr(value, "numpy"):
        return np.asarray(value.detach().cpu().numpy())
    if isinstance(value, (list, tuple)):
        return np.asarray([as_numpy(v) for v in value])
    return np.asarray(value)


def _plugin(name: str, content: bytes = b"") -> SummaryMetadata:
    return SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=name,
                                                                  content=content))


def _shape(*sizes) -> TensorShapeProto:
    return TensorShapeProto(dim=[TensorShapeProto.Dim(size=n) for n in sizes])


def scalar(tag: str, value, new_style: bool = False, double_precision: bool = False) -> Summary:
    """One number (a one-element tensor or array, or a Python number)."""
    array = as_numpy(value).squeeze()
    if array.ndim != 0:
        raise ValueError(f"add_scalar: {tag!r} needs one value, got {array.size} (shape "
                         f"{array.shape}); log a tensor's statistic, e.g. x.mean().item(), "
                         f"or use add_histogram for all of it")
    number = float(array)
    if not new_style:
        return Summary(value=[Summary.Value(tag=tag, simple_value=number)])
    tensor = (TensorProto(double_val=[number], dtype="DT_DOUBLE") if double_precision
              else TensorProto(float_val=[number], dtype="DT_FLOAT"))
    return Summary(value=[Summary.Value(tag=tag, tensor=tensor, metadata=_plugin("scalars"))])


def tensorflow_bins() -> list:
    """The default bucket edges of ``add_histogram`` (``bins="tensorflow"``): +-1e-12
    growing by 10% to 1e20, and 0, as TensorBoard's own histograms."""
    edges, v = [], 1e-12
    while v < 1e20:
        edges.append(v)
        v *= 1.1
    return [-e for e in reversed(edges)] + [0.0] + edges


def histogram(tag: str, values, bins, max_bins=None) -> Summary:
    """A histogram of all of ``values`` with NumPy's ``bins`` (edges, a count or a rule),
    kept to the bins that hold values (TensorBoard reads each bucket's right edge, so
    one empty bucket is kept on the left), at most ``max_bins`` by merging neighbours."""
    flat = as_numpy(values).astype(float).reshape(-1)
    if flat.size == 0:
        raise ValueError(f"add_histogram: {tag!r} has no values")
    counts, edges = np.histogram(flat, bins=bins)
    if max_bins is not None and counts.size > max_bins:
        group = counts.size // max_bins
        pad = -counts.size % group
        counts = np.pad(counts, (0, pad)).reshape(-1, group).sum(axis=1)
        edges = np.append(edges[:-1:group], edges[-1])
    held = np.flatnonzero(counts)
    if held.size == 0:
        raise ValueError(f"add_histogram: no value of {tag!r} falls in the bins (NaN or out "
                         f"of their range); give bins that cover the values")
    first, last = int(held[0]), int(held[-1]) + 1
    if first > 0:  # the bucket left of the first value's: its right edge is the left limit
        counts, edges = counts[first - 1:last], edges[first:last + 1]
    else:
        counts, edges = np.concatenate([[0], counts[:last]]), edges[:last + 1]
    return histogram_raw(tag, flat.min(), flat.max(), flat.size, flat.sum(),
                         float(flat @ flat), edges.tolist(), counts.tolist())


def histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts):  # noqa: A002 (PyTorch's names)
    if len(bucket_limits) != len(bucket_counts):
        raise ValueError(f"add_histogram_raw: {len(bucket_limits)} bucket_limits but "
                         f"{len(bucket_counts)} bucket_counts; give one limit per count")
    proto = HistogramProto(min=float(min), max=float(max), num=float(num), sum=float(sum),
                           sum_squares=float(sum_squares),
                           bucket_limit=[float(x) for x in bucket_limits],
                           bucket=[float(x) for x in bucket_counts])
    return Summary(value=[Summary.Value(tag=tag, histo=proto)])


def grid(images: np.ndarray, ncols: int = 8) -> np.ndarray:
    """N images (N, C, H, W) with C 1 or 3 laid out in rows of ``ncols``: (3, H*rows, W*cols)."""
    if images.ndim != 4 or images.shape[1] not in (1, 3):
        raise ValueError(f"add_images: expected images with 1 or 3 channels, got shape "
                         f"{images.shape} after dataformats")
    if images.shape[1] == 1:
        images = np.repeat(images, 3, axis=1)
    n, _, h, w = images.shape
    cols = min(n, ncols)
    rows = -(-n // cols)
    canvas = np.zeros((3, h * rows, w * cols), images.dtype)
    for i, image in enumerate(images):
        r, c = divmod(i, cols)
        canvas[:, r * h:(r + 1) * h, c * w:(c + 1) * w] = image
    return canvas


def to_hwc(array: np.ndarray, dataformats: str) -> np.ndarray:
    """An image (or a batch, laid out as a grid) as height x width x channels, grey
    made RGB."""
    layout = dataformats.upper()
    if len(set(layout)) != len(layout) or not set(layout) <= set("NCHW"):
        raise ValueError(f"dataformats {dataformats!r}: letters from N, C, H, W, each once")
    if array.ndim != len(layout):
        raise ValueError(f"dataformats {dataformats!r} names {len(layout)} dims but the "
                         f"image has shape {array.shape}")
    if len(layout) == 4:
        return grid(array.transpose([layout.index(c) for c in "NCHW"])).transpose(1, 2, 0)
    if len(layout) == 3:
        if "C" not in layout or "N" in layout:
            raise ValueError(f"dataformats {dataformats!r}: a 3-d image is CHW, HWC or alike")
        hwc = array.transpose([layout.index(c) for c in "HWC"])
        return np.repeat(hwc, 3, axis=2) if hwc.shape[2] == 1 else hwc
    if layout not in ("HW", "WH"):
        raise ValueError(f"dataformats {dataformats!r}: a 2-d image is HW")
    hw = array.transpose([layout.index(c) for c in "HW"])
    return np.stack([hw, hw, hw], axis=2)


def image(tag: str, values, dataformats: str = "CHW", rescale: float = 1) -> Summary:
    """A PNG of an image: uint8 values as they are, others (floats in [0, 1]) times 255,
    clipped to [0, 255]."""
    from PIL import Image  # tensorboard's install brings Pillow

    array = as_numpy(values)
    hwc = to_hwc(array, dataformats)
    scale = 1 if hwc.dtype == np.uint8 else 255
    pixels = (hwc.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    height, width, channels = pixels.shape
    picture = Image.fromarray(pixels)
    if rescale != 1:
        picture = picture.resize((int(width * rescale), int(height * rescale)),
                                 Image.Resampling.LANCZOS)
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    proto = Summary.Image(height=height, width=width, colorspace=channels,
                          encoded_image_string=buffer.getvalue())
    return Summary(value=[Summary.Value(tag=tag, image=proto)])


def text(tag: str, string: str) -> Summary:
    """A text (markdown) value, under ``tag + "/text_summary"`` as PyTorch files it."""
    tensor = TensorProto(dtype="DT_STRING", string_val=[string.encode("utf-8")],
                         tensor_shape=_shape(1))
    metadata = _plugin("text", TextPluginData(version=0).SerializeToString())
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=metadata,
                                        tensor=tensor)])


def pr_curve(tag: str, labels, predictions, num_thresholds: int = 127,
             weights=None) -> Summary:
    """A precision-recall curve: true/false positives and negatives, precision and recall
    at ``num_thresholds`` (at most 127) evenly spaced thresholds over [0, 1]."""
    n = min(int(num_thresholds), 127)
    labels = as_numpy(labels).astype(np.float64).reshape(-1)
    scores = as_numpy(predictions).astype(np.float64).reshape(-1)
    weight = 1.0 if weights is None else as_numpy(weights).astype(np.float64).reshape(-1)
    bucket = np.floor(scores * (n - 1)).astype(np.int32)
    positive, _ = np.histogram(bucket, bins=n, range=(0, n - 1), weights=labels * weight)
    negative, _ = np.histogram(bucket, bins=n, range=(0, n - 1),
                               weights=(1.0 - labels) * weight)
    tp = np.cumsum(positive[::-1])[::-1]  # at threshold k: the scores in buckets >= k
    fp = np.cumsum(negative[::-1])[::-1]
    tn, fn = fp[0] - fp, tp[0] - tp
    precision = tp / np.maximum(1e-7, tp + fp)
    recall = tp / np.maximum(1e-7, tp + fn)
    data = np.stack((tp, fp, tn, fn, precision, recall))
    tensor = TensorProto(dtype="DT_FLOAT", float_val=data.reshape(-1).tolist(),
                         tensor_shape=_shape(*data.shape))
    metadata = _plugin("pr_curves",
                       PrCurvePluginData(version=0, num_thresholds=n).SerializeToString())
    return Summary(value=[Summary.Value(tag=tag, metadata=metadata, tensor=tensor)])
