"""Checkpoints: ``fnn.save(state, path)`` and ``fnn.load(path)`` in safetensors, never pickle.

``state`` is a tensor, an array, a plain value (number, string, bool, None) or
any nesting of dicts, lists and tuples of those, at most ``MAX_DEPTH`` levels
deep. Dict keys are strings, numbers, bools or None. Arrays (NumPy arrays or
fastnn Tensors) become safetensors tensors named by their key path joined with
``/`` (so ``{"model": {"0.weight": w}}`` stores ``model/0.weight``; a ``/`` or
``%`` inside a key is written ``%2F`` / ``%25``, the entries of a dict with
other keys than strings are named by position, and a lone tensor is named
``tensor``); everything else, and the shape of the nesting, goes into the file's
metadata as JSON under ``"fastnn"``. ``load`` rebuilds the same nesting, tuples
as tuples and dict keys with their types, with NumPy arrays where tensors were.

The tree in the metadata has one node per value: ``{"d": {key: node}}`` (a dict
with string keys), ``{"m": [[key, node], ...]}`` (any other keys), ``{"l": [...]}``
(list), ``{"u": [...]}`` (tuple), ``{"t": name}`` (a tensor) or ``{"v": value}``.
Version 1 files (fastnn before tuples and non-string keys) have only d, l, t and
v nodes; a file is written as version 1 when it needs nothing more, so that an
older fastnn still reads it, and as version 2 otherwise, which an older fastnn
refuses with "written by a newer fastnn".

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

from fastnn import checkpoint_format, checkpoint_torch
from fastnn.checkpoint_files import atomic_write

SEP = "/"
FORMAT = "fastnn.checkpoint"
VERSION = 2  # the newest this fastnn writes and reads
MAX_DEPTH = 100  # levels of nesting; deeper is a mistake (or a dict that holds itself)
_META_KEY = "fastnn"


_KEY_TYPES = (str, int, float, bool, type(None))
_V2_NODES = ("m", "u")  # what version 1 cannot read


def _join(prefix: str, part: str) -> str:
    part = part.replace("%", "%25").replace(SEP, "%2F")  # names stay unique with any key
    return f"{prefix}{SEP}{part}" if prefix else part


def _flatten(node, prefix: str, tensors: dict, depth: int):
    """Split ``node`` into tensors (added to ``tensors``) and a JSON skeleton (returned)."""
    from fastnn.ops.tensor import Tensor

    where = prefix or "<root>"
    if depth > MAX_DEPTH:
        raise ValueError(f"save: state nests deeper than {MAX_DEPTH} levels at "
                         f"{prefix[:200]}...; does a dict or list contain itself?")
    if isinstance(node, dict):
        for key in node:
            if isinstance(key, np.generic):
                key = key.item()
            if not isinstance(key, _KEY_TYPES) or (isinstance(key, float)
                                                   and not np.isfinite(key)):
                raise TypeError(
                    f"save: keys must be strings, numbers, bools or None, got {key!r} "
                    f"({type(key).__name__}) at {where}; convert it with str()"
                )
        if all(type(key) is str for key in node):
            return {"d": {key: _flatten(value, _join(prefix, key), tensors, depth + 1)
                          for key, value in node.items()}}
        return {"m": [[key.item() if isinstance(key, np.generic) else key,
                       _flatten(value, _join(prefix, str(i)), tensors, depth + 1)]
                      for i, (key, value) in enumerate(node.items())]}
    if isinstance(node, Tensor):
        node = node.numpy()
    if isinstance(node, np.ndarray):
        if checkpoint_format.dtype_code(node) is None:
            raise TypeError(
                f"save: cannot store {where}: {node.dtype} arrays (safetensors holds bool, "
                "(u)int8 to (u)int64, float16, bfloat16, float32, float64 and complex64); "
                "convert it with .astype()")
        name = prefix or "tensor"
        tensors[name] = checkpoint_format.little_endian(node)
        return {"t": name}
    if isinstance(node, np.generic):
        node = node.item()
    if node is None or isinstance(node, (bool, int, float, str)):
        return {"v": node}
    if isinstance(node, (list, tuple)):
        kind = "u" if isinstance(node, tuple) else "l"
        return {kind: [_flatten(v, _join(prefix, str(i)), tensors, depth + 1)
                       for i, v in enumerate(node)]}
    hint = "; save its .state_dict() instead" if hasattr(node, "state_dict") else ""
    raise TypeError(
        f"save: cannot store {type(node).__name__} at {where}; leaves must be "
        f"arrays, tensors, numbers, strings, bools, None or dicts, lists and tuples of "
        f"those{hint}"
    )


def _version(skeleton) -> int:
    """The lowest checkpoint version whose reader knows every node of ``skeleton``."""
    stack = [skeleton]
    while stack:
        node = stack.pop()
        kind, value = next(iter(node.items()))
        if kind in _V2_NODES:
            return 2
        if kind == "d":
            stack.extend(value.values())
        elif kind == "l":
            stack.extend(value)
    return 1


def _unflatten(skeleton, tensors: dict, depth: int):
    if depth > MAX_DEPTH:
        raise RecursionError  # reported as too deep by load
    if not isinstance(skeleton, dict) or len(skeleton) != 1:
        raise ValueError(f"a tree node is {str(skeleton)[:80]!r}, not one of d, m, l, u, t, v")
    if "d" in skeleton:
        return {k: _unflatten(v, tensors, depth + 1) for k, v in skeleton["d"].items()}
    if "m" in skeleton:
        return {_key(k): _unflatten(v, tensors, depth + 1) for k, v in skeleton["m"]}
    if "t" in skeleton:
        return tensors[skeleton["t"]]
    if "l" in skeleton:
        return [_unflatten(v, tensors, depth + 1) for v in skeleton["l"]]
    if "u" in skeleton:
        return tuple(_unflatten(v, tensors, depth + 1) for v in skeleton["u"])
    return skeleton["v"]


def _key(key):
    if not isinstance(key, _KEY_TYPES):
        raise ValueError(f"a dict key is {str(key)[:80]!r}, not a string, number, bool or None")
    return key


def _starts_a_zip(source) -> bool:
    """Whether ``source`` (a path, or a file object left where it was) starts as a zip
    archive: PyTorch's torch.save file, read by :mod:`fastnn.checkpoint_torch`."""
    if isinstance(source, str):
        try:
            with open(source, "rb") as f:
                return checkpoint_torch.is_zip(f.read(4))
        except OSError:
            return False  # (the safetensors reader says what is wrong with the path)
    try:
        start = source.tell()
        first = source.read(4)
        source.seek(start)
    except (AttributeError, OSError, ValueError):
        return False
    return isinstance(first, bytes) and checkpoint_torch.is_zip(first)


