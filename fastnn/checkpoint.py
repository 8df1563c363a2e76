"""Checkpoints: ``fnn.save(state, path)`` and ``fnn.load(path)`` in safetensors, never pickle.

``state`` is a nested dict (string keys) whose leaves are arrays (NumPy arrays
or fastnn Tensors) or plain values (numbers, strings, bools, None, and lists
or tuples of those). Arrays become safetensors tensors named by their key
path joined with ``/`` (so ``{"model": {"0.weight": w}}`` stores
``model/0.weight``); everything else, and the shape of the nesting, goes into
the file's metadata as JSON under ``"fastnn"``. ``load`` rebuilds the same
nesting with NumPy arrays (tuples come back as lists).

Writes are atomic: the bytes go to a temporary file in the target's
directory, which is flushed and fsynced, renamed over the target with
``os.replace`` and the directory fsynced; a crash at any point leaves either
the old file or the new one, never a mix.

A plain safetensors file without fastnn metadata loads as a flat dict
``name -> array``. A file that is truncated, corrupt or not safetensors at
all raises ValueError naming the path.
"""

from __future__ import annotations

import json
import os
import tempfile

import numpy as np

SEP = "/"
FORMAT = "fastnn.checkpoint"
VERSION = 1
_META_KEY = "fastnn"


def _safetensors_numpy():
    try:
        import safetensors.numpy as st
    except ImportError:
        raise ImportError(
            "fastnn checkpoints need the safetensors package: pip install safetensors "
            "(or pip install 'fastnn-core[checkpoint]')"
        ) from None
    return st


def _flatten(node, prefix: str, tensors: dict):
    """Split ``node`` into tensors (added to ``tensors``) and a JSON skeleton (returned)."""
    from fastnn.ops.tensor import Tensor

    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if not isinstance(key, str):
                raise TypeError(
                    f"save: keys must be strings, got {key!r} ({type(key).__name__}) at "
                    f"{prefix or '<root>'}; convert it with str()"
                )
            if SEP in key:
                raise ValueError(f"save: key {key!r} contains {SEP!r}, which separates levels")
            out[key] = _flatten(value, f"{prefix}{SEP}{key}" if prefix else key, tensors)
        return {"d": out}
    if isinstance(node, Tensor):
        node = node.numpy()
    if isinstance(node, np.ndarray):
        if node.dtype == object:
            raise TypeError(f"save: {prefix} is an object array; only numeric arrays are saved")
        # not np.ascontiguousarray: it turns a 0-d array into shape (1,)
        tensors[prefix] = np.require(node, requirements="C")
        return {"t": prefix}
    if isinstance(node, np.generic):
        node = node.item()
    if node is None or isinstance(node, (bool, int, float, str)):
        return {"v": node}
    if isinstance(node, (list, tuple)):
        return {"l": [_flatten(v, f"{prefix}{SEP}{i}", tensors) for i, v in enumerate(node)]}
    raise TypeError(
        f"save: cannot store {type(node).__name__} at {prefix or '<root>'}; leaves must be "
        "arrays, tensors, numbers, strings, bools, None or lists of those"
    )


def _unflatten(skeleton, tensors: dict):
    if "d" in skeleton:
        return {k: _unflatten(v, tensors) for k, v in skeleton["d"].items()}
    if "t" in skeleton:
        return tensors[skeleton["t"]]
    if "l" in skeleton:
        return [_unflatten(v, tensors) for v in skeleton["l"]]
    return skeleton["v"]


def save(state: dict, path) -> None:
    """Write ``state`` (a nested dict of arrays, tensors and numbers) to ``path`` atomically."""
    if not isinstance(state, dict):
        raise TypeError(f"save: state must be a dict, got {type(state).__name__}")
    st = _safetensors_numpy()
    path = os.fspath(path)
    tensors: dict = {}
    skeleton = _flatten(state, "", tensors)
    meta = {_META_KEY: json.dumps({"format": FORMAT, "version": VERSION, "tree": skeleton})}
    try:
        payload = st.save(tensors, metadata=meta)
    except Exception as exc:  # safetensors' own error types, e.g. for complex arrays
        kinds = sorted({f"{k}: {v.dtype}" for k, v in tensors.items()})
        raise TypeError(f"save: safetensors cannot store these arrays ({', '.join(kinds)}): "
                        f"{exc}") from None
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise IsADirectoryError(f"save: {path} is a directory; give a file name")
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"save: the folder {directory} does not exist; create it first")
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _file_mode(path))  # mkstemp's 0600 would make every checkpoint private
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)


def _file_mode(path: str) -> int:
    """The mode a plain ``open(path, "wb")`` would leave: the old file's, else 0666 - umask."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return 0o666 & ~_umask()


def _umask() -> int:
    """The process umask, read without changing it where Linux shows it (setting it to read
    it, the fallback, races with other threads creating files)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    umask = os.umask(0)
    os.umask(umask)
    return umask


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # e.g. Windows cannot open a directory; the rename is still atomic
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def load(path) -> dict:
    """Read a checkpoint written by :func:`save`: the same nesting, arrays as NumPy arrays."""
    st = _safetensors_numpy()
    path = os.fspath(path)
    with open(path, "rb") as f:
        payload = f.read()
    try:
        tensors = st.load(payload)
    except Exception as exc:  # safetensors raises its own error types for bad bytes
        raise ValueError(
            f"load: {path} is not a readable safetensors checkpoint (truncated, corrupt or "
            f"another format; {len(payload)} bytes): {exc}"
        ) from None
    meta = _metadata(payload, path)
    if meta is None or _META_KEY not in meta:
        return dict(tensors)
    try:
        info = json.loads(meta[_META_KEY])
        if not isinstance(info, dict) or info.get("format") != FORMAT:
            raise ValueError(f"format {info.get('format') if isinstance(info, dict) else info!r}")
    except ValueError as exc:
        raise ValueError(f"load: {path} has corrupt fastnn metadata: {exc}") from None
    version = info.get("version")
    if isinstance(version, int) and version > VERSION:  # before reading a tree it may not know
        raise ValueError(
            f"load: {path} was written by a newer fastnn (checkpoint version {version}; this "
            f"fastnn reads up to {VERSION}); upgrade fastnn to read it"
        )
    try:
        return _unflatten(info["tree"], tensors)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"load: {path} has corrupt fastnn metadata: {exc}") from None


def _metadata(payload: bytes, path: str):
    """The ``__metadata__`` dict of a safetensors file (header: u64 length, then JSON)."""
    n = int.from_bytes(payload[:8], "little")
    try:
        header = json.loads(payload[8:8 + n])
    except ValueError as exc:
        raise ValueError(f"load: {path} has a corrupt safetensors header: {exc}") from None
    return header.get("__metadata__")
