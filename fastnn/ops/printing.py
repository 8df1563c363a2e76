"""How tensors print: ``fnn.set_printoptions`` as PyTorch's (precision, threshold,
edgeitems, linewidth, profile, sci_mode), applied by ``Tensor.__repr__``. What is not set
keeps fastnn's defaults (NumPy's formatting, a summary above 50 elements)."""

from __future__ import annotations

import numpy as np

_PROFILES = {"default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
             "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
             "full": dict(precision=4, threshold=np.inf, edgeitems=3, linewidth=80)}
_options: dict = {}  # what set_printoptions set; the rest is fastnn's default
_DEFAULTS = dict(threshold=50)


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
    if sci_mode is not None:
        _options["sci_mode"] = bool(sci_mode)


def format_array(host: np.ndarray, prefix: str) -> str:
    """``host``'s values as the body of a tensor's repr."""
    opts = {**_DEFAULTS, **_options}
    sci = opts.pop("sci_mode", None)
    kwargs = dict(separator=", ", prefix=prefix, threshold=opts["threshold"])
    if "precision" in opts:
        kwargs["precision"] = opts["precision"]
    if "edgeitems" in opts:
        kwargs["edgeitems"] = opts["edgeitems"]
    if "linewidth" in opts:
        kwargs["max_line_width"] = opts["linewidth"]
    if sci is not None and host.dtype.kind == "f":
        kwargs["floatmode"] = "maxprec"
        digits = kwargs.get("precision", 8)
        kwargs["formatter"] = {"float_kind": (lambda v: np.format_float_scientific(
            v, precision=digits, unique=False)) if sci else (lambda v: np.format_float_positional(
                v, precision=digits, trim="-"))}
    return np.array2string(host, **kwargs)
