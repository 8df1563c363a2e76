"""The safetensors file format, written and read by fastnn itself, with checksums.

A safetensors file is an 8-byte little-endian header length ``n``, ``n`` bytes of
JSON (``{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__":
{str: str}}``, padded with spaces), then the tensors' bytes back to back. fastnn
adds two metadata entries, which other safetensors readers pass over:

- ``fastnn.crc32``: JSON ``{name: "%08x"}``, the CRC-32 of each tensor's bytes;
- ``fastnn.header_crc32``: the CRC-32 of the rest of the header in a canonical
  form (entries and metadata as sorted compact JSON), so that a flipped digit in
  a shape, an offset, a number in the metadata or a checksum is caught too.

CRC-32 detects every error confined to 32 consecutive bits (so every flipped
byte) and all but 1 in 2**32 of the others, at ~2 GB/s.

Reading checks the header against the file's size before it reads a tensor, and
reads each tensor straight into its array (no copy of the file in memory), so a
truncated file, a huge header length or ``/dev/zero`` fails at once with a
ValueError. Files without the checksum entries (older fastnn, other tools) load
unverified.
"""

from __future__ import annotations

import io
import json
import os
import stat
import zlib

import numpy as np

from fastnn.api import dtypes

CRC_KEY = "fastnn.crc32"
HEADER_CRC_KEY = "fastnn.header_crc32"
MAX_HEADER = 100 * 1024 * 1024  # the safetensors library's own limit

_DTYPES = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64,
    "U64": np.uint64, "I32": np.int32, "U32": np.uint32, "I16": np.int16,
    "U16": np.uint16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_, "C64": np.complex64,
}
_CODES = {np.dtype(t): code for code, t in _DTYPES.items()}


def dtype_code(array: np.ndarray) -> str | None:
    """The safetensors dtype name of ``array`` (any byte order), or None where it has none."""
    if array.dtype.name == "bfloat16":  # ml_dtypes' (fastnn.api.dtypes.numpy_bfloat16)
        return "BF16"
    return _CODES.get(array.dtype.newbyteorder("="))


def _numpy_dtype(name: str, code: str) -> np.dtype:
    """The NumPy dtype of the safetensors dtype ``code`` of tensor ``name``."""
    if code != "BF16":
        return np.dtype(_DTYPES[code])
    found = dtypes.numpy_bfloat16()
    if found is None:
        raise TypeError(f"load: tensor {name!r} is bfloat16, which NumPy holds only with the "
                        "ml_dtypes package: pip install ml_dtypes")
    return found


def little_endian(array: np.ndarray) -> np.ndarray:
    """``array`` C-contiguous and little-endian, copied only where it is not already."""
    if array.dtype.byteorder == ">" or (array.dtype.byteorder == "=" and
                                        np.little_endian is False):
        array = array.astype(array.dtype.newbyteorder("<"))
    return np.require(array, requirements="C")  # not ascontiguousarray: it makes 0-d 1-d


def _bytes_of(array: np.ndarray) -> memoryview:
    return memoryview(array.reshape(-1).view(np.uint8))


def _canonical(entries: dict, metadata: dict) -> bytes:
    rest = {k: v for k, v in metadata.items() if k != HEADER_CRC_KEY}
    return json.dumps([entries, rest], sort_keys=True, separators=(",", ":")).encode()


def _crc(data) -> str:
    return f"{zlib.crc32(data):08x}"


