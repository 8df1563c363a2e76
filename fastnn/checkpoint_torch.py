"""PyTorch's ``torch.save`` files, read without PyTorch and without running their code.

``torch.save`` writes a zip archive: ``<name>/data.pkl``, a pickle of the saved object
whose tensors refer by key to raw storages ``<name>/data/<key>``, and ``byteorder``. A
pickle can call anything it names, so this reader is PyTorch's ``weights_only=True``
reader in spirit: every name the pickle asks for is looked up in :data:`ALLOWED`, a table
of fastnn's own stand-ins (PyTorch is never imported), and any other name is refused
before anything is called. What it rebuilds: dicts (``OrderedDict`` too), lists, tuples,
sets, numbers, strings, bytes, ``torch.Size`` (a tuple), ``torch.device`` (its string),
dtypes (fastnn's) and tensors and Parameters, as NumPy arrays (bfloat16 ones as ml_dtypes'
bfloat16 where that package is installed, else as float32, exactly). Tensors that shared a
storage when saved (tied weights, a transpose) share memory again, as PyTorch's load gives
them; each storage is read once, straight from the file into its array. A whole pickled
``nn.Module`` or optimizer is refused by its class name, as PyTorch's own ``weights_only``
load refuses it.

PyTorch's older format (a bare pickle, before 1.6) and TorchScript archives are refused
with what to do instead.
"""

from __future__ import annotations

import codecs
import collections
import io
import pickle
import zipfile
import zlib

import numpy as np

from fastnn.api import dtypes

# PyTorch's storage classes -> the NumPy dtype of their bytes
_STORAGES = {
    "DoubleStorage": np.float64, "FloatStorage": np.float32, "HalfStorage": np.float16,
    "BFloat16Storage": np.uint16, "LongStorage": np.int64, "IntStorage": np.int32,
    "ShortStorage": np.int16, "CharStorage": np.int8, "ByteStorage": np.uint8,
    "BoolStorage": np.bool_, "ComplexFloatStorage": np.complex64,
    "ComplexDoubleStorage": np.complex128,
}


class _Storage:
    """A storage class named by the pickle: the dtype its bytes are read as."""

    def __init__(self, name: str):
        self.name, self.dtype = name, np.dtype(_STORAGES[name])


def _rebuild_tensor(storage, offset, size, stride, *_rest):
    """``torch._utils._rebuild_tensor_v2``: the elements of a storage at (offset, size,
    stride), as a NumPy view of it."""
    array, bfloat16 = storage
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride) or any(n < 0 for n in size) or any(s < 0 for s in stride):
        raise pickle.UnpicklingError(f"a tensor's size {size} and stride {stride} do not fit")
    if 0 not in size:
        last = offset + sum((n - 1) * s for n, s in zip(size, stride))
        if offset < 0 or last >= array.size:
            raise pickle.UnpicklingError(
                f"a tensor of size {size}, stride {stride} at offset {offset} reaches past "
                f"its storage of {array.size} elements")
    step = array.itemsize
    # a view of the storage, as PyTorch's tensors are: tensors saved sharing a storage
    # (tied weights, a transpose) share it again
    out = np.lib.stride_tricks.as_strided(array[offset:], size, tuple(s * step for s in stride))
    if bfloat16:  # (no ml_dtypes) bfloat16 is the top half of a float32: exact
        out = (out.astype(np.uint32) << 16).view(np.float32)
    return out


def _parameter(data, *_rest):
    """``torch._utils._rebuild_parameter``: a Parameter's data (as a NumPy array)."""
    return data


def _from_type(func, _new_type, args, _state):
    """``torch._tensor._rebuild_from_type_v2``: what ``func`` (itself allowed) rebuilds."""
    return func(*args)


def _encode(text, encoding="latin1"):
    """``_codecs.encode`` as protocol 2 pickles bytes: a str in latin-1, nothing else."""
    if not isinstance(text, str) or encoding != "latin1":
        raise pickle.UnpicklingError("_codecs.encode is allowed only to rebuild bytes")
    return codecs.encode(text, "latin1")


def _device(kind, index=None):
    return kind if index is None else f"{kind}:{index}"


def _size(dims=()):
    return tuple(dims)


def _dtypes() -> dict:
    return {("torch", name): dtypes.as_dtype(name) for name in dtypes.names()}


#: (module, name) -> what the pickle gets for it; nothing else can be named
ALLOWED = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("collections", "Counter"): collections.Counter,
    ("builtins", "set"): set, ("builtins", "frozenset"): frozenset,
    ("builtins", "bytearray"): bytearray, ("builtins", "complex"): complex,
    ("_codecs", "encode"): _encode,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _parameter,
    ("torch._tensor", "_rebuild_from_type_v2"): _from_type,
    ("torch", "Tensor"): "torch.Tensor", ("torch.nn.parameter", "Parameter"): "Parameter",
    ("torch", "Size"): _size, ("torch", "device"): _device,
    **{("torch", name): _Storage(name) for name in _STORAGES},
}


#: (module, name) -> a class or function a script allowed by name, as PyTorch's
#: ``torch.serialization.add_safe_globals`` allows it (see :mod:`fastnn.serialization`)
USER_ALLOWED: dict = {}


