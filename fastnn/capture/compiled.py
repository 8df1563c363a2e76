"""``fnn.compile``: a function (a training step, a forward) recorded once, then replayed.

The first call with a new signature runs eagerly while :mod:`fastnn.capture.record` notes
every backend call; :mod:`fastnn.capture.build` turns the recording into a program bound
to the step's inputs and outputs. The next call with that signature replays the program
and, once, checks it against an eager run of the same call (restoring nothing: the eager
run is the one that counts); every later call only replays.

With ``fullgraph=False``, a recording that reads a value back to Python is cut there
into segments (:mod:`fastnn.capture.segments`).

A signature is what the program depends on: the arguments' shapes, dtypes, devices and
requires_grad (numbers and other arguments by value), grad mode, and, checked on each
call, the tensors and optimizer state it reads (alive, same shapes), the optimizers'
options and the training flags of the modules involved.
"""

from __future__ import annotations

import copy
import functools
import warnings

import numpy as np

from fastnn.api import program as programs
from fastnn.api.device import parsed_devices
from fastnn.api.user_warning import warn_user
from fastnn.autograd import grad_mode
from fastnn.capture import build, segments
from fastnn.capture.entry import Entry
from fastnn.capture.record import CaptureError, Recorder, RecordingOps, RngLog
from fastnn.capture.split import Split
from fastnn.capture.state import Snapshot
from fastnn.capture.stats import Stats, Wrapped
from fastnn.ops import autocasting, rng_state
from fastnn.ops.tensor import Tensor


def flatten(args, kwargs) -> tuple[tuple, list]:
    """(the signature key of the arguments, their tensors and arrays in order). The key is
    one flat tuple (a tensor: ``"T"``, its rank, shape, strides, dtype, device and
    gradient flags; a list or tuple: its type and length, then its items): a compiled
    function keeps it for as long as it lives, and nested tuples kept ~2.5x more
    (measured: 0.9 -> 0.3 KB for the MLP step's two tensors)."""
    leaves: list = []
    key: list = []
    _key(args, leaves, key)
    if kwargs:
        _key(kwargs, leaves, key)
    key.append(grad_mode.switches.grad)
    fast = autocasting.state.fast  # an autocast region casts: a program of its own
    key.append(tuple(sorted(fast.items())) if fast else None)
    return tuple(key), leaves


def _key(value, leaves, key) -> None:
    kind = type(value)
    if kind is Tensor or isinstance(value, Tensor):
        leaves.append(value)
        data = value._data  # the layout too: the core may choose by it (a copy or a view)
        shape, strides = data.shape, getattr(data, "strides", None)
        key += ("T", len(shape), *shape)
        if strides is None:
            key.append(None)
        else:
            key += strides
        key += (value._dtype, value._device, value._requires_grad,
                value._requires_grad and value._grad is None)
    elif kind is tuple or kind is list:
        key += (kind, len(value))
        for v in value:
            _key(v, leaves, key)
    elif kind is dict:
        key += (dict, len(value))
        for k, v in value.items():
            key.append(k)
            _key(v, leaves, key)
    elif isinstance(value, np.ndarray):
        leaves.append(value)
        key += ("A", value.ndim, *value.shape, value.dtype)
    elif value is None or kind in (int, float, bool, str, complex):
        key += (kind, value)
    else:
        key += ("id", id(value))