def _path(owner: str, path) -> str:
    try:
        return os.fsdecode(os.fspath(path))
    except TypeError:
        raise TypeError(f"{owner}: path must be a str, an os.PathLike (e.g. pathlib.Path) or "
                        f"a binary file object, got "
                        f"{type(path).__name__} {path!r}") from None


def save(state, path, pickle_module=None, pickle_protocol=None, **kwargs) -> None:
    """Write ``state`` (a tensor, or any nesting of dicts, lists and tuples of arrays,
    tensors, numbers, strings, bools and None) to ``path`` atomically, with a checksum of
    every tensor and of the header. (PyTorch's pickle arguments are accepted and unused:
    the format is not a pickle.) ``path`` may also be an open binary file object
    (``io.BytesIO``, a file opened with ``"wb"``), as PyTorch's: the checkpoint is written
    at its position, and not atomically (the file is the caller's)."""
    stream = hasattr(path, "write") and not isinstance(path, (str, bytes))
    if not stream:
        path = _path("save", path)
    tensors: dict = {}
    skeleton = _flatten(state, "", tensors, 0)
    meta = {_META_KEY: json.dumps({"format": FORMAT, "version": _version(skeleton),
                                   "tree": skeleton})}
    if stream:
        checkpoint_format.write(path, tensors, meta)
    else:
        atomic_write(path, lambda f: checkpoint_format.write(f, tensors, meta))


def load(path, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **kwargs) -> dict:
    """Read a checkpoint written by :func:`save`: the same nesting, tensors as NumPy arrays.

    PyTorch's ``map_location``, ``weights_only`` and ``mmap`` are accepted: the arrays are
    host arrays whatever the device (``load_state_dict`` puts them on the module's), and
    the format holds data only, never code, so every load is ``weights_only``.

    A file written by PyTorch's ``torch.save`` (its zip format) loads too, without PyTorch:
    its tensors, dicts, lists, numbers and strings, as PyTorch's ``weights_only=True`` load
    reads them, never running code from the file (:mod:`fastnn.checkpoint_torch`).

    The header is checked against the file's size before any tensor is read, each tensor
    is read straight into its array, and the checksums (where the file has them) are
    verified: a truncated or corrupt file raises ValueError naming the path (and the
    tensor whose bytes are wrong). ``path`` may also be an open binary file object, read
    from its position (after ``torch.save(state, buffer)``, ``buffer.seek(0)`` first, as
    with PyTorch)."""
    if hasattr(path, "read") and not isinstance(path, (str, bytes)):
        label = repr(getattr(path, "name", None) or type(path).__name__)
        if _starts_a_zip(path):
            return checkpoint_torch.read(path, label)
        tensors, meta = checkpoint_format.read_stream(path, label)
        path = label
    else:
        path = _path("load", path)
        if _starts_a_zip(path):
            return checkpoint_torch.read(path, path)
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