def write(f, tensors: dict, metadata: dict) -> None:
    """Write ``tensors`` (name -> little-endian C-contiguous array with a dtype code) and
    ``metadata`` (str -> str) to the binary file ``f``, with checksums, copying no array."""
    order = sorted(tensors, key=lambda k: (-tensors[k].dtype.itemsize, k))  # keeps alignment
    entries, crcs, offset = {}, {}, 0
    for name in order:
        array = tensors[name]
        entries[name] = {"dtype": dtype_code(array), "shape": list(array.shape),
                         "data_offsets": [offset, offset + array.nbytes]}
        crcs[name] = _crc(_bytes_of(array))
        offset += array.nbytes
    metadata = {**metadata, CRC_KEY: json.dumps(crcs, sort_keys=True)}
    metadata[HEADER_CRC_KEY] = _crc(_canonical(entries, metadata))
    header = json.dumps({"__metadata__": metadata, **entries}, separators=(",", ":")).encode()
    header += b" " * (-len(header) % 8)  # tensors start 8-byte aligned
    f.write(len(header).to_bytes(8, "little"))
    f.write(header)
    for name in order:
        f.write(_bytes_of(tensors[name]))


class _Corrupt(ValueError):
    """A problem in the file; ``read`` adds the path and the file's size."""


def read(path: str) -> tuple[dict, dict | None]:
    """``(tensors, metadata)`` of the safetensors file ``path``, checked as the module says.

    Raises ValueError naming ``path`` (and the tensor, for a checksum mismatch) for a file
    that is not a whole, uncorrupted safetensors file.
    """
    with open(path, "rb", buffering=0) as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"load: {path} is not a regular file (a device, pipe or socket); "
                             "give the path of a checkpoint file")
        return _read_named(f, info.st_size, path)


def read_stream(f, label: str) -> tuple[dict, dict | None]:
    """:func:`read` of an open binary file object (``io.BytesIO``, an opened file), from
    its current position to its end; ``label`` names it in errors. One that cannot seek,
    or has no ``readinto``, is read whole first."""
    try:
        start = f.tell()
        size = f.seek(0, os.SEEK_END) - start
        f.seek(start)
        if not hasattr(f, "readinto"):
            raise AttributeError("readinto")
    except (AttributeError, OSError, ValueError):
        data = f.read()
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"load: {label} is not a binary file (read() gave "
                            f"{type(data).__name__}); open it with 'rb'") from None
        f, size = io.BytesIO(data), len(data)
    return _read_named(f, size, label)


def _read_named(f, size: int, label: str):
    try:
        return _read(f, size)
    except _Corrupt as exc:
        raise ValueError(f"load: {label} is not a readable safetensors checkpoint "
                         f"({size} bytes): {exc}") from None
    except MemoryError as exc:
        raise MemoryError(f"load: {label}: {exc}") from None


