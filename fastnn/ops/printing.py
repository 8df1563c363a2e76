"""How tensors print, as PyTorch prints them: ``fnn.set_printoptions`` (precision,
threshold, edgeitems, linewidth, profile, sci_mode) and ``Tensor.__repr__``
(:func:`tensor_repr`).

One format for all of a tensor's values (PyTorch's): floats with ``precision`` digits
after the point (``1.5000``), or as ``1.`` when every finite value is a whole number, or
in scientific notation (``1.0000e+05``) when the nonzero finite magnitudes span more
than 1000x, pass 1e8 or fall under 1e-4 (``sci_mode`` forces either); every value right
aligned to the widest; rows wrapped at ``linewidth``; above ``threshold`` values, only
``edgeitems`` at each end of each axis, with ``...`` between.
"""

from __future__ import annotations

import math

import numpy as np

from fastnn.api import dtypes

_PROFILES = {"default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
             "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
             "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80)}
_options: dict = {}  # what set_printoptions set; the rest is the default profile


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None) -> None:
    """Set how tensors print, as ``torch.set_printoptions``: ``profile`` ("default",
    "short", "full") first, then each option given; ``sci_mode`` True/False forces or
    forbids scientific notation (None: automatic)."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: profile must be one of {sorted(_PROFILES)}, "
                             f"got {profile!r}")
        _options.clear()
        _options.update(_PROFILES[profile])
    for name, value in (("precision", precision), ("threshold", threshold),
                        ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            _options[name] = value
    _options["sci_mode"] = None if sci_mode is None else bool(sci_mode)


def _opts() -> dict:
    return {**_PROFILES["default"], "sci_mode": None, **_options}


class _Format:
    """One tensor's value format: decided from its (shown) values, applied to each."""

    def __init__(self, shown: np.ndarray, opts: dict):
        self.floats = shown.dtype.kind in "fc"
        self.precision = opts["precision"]
        self.sci = False
        self.whole = self.floats  # (no nonzero finite value: 0. and nan, as PyTorch's)
        self.width = 1
        if not self.floats:
            for value in shown.reshape(-1).tolist():
                self.width = max(self.width, len(str(value)))
            return
        flat = shown.reshape(-1).astype(np.float64)
        values = flat[np.isfinite(flat) & (flat != 0)]
        if not values.size:
            return
        size = np.abs(values)
        low, high = float(size.min()), float(size.max())
        self.whole = bool((values == np.ceil(values)).all())
        sci = opts["sci_mode"]
        self.sci = (high / low > 1000.0 or high > 1.0e8 or low < 1.0e-4) if sci is None \
            else sci
        texts = [self._text(v) for v in values.tolist()]
        # (a whole float gains its point: the width counts it)
        self.width = max(len(t) for t in texts)

    def _text(self, value: float) -> str:
        if self.sci:
            return f"{value:.{self.precision}e}"
        if self.whole:
            text = f"{value:.0f}"
            return text if math.isinf(value) or math.isnan(value) else text + "."
        return f"{value:.{self.precision}f}"

    def __call__(self, value) -> str:
        text = self._text(float(value)) if self.floats else str(value)
        return text.rjust(self.width)


def _shown(host: np.ndarray, edge: int) -> np.ndarray:
    """The values a summarised print shows: ``edge`` at each end of every long axis."""
    for axis, n in enumerate(host.shape):
        if n > 2 * edge:
            keep = list(range(edge)) + list(range(n - edge, n))
            host = np.take(host, keep, axis=axis)
    return host


def _rows(host, indent: int, summarize: bool, fmt: _Format, opts: dict) -> str:
    edge = opts["edgeitems"]
    if host.ndim == 0:
        return fmt(host.item())
    n = host.shape[0]
    cut = summarize and n > 2 * edge
    if host.ndim == 1:
        if summarize and not edge:
            items = ["..."]
        elif cut:
            items = ([fmt(v) for v in host[:edge].tolist()] + [" ..."]
                     + [fmt(v) for v in host[n - edge:].tolist()])
        else:
            items = [fmt(v) for v in host.tolist()]
        per_line = max(1, math.floor((opts["linewidth"] - indent) / (fmt.width + 2)))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"
    picks = (list(range(edge)) + [None] + list(range(n - edge, n))) if cut else range(n)
    parts = ["..." if i is None else _rows(host[i], indent + 1, summarize, fmt, opts)
             for i in picks]
    return "[" + ("," + "\n" * (host.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def format_array(host: np.ndarray, prefix: str) -> str:
    """``host``'s values as the body of a tensor's repr that starts with ``prefix``."""
    opts = _opts()
    if host.dtype.name == "bfloat16":  # ml_dtypes' (NumPy formats it as an odd kind)
        host = host.astype(np.float32)
    if host.size == 0:
        return "[]"
    summarize = host.size > opts["threshold"]
    fmt = _Format(_shown(host, opts["edgeitems"]) if summarize else host, opts)
    return _rows(host, len(prefix), summarize, fmt, opts)


def tensor_repr(t) -> str:
    """``repr(t)`` as PyTorch prints it: the values, then device and dtype where they are
    not the defaults (cpu; the default float dtype, int64 and bool, or that float alone for
    an empty tensor, which also shows its size unless it is a vector), then grad_fn or
    requires_grad."""
    host = t.numpy()
    extra = []
    if t._device.type != "cpu" or t._device.index:
        extra.append(f"device='{t._device}'")
    if not host.size and host.ndim != 1:
        extra.append(f"size={tuple(t.shape)}")
    default = dtypes.get_default_dtype().name  # float32 unless set_default_dtype
    if t._dtype.name not in ((default, "int64", "bool") if host.size else (default,)):
        extra.append(f"dtype={t._dtype.name}")
    if t._node is not None:
        extra.append(f"grad_fn=<{t._node.name()}>")
    elif t.requires_grad:
        extra.append("requires_grad=True")
    return with_suffixes("tensor(" + format_array(host, "tensor("), extra, len("tensor("))


def with_suffixes(text: str, suffixes: list, indent: int) -> str:
    """``text`` (``tensor([...``) closed with ``suffixes`` (dtype=, grad_fn=...): each
    after ", " on the last line, or on a line of its own past ``linewidth``."""
    width = _opts()["linewidth"]
    parts = [text]
    last = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last + len(suffix) + 2 > width:
            parts.append(",\n" + " " * indent + suffix)
            last = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last += len(suffix) + 2
    return "".join(parts) + ")"
