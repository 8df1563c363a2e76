"""A program's description kept compactly while only its compiled replay runs.

A compiled step lives as long as its function, and so does its program: the calls, the
slots' descriptions, layouts and aliases (:class:`fastnn.api.program.Program`). Once the
replay is built and checked, nothing reads them on the hot path; they are needed again
only to print the program or to build the replay anew (when shadow execution wraps the
ops tables). Measured with tracemalloc on the MLP step of ``benchmarks/bench_models.py``
(44 calls): ~16 KB as Python objects, ~2 KB packed, of a compiled step that must hold no
more than the eager step does.

:func:`pack` pickles them into one zlib-compressed bytes object; every object that is
not plain data (a device, a constant array, a dtype, a shared read-only mapping) stays
itself, held in a tuple beside the bytes, so :func:`unpack` gives back the same objects
(the calls, slots and sequences as equal new ones, shared as they were).
"""

from __future__ import annotations

import io
import pickle
import zlib

PLAIN = frozenset((list, tuple, dict, int, float, complex, str, bytes, bool, type(None)))
"""Types pickled by value; any other object stays a reference (see :func:`pack`)."""


def pack(parts, by_value: tuple) -> tuple:
    """``(bytes, references)`` for ``parts``: objects of ``PLAIN`` types or of
    ``by_value`` (the program's own classes) by value, every other one by reference."""
    plain = PLAIN.union(by_value)
    refs: list = []
    index: dict = {}

    class Packer(pickle.Pickler):
        def persistent_id(self, obj):
            if type(obj) in plain:
                return None
            k = index.get(id(obj))
            if k is None:
                k = index[id(obj)] = len(refs)
                refs.append(obj)
            return k

    out = io.BytesIO()
    Packer(out, protocol=pickle.HIGHEST_PROTOCOL).dump(parts)
    return zlib.compress(out.getvalue(), 9), tuple(refs)


def unpack(packed: tuple):
    """The ``parts`` that :func:`pack` packed."""
    blob, refs = packed

    class Unpacker(pickle.Unpickler):
        def persistent_load(self, k):
            return refs[k]

    return Unpacker(io.BytesIO(zlib.decompress(blob))).load()


def field(name: str, doc: str) -> property:
    """An attribute kept packed between uses: stored as ``_name`` (a slot); reading or
    setting it while packed (``_packed`` not None) unpacks first."""
    key = "_" + name

    def get(self):
        if self._packed is not None:
            self.unpack()
        return getattr(self, key)

    def set(self, value):
        if self._packed is not None:
            self.unpack()
        setattr(self, key, value)

    return property(get, set, doc=doc)


def pack_fields(obj, keys: tuple, by_value: tuple, packed=None) -> None:
    """Pack ``obj``'s attributes ``keys`` into ``obj._packed`` (see :func:`pack`;
    ``packed``: what to keep instead, packed another way)."""
    if obj._packed is not None:
        return
    obj._packed = packed or pack(tuple(getattr(obj, k) for k in keys), by_value)
    for k in keys:
        delattr(obj, k)


def unpack_fields(obj, keys: tuple, parts=unpack) -> None:
    """The packed attributes as attributes again (``parts``: ``obj._packed`` -> their
    values). Another thread may be doing the same: the first to finish wins, and the
    attributes are there before ``_packed`` is None."""
    packed = obj._packed
    if packed is None:
        return
    for key, value in zip(keys, parts(packed)):
        if not hasattr(obj, key):
            setattr(obj, key, value)
    obj._packed = None