class _Reader(pickle._Unpickler):
    """Python's own unpickler (its opcode table can be changed, the C one's cannot) with
    every name looked up in the table and BUILD (which sets attributes on an object made
    earlier: a shared dtype, one of the stand-ins) allowed on an OrderedDict alone, where
    PyTorch keeps a state_dict's ``_metadata``."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, data: bytes, archive: zipfile.ZipFile, prefix: str, swap: bool):
        super().__init__(io.BytesIO(data))
        self._archive, self._prefix, self._swap = archive, prefix, swap
        self._storages: dict = {}
        self._allowed = {**ALLOWED, **_dtypes(), **USER_ALLOWED}
        self._user_types = {v for v in USER_ALLOWED.values() if isinstance(v, type)}

    def _build(self):
        if type(self.stack[-2]) in self._user_types:  # an object of a class the script
            return pickle._Unpickler.load_build(self)  # allowed: its own __setstate__
        state = self.stack.pop()
        inst = self.stack[-1]
        if type(inst) is not collections.OrderedDict or not isinstance(state, dict) or not all(
                isinstance(key, str) for key in state):
            raise pickle.UnpicklingError(
                f"it sets attributes on a {type(inst).__name__}, which no torch.save of "
                "tensors and dicts does")
        inst.__dict__.update(state)

    dispatch[pickle.BUILD[0]] = _build

    def find_class(self, module, name):
        module = "builtins" if module == "__builtin__" else module
        found = self._allowed.get((module, name))
        if found is None:
            raise pickle.UnpicklingError(f"{module}.{name}")
        return found

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], _Storage)):
            raise pickle.UnpicklingError(f"an unknown persistent id {str(pid)[:80]}")
        _, kind, key, _location, numel = pid
        found = self._storages.get(key)
        if found is None:
            if isinstance(numel, bool) or not isinstance(numel, int) or numel < 0:
                raise pickle.UnpicklingError(f"its storage {key!r} has {numel!r} elements")
            array = _read_storage(self._archive, f"{self._prefix}data/{key}", kind, numel)
            if self._swap:
                array = array.byteswap()
            widen = kind.name == "BFloat16Storage"
            if widen and dtypes.numpy_bfloat16() is not None:  # (ml_dtypes is installed)
                array, widen = array.view(dtypes.numpy_bfloat16()), False
            found = self._storages[key] = (array, widen)
        return found


def _read_storage(archive, name: str, kind: _Storage, numel: int) -> np.ndarray:
    """The ``numel`` elements of the archive's entry ``name``, read straight into a new
    array when the entry is stored uncompressed (as torch.save stores it), its CRC-32
    checked as zipfile checks it."""
    try:
        info = archive.getinfo(name)
    except KeyError:
        raise pickle.UnpicklingError(f"its storage {name.rsplit('/', 1)[-1]!r} is missing") \
            from None
    if info.file_size != numel * kind.dtype.itemsize:
        raise pickle.UnpicklingError(
            f"its storage {name.rsplit('/', 1)[-1]!r} holds {info.file_size} bytes, not "
            f"{numel} {kind.name} elements")
    array = np.empty(numel, kind.dtype)
    raw = memoryview(array).cast("B")
    fp = archive.fp
    if info.compress_type != zipfile.ZIP_STORED or not hasattr(fp, "readinto"):
        raw[:] = archive.read(name)
        return array
    fp.seek(info.header_offset)
    local = fp.read(30)  # the local header: its name and extra field lengths at 26..30
    if len(local) != 30 or not local.startswith(b"PK\x03\x04"):
        raise pickle.UnpicklingError(f"the zip entry {name!r} has no local header")
    fp.seek(info.header_offset + 30 + int.from_bytes(local[26:28], "little")
            + int.from_bytes(local[28:30], "little"))
    if fp.readinto(raw) != len(raw) or zlib.crc32(raw) != info.CRC:
        raise pickle.UnpicklingError(f"the bytes of {name!r} are truncated or corrupt (its "
                                     "CRC-32 does not match)")
    return array


def is_zip(first: bytes) -> bool:
    return first.startswith(b"PK\x03\x04")


def read(f, label: str):
    """The object ``torch.save`` wrote to the zip archive ``f`` (a path or a seekable
    binary file), rebuilt as the module says; ValueError naming ``label`` otherwise."""
    try:
        archive = zipfile.ZipFile(f)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ValueError(f"load: {label} is a damaged zip archive ({exc})") from None
    with archive:
        names = archive.namelist()
        pickles = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
        if not pickles:
            what = ("a TorchScript archive (torch.jit.save): load it with PyTorch's "
                    "torch.jit.load and save its state_dict()" if any(
                        n.endswith("/constants.pkl") for n in names) else
                    "a zip archive without data.pkl, so not a torch.save file")
            raise ValueError(f"load: {label} is {what}")
        prefix = pickles[0][: -len("data.pkl")]
        order = _read_optional(archive, prefix + "byteorder") or b"little"
        try:
            return _Reader(archive.read(pickles[0]), archive, prefix,
                           order.strip() == b"big").load()
        except pickle.UnpicklingError as exc:
            message = str(exc)
            if "." in message and " " not in message:  # a name outside the table
                raise ValueError(
                    f"load: {label} holds a pickled {message}, which fastnn does not "
                    "rebuild: it reads torch.save files of tensors, dicts, lists, numbers "
                    "and strings only (PyTorch's weights_only=True), never running code "
                    "from a file. With PyTorch, save the object's state_dict() instead; "
                    "or, if you trust the file, allow the name first: "
                    f"fastnn.serialization.add_safe_globals([{message}])") from None
            raise ValueError(f"load: {label} is a corrupt torch.save file: {message}") \
                from None
        except (EOFError, ValueError, TypeError, IndexError, KeyError,
                zipfile.BadZipFile) as exc:
            raise ValueError(f"load: {label} is a corrupt torch.save file: "
                             f"{type(exc).__name__}: {exc}") from None


def _read_optional(archive, name):
    try:
        return archive.read(name)
    except KeyError:
        return None
