"""Checkpoints: ``fnn.save(state, path)`` and ``fnn.load(path)`` in safetensors, never pickle.

``state`` is a nested dict (string keys) whose leaves are arrays (NumPy arrays
or fastnn Tensors) or plain values (numbers, strings, bools, None, and lists
or tuples of those), at most ``MAX_DEPTH`` levels deep. Arrays become
safetensors tensors named by their key path joined with ``/`` (so
``{"model": {"0.weight": w}}`` stores ``model/0.weight``); everything else, and
the shape of the nesting, goes into the file's metadata as JSON under
``"fastnn"``. ``load`` rebuilds the same nesting with NumPy arrays (tuples come
back as lists).

The file is written and read by :mod:`fastnn.checkpoint_format`, which adds a
CRC-32 of every tensor and of the header to the metadata (other safetensors
readers still read the file) and checks the header against the file's size
before it reads anything else. Writes are atomic (:mod:`fastnn.checkpoint_files`):
a temp file beside the target, fsynced and renamed over it; the temp files of
killed writers are removed by the next save to the same place, and a
write-protected checkpoint is refused as ``open()`` would refuse it.

A plain safetensors file without fastnn metadata loads as a flat dict
``name -> array``, and one without checksums (older fastnn, other tools) loads
unverified. A file that is truncated, corrupt or not safetensors at all raises
ValueError naming the path.
"""

from __future__ import annotations

import json
import os

import numpy as np

from fastnn import checkpoint_format
from fastnn.checkpoint_files import atomic_write

SEP = "/"
FORMAT = "fastnn.checkpoint"
VERSION = 1
MAX_DEPTH = 100  # levels of nesting; deeper is a mistake (or a dict that holds itself)
_META_KEY = "fastnn"


def _flatten(node, prefix: str, tensors: dict, depth: int):
    """Split ``node`` into tensors (added to ``tensors``) and a JSON skeleton (returned)."""
    from fastnn.ops.tensor import Tensor

    if depth > MAX_DEPTH:
        raise ValueError(f"save: state nests deeper than {MAX_DEPTH} levels at "
                         f"{prefix[:200]}...; does a dict or list contain itself?")
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if not isinstance(key, str):
                raise TypeError(
                    f"save: keys must be strings, got {key!r} ({type(key).__name__}) at "
                    f"{prefix or '<root>'}; convert it with str()"
                )
            if SEP in key:
                raise ValueError(f"save: key {key!r} contains {SEP!r}, which separates levels; "
                                 "rename it")
            out[key] = _flatten(value, f"{prefix}{SEP}{key}" if prefix else key, tensors,
                                depth + 1)
        return {"d": out}
    if isinstance(node, Tensor):
        node = node.numpy()
    if isinstance(node, np.ndarray):
        if checkpoint_format.dtype_code(node) is None:
            raise TypeError(
                f"save: cannot store {prefix}: {node.dtype} arrays (safetensors holds bool, "
                "(u)int8 to (u)int64, float16, float32, float64 and complex64); convert it "
                "with .astype()")
        tensors[prefix] = checkpoint_format.little_endian(node)
        return {"t": prefix}
    if isinstance(node, np.generic):
        node = node.item()
    if node is None or isinstance(node, (bool, int, float, str)):
        return {"v": node}
    if isinstance(node, (list, tuple)):
        return {"l": [_flatten(v, f"{prefix}{SEP}{i}", tensors, depth + 1)
                      for i, v in enumerate(node)]}
    hint = "; save its .state_dict() instead" if hasattr(node, "state_dict") else ""
    raise TypeError(
        f"save: cannot store {type(node).__name__} at {prefix or '<root>'}; leaves must be "
        f"arrays, tensors, numbers, strings, bools, None or lists of those{hint}"
    )


def _unflatten(skeleton, tensors: dict, depth: int):
    if depth > MAX_DEPTH:
        raise RecursionError  # reported as too deep by load
    if not isinstance(skeleton, dict) or len(skeleton) != 1:
        raise ValueError(f"a tree node is {str(skeleton)[:80]!r}, not one of d, t, l, v")
    if "d" in skeleton:
        return {k: _unflatten(v, tensors, depth + 1) for k, v in skeleton["d"].items()}
    if "t" in skeleton:
        return tensors[skeleton["t"]]
    if "l" in skeleton:
        return [_unflatten(v, tensors, depth + 1) for v in skeleton["l"]]
    return skeleton["v"]


def _path(owner: str, path) -> str:
    try:
        return os.fsdecode(os.fspath(path))
    except TypeError:
        raise TypeError(f"{owner}: path must be a str or os.PathLike (e.g. pathlib.Path), got "
                        f"{type(path).__name__} {path!r}") from None


def save(state: dict, path) -> None:
    """Write ``state`` (a nested dict of arrays, tensors and numbers) to ``path`` atomically,
    with a checksum of every tensor and of the header."""
    if not isinstance(state, dict):
        raise TypeError(f"save: state must be a dict (e.g. {{'model': model.state_dict()}}), "
                        f"got {type(state).__name__}")
    path = _path("save", path)
    tensors: dict = {}
    skeleton = _flatten(state, "", tensors, 0)
    meta = {_META_KEY: json.dumps({"format": FORMAT, "version": VERSION, "tree": skeleton})}
    atomic_write(path, lambda f: checkpoint_format.write(f, tensors, meta))


def load(path) -> dict:
    """Read a checkpoint written by :func:`save`: the same nesting, arrays as NumPy arrays.

    The header is checked against the file's size before any tensor is read, each tensor
    is read straight into its array, and the checksums (where the file has them) are
    verified: a truncated or corrupt file raises ValueError naming the path (and the
    tensor whose bytes are wrong)."""
    path = _path("load", path)
    tensors, meta = checkpoint_format.read(path)
    if meta is None or _META_KEY not in meta:
        return tensors
    try:
        info = json.loads(meta[_META_KEY])
        if not isinstance(info, dict) or info.get("format") != FORMAT:
            raise ValueError(f"format {info.get('format') if isinstance(info, dict) else info!r}")
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"load: {path} has corrupt fastnn metadata: {_what(exc)}") from None
    version = info.get("version")
    if isinstance(version, int) and version > VERSION:  # before reading a tree it may not know
        raise ValueError(
            f"load: {path} was written by a newer fastnn (checkpoint version {version}; this "
            f"fastnn reads up to {VERSION}); upgrade fastnn to read it"
        )
    try:
        return _unflatten(info["tree"], tensors, 0)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise ValueError(f"load: {path} has corrupt fastnn metadata: {_what(exc)}") from None


def _what(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return f"it nests deeper than the {MAX_DEPTH} levels a checkpoint may have"
    return str(exc)