class Compiled:
    """A compiled function: call it as the original; ``program()`` shows what it replays."""

    # fixed attributes: a compiled function keeps them for as long as it lives (an
    # instance dict with functools.update_wrapper's attributes kept ~0.3 KB more)
    __slots__ = ("fn", "fullgraph", "max_signatures", "name", "_cache", "_said", "stats",
                 "_last", "__weakref__")

    def __init__(self, fn, fullgraph: bool = True, max_signatures: int = 8):
        if not callable(fn):
            raise TypeError(f"fnn.compile: expected a function or a module, got "
                            f"{type(fn).__name__}")
        if isinstance(max_signatures, bool) or not isinstance(max_signatures, int) or \
                max_signatures < 1:
            raise ValueError(f"fnn.compile: max_signatures must be an int >= 1, got "
                             f"{max_signatures!r}")
        self.fn, self.fullgraph, self.max_signatures = fn, bool(fullgraph), max_signatures
        self.name = getattr(fn, "__qualname__", None) or type(fn).__name__
        # signature key -> [Entry], least recently used first (a dict: an OrderedDict
        # keeps ~160 bytes more, for as long as the compiled function lives)
        self._cache: dict = {}
        self._said: tuple = ()  # what was warned of once (a tuple: an empty set is 216 B)
        # and, once a step has graph breaks, "split": its calls that ran through their
        # segments, "ahead": segment programs run ahead of the Python, "plain": split
        # calls run as the eager call, where no segment program pays (split.py)
        self.stats = Stats()
        self._last = None  # the entry of the latest call

    def __getattr__(self, name):
        # functools.update_wrapper's attributes, read from the function when asked (see
        # Wrapped for __module__ and __doc__); ``__annotations__`` too: a function makes
        # an empty dict for it when first asked, which a copy would keep
        if name == "__wrapped__":
            return self.fn
        if name in ("__name__", "__qualname__", "__annotations__"):
            return getattr(self.fn, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __call__(self, *args, **kwargs):
        key, leaves = flatten(args, kwargs)
        entries = self._cache.get(key)
        if entries:
            for entry in entries:  # (left before the step runs: no iterator held)
                if entry.guards_hold():
                    break
            else:
                entry = None
            if entry is not None:
                if len(self._cache) > 1:  # (most recently used last)
                    self._cache[key] = self._cache.pop(key)
                self._last = entry
                if type(entry) is Split:
                    if entry.wants_recording():
                        return self._record(key, args, kwargs, leaves, entry)
                    return entry.run(self, args, kwargs, leaves, _devices_of(leaves))
                del key, entries  # (the key's tuples go before the step runs)
                return self._run(entry, args, kwargs, leaves)
        return self._record(key, args, kwargs, leaves)

    def _run(self, entry, args, kwargs, leaves):
        if entry.eager is not None:
            self.stats.eager += 1
            return self.fn(*args, **kwargs)
        if not entry.checked:
            return self._check(entry, args, kwargs, leaves)
        self.stats.replayed += 1
        return entry.replay(leaves)

    # ------------------------------------------------------------ recording
    def _record(self, key, args, kwargs, leaves, split=None):
        snapshot = Snapshot()
        recorder = Recorder(self.fullgraph, self.name)
        devices = _devices_of(leaves)
        installed = []
        rng = rng_state.host_rng()
        log = RngLog(rng)
        rng_state.set_host_rng(log)
        recorder.log = log
        programs._recording[0] += 1
        try:
            for dev in devices:
                installed.append((dev, dev.ops))
                dev.ops = RecordingOps(dev.ops, recorder, dev)
            result = self.fn(*args, **kwargs)
        finally:
            programs._recording[0] -= 1
            recorder.active = False
            for dev, ops in reversed(installed):
                dev.ops = ops
            if rng_state.host_rng() is log:
                rng_state.set_host_rng(rng)
        self.stats.recorded += 1
        if recorder.cuts:
            path = segments.Path(self.name, recorder, snapshot, leaves, log.draws)
            self._say_breaks(path)
            if split is not None:
                split.add(path)
                return result
            entry = Split(path)
        else:
            entry = build.build(self.name, recorder, snapshot, leaves, log.draws, result)
        if entry.eager is not None and entry.eager not in self._said:
            self.said(entry.eager)
            warn_user(f"fnn.compile: {self.name} runs eagerly for this signature "
                      f"({entry.eager})")
        self._store(key, entry)
        self._last = entry
        return result

    def said(self, what) -> None:
        """Note that ``what`` was warned of (``what in self._said`` from now on)."""
        self._said += (what,)

    def _say_breaks(self, path) -> None:
        """One warning per graph break site (the user's line) of this function."""
        n = len(path.cuts) + 1
        for cut in path.cuts:
            if ("break", cut.where) not in self._said:
                self.said(("break", cut.where))
                warnings.warn(f"fnn.compile: graph break in {self.name} at {cut.where}: "
                              f"{cut.what} reads a value back to Python, so the step runs "
                              f"as {n} segments (compiled; the Python between them runs "
                              "every call, as eagerly)", stacklevel=4)

    def _store(self, key, entry) -> None:
        entries = self._cache.setdefault(key, [])
        if len(entries) == 1 and type(entries[0]) is Entry and not entries[0].checked and \
                hash(key) not in self._said:
            # the signature's first program was never replayed: it is the state before
            # the first step (no gradients, no optimizer moments yet), which does not come
            # back; its memory goes (should it come back, it records again, once: then
            # both stay)
            self.said(hash(key))  # (an int: what else is said is a str or a tuple)
            entries.pop()
        entries.insert(0, entry)
        self._cache.pop(key)
        self._cache[key] = entries[:]  # (a list without room to spare: it is kept)
        while sum(len(v) for v in self._cache.values()) > self.max_signatures:
            oldest = next(iter(self._cache))
            self._cache[oldest].pop()
            if not self._cache[oldest]:
                del self._cache[oldest]

    # ------------------------------------------------------------ the first replay's check
    def _check(self, entry, args, kwargs, leaves):
        """Replay on copies of the inputs, undo the replay's draws and counts, run eagerly,
        and compare every output: CaptureError where they differ."""
        rng = rng_state.host_rng()
        before = copy.deepcopy(rng.bit_generator.state)
        counts = entry.counts()
        replayed = entry.replay(leaves, dry=True)
        drawn = copy.deepcopy(rng.bit_generator.state)
        entry.set_counts(counts)
        rng.bit_generator.state = before
        result = self.fn(*args, **kwargs)
        entry.args_now[0] = leaves
        differs = entry.compare(replayed, result)
        entry.args_now[0] = None
        if differs is None and drawn != rng.bit_generator.state:
            differs = "fastnn's random generator (the replay drew differently)"
        if differs is not None:
            entry.eager = f"its replay differed from eager at {differs}"
            raise CaptureError(
                f"fnn.compile: replaying {self.name} gives other values than running it: "
                f"{differs}. The step depends on something its recording could not see (a "
                "Python number or tensor that changes between calls without being an "
                "argument, a parameter or optimizer state); make it an argument. This "
                "call ran eagerly; later calls with this signature run eagerly too")
        entry.checked = True
        entry.settle()
        if entry.fast is not None:  # from now on its replay stands for it (replay.py)
            for entries in self._cache.values():
                for n, found in enumerate(entries):
                    if found is entry:
                        entries[n] = entry.fast
            if self._last is entry:
                self._last = entry.fast
        self.stats.replayed += 1
        return result

    # ------------------------------------------------------------ inspection
    def program(self, index=None) -> str:
        """The recorded program of the latest call (``index``: the n-th cached one, in
        least-recently-used order), one line per backend call; printed and returned."""
        entries = [e for v in self._cache.values() for e in reversed(v)]
        if not entries:
            raise RuntimeError(f"fnn.compile: {self.name} has not been called yet; "
                               "call it once to record its program")
        entry = self._last if index is None and self._last is not None else entries[
            -1 if index is None else index]
        if type(entry) is Split:
            text = entry.paths[0].text()
        else:
            text = entry.program.text() if entry.program is not None else (
                f"program {self.name}: none ({entry.eager})")
        print(text)
        return text

    def __get__(self, obj, objtype=None):
        """As a decorator on a method: bound to the instance (one cache per function)."""
        return self if obj is None else functools.partial(self, obj)

    def __repr__(self) -> str:
        return f"<fnn.compile of {self.name}: {sum(map(len, self._cache.values()))} program(s)>"


Compiled.__module__ = Wrapped(Compiled.__module__, "__module__")
Compiled.__doc__ = Wrapped(Compiled.__doc__, "__doc__")


def _devices_of(leaves) -> list:
    """The devices whose ops a recording or a split run wraps: every device made so far
    and those of the arguments, each once (two spellings, "opencl" and "opencl:0", are
    one Device: wrapped twice, the second restore put the first wrapper back for good)."""
    devices = parsed_devices()
    for t in leaves:
        if isinstance(t, Tensor) and t._device not in devices:
            devices.append(t._device)
    return devices


def compile(fn=None, *, fullgraph: bool = True, max_signatures: int = 8,  # noqa: A001
            mode=None, dynamic=None, backend=None, options=None, disable: bool = False):
    """Record ``fn`` (a training step, or a module's forward) on its first call, then
    replay the recorded backend calls with no Tensor objects, tape or checks.

    ``@fnn.compile`` and ``fnn.compile(fullgraph=False)`` decorate. A new signature
    (shapes, dtypes, devices, requires_grad, training flags, the parameter set) records
    again, up to ``max_signatures`` programs. Reading a value back to Python inside
    (``.item()``, ``bool(t)``, ``.numpy()``, printing) raises :class:`CaptureError`
    naming the line; with ``fullgraph=False`` the program is split there (a graph
    break, said once per line): its segments run compiled and the function's Python
    runs every call as eagerly, its backend calls answered from the segments' results
    where a backend's compiled program beats its hooks, else made as eagerly
    (:mod:`fastnn.capture.split`). The learning rate, step counts and random seeds
    are read at every replay.
    The checks on values that eager code makes without a Python branch (class
    targets and indices in range, an integer divisor of zero, a variance below zero)
    run while recording, not on replay: a replay given such values does what the
    backend's hooks do with them (a device backend reads 0 for an out-of-range index,
    an integer ``// 0`` gives 0) instead of raising eager's error. Run the step eagerly
    to check new data.
    ``step.program()`` prints the program.

    A module compiles to a :class:`~fastnn.capture.compiled_module.CompiledModule`, as
    ``torch.compile``'s: a module holding it as ``_orig_mod`` (``state_dict()`` keys start
    with ``_orig_mod.``) that answers the module's other attributes. PyTorch's ``mode``,
    ``dynamic``, ``backend`` and ``options`` are accepted and change nothing (fastnn
    records and replays one way); ``disable=True`` returns ``fn`` itself.
    """
    if fn is None:
        return functools.partial(compile, fullgraph=fullgraph, max_signatures=max_signatures,
                                 mode=mode, dynamic=dynamic, backend=backend,
                                 options=options, disable=disable)
    if disable:
        return fn
    compiled = Compiled(fn, fullgraph=fullgraph, max_signatures=max_signatures)
    from fastnn.nn.module import Module

    if isinstance(fn, Module):
        from fastnn.capture.compiled_module import CompiledModule

        return CompiledModule(fn, compiled)
    return compiled