def _read(f, size: int):
    if size < 8:
        raise _Corrupt("too short for a header (truncated or empty)")
    first = _read_exactly(f, 8, "the header length")
    n = int.from_bytes(first, "little")
    # torch.save's older bare pickle (its zip archive is read by fastnn.checkpoint_torch)
    if n > min(MAX_HEADER, size - 8) and first.startswith((b"PK\x03\x04", b"\x80\x02\x8a")):
        raise _Corrupt("it is a PyTorch torch.save file in the format before PyTorch 1.6 (a "
                       "bare pickle), which fastnn does not unpickle; with PyTorch, torch.load "
                       "it and torch.save it again (the zip format, which fnn.load reads), or "
                       "save its tensors with fnn.save")
    if n > min(MAX_HEADER, size - 8):
        raise _Corrupt(f"the header length says {n} bytes but the file holds {size - 8} after "
                       "it (truncated, corrupt or another format)")
    header = _parse_header(_read_exactly(f, n, "the header"))
    metadata = header.pop("__metadata__", None)
    if metadata is not None and not (isinstance(metadata, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise _Corrupt("__metadata__ is not a mapping of strings to strings")
    layout = _layout(header, size - 8 - n)
    crcs = _checksums(header, metadata)
    tensors = {}
    for name, dtype, shape, begin, end in layout:  # in file order: reads go forward
        try:
            array = np.empty(shape, dtype)
        except MemoryError:
            raise MemoryError(f"tensor {name!r} ({dtype}, shape {list(shape)}) needs "
                              f"{end - begin} bytes, more than this machine can allocate") from None
        if end > begin:
            _read_into(f, _bytes_of(array), name)
        if crcs is not None and _crc(_bytes_of(array)) != crcs.get(name):
            raise _Corrupt(f"tensor {name!r} fails its checksum (stored {crcs.get(name)}, "
                           f"read {_crc(_bytes_of(array))}): its bytes are corrupt")
        tensors[name] = array
    return {name: tensors[name] for name in header}, metadata


def _read_exactly(f, n: int, what: str) -> bytes:
    data = f.read(n)
    while len(data) < n:  # a raw file may return short reads
        more = f.read(n - len(data))
        if not more:
            raise _Corrupt(f"the file ends inside {what}")
        data += more
    return data


def _read_into(f, view: memoryview, name: str) -> None:
    done = 0
    while done < len(view):
        got = f.readinto(view[done:])
        if not got:
            raise _Corrupt(f"the file ends inside tensor {name!r} (truncated)")
        done += got


def _parse_header(raw: bytes) -> dict:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Corrupt(f"the header is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        header = json.loads(text)
    except ValueError as exc:
        raise _Corrupt(f"the header is not valid JSON ({exc})") from None
    except RecursionError:  # json's C parser checks the depth; no crash, but no message
        raise _Corrupt("the header's JSON nests too deeply to be a safetensors header") from None
    if not isinstance(header, dict):
        raise _Corrupt(f"the header is a JSON {type(header).__name__}, not an object")
    return header


def _layout(header: dict, body_size: int) -> list:
    """``[(name, dtype, shape, begin, end)]`` in file order, after checking that the entries
    tile the body exactly."""
    layout = []
    for name, entry in header.items():
        if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
            raise _Corrupt(f"the entry of tensor {name!r} is not {{dtype, shape, data_offsets}}")
        code, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
        if code not in _DTYPES and code != "BF16":
            raise _Corrupt(f"tensor {name!r} has dtype {code!r}, which is not one of "
                           f"{', '.join(_DTYPES)}, BF16")
        if not _ints(shape) or not (_ints(offsets) and len(offsets) == 2):
            raise _Corrupt(f"tensor {name!r} has shape {shape!r} and offsets {offsets!r}; "
                           "expected lists of non-negative integers")
        dtype = _numpy_dtype(name, code)
        count = 1
        for dim in shape:
            count *= dim
        begin, end = offsets
        if end - begin != count * dtype.itemsize:
            raise _Corrupt(f"tensor {name!r} ({code}, shape {shape}) needs "
                           f"{count * dtype.itemsize} bytes, its offsets span {end - begin}")
        layout.append((name, dtype, tuple(shape), begin, end))
    layout.sort(key=lambda t: (t[3], t[4]))
    position = 0
    for name, _, _, begin, end in layout:
        if begin != position:
            raise _Corrupt(f"tensor {name!r} starts at byte {begin} of the data, expected "
                           f"{position} (overlapping or a gap)")
        position = end
    if position != body_size:
        raise _Corrupt(f"the tensors need {position} bytes of data, the file holds "
                       f"{body_size} (truncated, or bytes appended)")
    return layout


def _ints(values) -> bool:
    return isinstance(values, list) and all(
        type(v) is int and v >= 0 for v in values)


def _checksums(header: dict, metadata: dict | None):
    """The stored per-tensor checksums after verifying the header's own; None for a file
    written without them."""
    if metadata is None or (CRC_KEY not in metadata and HEADER_CRC_KEY not in metadata):
        return None
    if metadata.get(HEADER_CRC_KEY) != _crc(_canonical(header, metadata)):
        raise _Corrupt(f"the header fails its checksum (stored "
                       f"{metadata.get(HEADER_CRC_KEY)!r}): a shape, offset, name or "
                       "metadata value is corrupt")
    try:
        crcs = json.loads(metadata.get(CRC_KEY, ""))
    except ValueError:
        crcs = None
    if not isinstance(crcs, dict) or set(crcs) != set(header):
        raise _Corrupt(f"the {CRC_KEY} metadata does not list every tensor's checksum")
    return crcs
