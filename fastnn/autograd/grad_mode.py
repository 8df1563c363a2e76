"""Thread-local switches for the tape: ``no_grad``, ``set_grad_enabled`` and ``detect_anomaly``."""

from __future__ import annotations

import threading
from contextlib import ContextDecorator


class _State(threading.local):
    """Each thread's switches. Class attributes are the defaults a new thread sees, so a read
    is a plain attribute lookup (``getattr(local, name, default)`` on a thread that never set
    the name raises and catches AttributeError inside: ~0.5 us on every op)."""

    grad = True
    anomaly = False
    inference = False


_state = _State()
switches = _state  # read directly on hot paths: switches.grad, switches.anomaly


def is_grad_enabled() -> bool:
    """Whether ops record themselves on the tape in this thread."""
    return _state.grad


def is_anomaly_enabled() -> bool:
    """Whether every op's output and gradients are checked for NaN/Inf in this thread."""
    return _state.anomaly


class _Switch(ContextDecorator):
    """Sets one thread-local flag on enter and restores it on exit.

    The value to restore is pushed on a per-thread, per-flag stack rather than
    kept on the instance: one decorator instance is shared by every call of the
    function it wraps, so recursive calls, calls from several threads and a
    reused ``with`` object must not overwrite each other's saved value.
    ``@no_grad`` works without parentheses too, as in PyTorch.
    """

    _attr = ""
    _value = False
    _default = True

    def __new__(cls, func=None):
        if func is None:
            return super().__new__(cls)
        if not callable(func):
            raise TypeError(f"{cls.__name__}() takes no arguments (or decorates a function)")
        return cls()(func)

    def _stack(self) -> list:
        key = f"saved_{self._attr}"
        stack = getattr(_state, key, None)
        if stack is None:
            stack = []
            setattr(_state, key, stack)
        return stack

    def __enter__(self):
        self._stack().append(getattr(_state, self._attr, self._default))
        setattr(_state, self._attr, self._value)
        return self

    def __exit__(self, *exc):
        setattr(_state, self._attr, self._stack().pop())
        return False


class no_grad(_Switch):
    """Context manager and decorator: ops inside record nothing (this thread only)."""

    _attr, _value, _default = "grad", False, True


class enable_grad(_Switch):
    """Context manager and decorator: re-enable recording inside a ``no_grad`` block."""

    _attr, _value, _default = "grad", True, True


class detect_anomaly(_Switch):
    """Context manager: a NaN/Inf made in forward or backward raises FloatingPointError.

    The message names the op. Every op then copies its result to the host to
    check it, so use this for debugging only.
    """

    _attr, _value, _default = "anomaly", True, False

    def __new__(cls, func=None, check_nan: bool = True):
        """``detect_anomaly()``, ``detect_anomaly(check_nan=True)`` (PyTorch's argument:
        fastnn always checks NaN and Inf) or ``@detect_anomaly``."""
        return super().__new__(cls, func)


class _Setting(_Switch):
    """A flag the call sets at once (this thread), which a with-block restores at its end
    and which, as a decorator, applies inside each call: PyTorch's set_grad_enabled."""

    def __new__(cls, mode, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError(f"{type(self).__name__}: mode must be True or False, got "
                            f"{type(mode).__name__} {mode!r}")
        self._value = mode
        self._before = getattr(_state, self._attr, self._default)  # what a with restores
        setattr(_state, self._attr, mode)

    def __call__(self, func):
        # a decorator: undo the immediate setting; each call switches on its own
        setattr(_state, self._attr, self._before)
        self._before = None
        return super().__call__(func)

    def __enter__(self):
        before, self._before = self._before, None
        self._stack().append(getattr(_state, self._attr, self._default) if before is None
                             else before)
        setattr(_state, self._attr, self._value)
        return self


class set_grad_enabled(_Setting):
    """Turn recording on or off, as PyTorch's: ``set_grad_enabled(False)`` takes effect at
    once (this thread); ``with set_grad_enabled(flag):`` restores the previous setting at
    the end of the block, and ``@set_grad_enabled(flag)`` applies it inside each call."""

    _attr, _default = "grad", True


class set_detect_anomaly(_Setting):
    """Anomaly detection (see :class:`detect_anomaly`) on or off, as PyTorch's
    ``autograd.set_detect_anomaly(mode, check_nan=True)``: at once, or for a with-block
    or each call of a decorated function (``check_nan`` is accepted: fastnn always
    checks NaN and Inf)."""

    _attr, _default = "anomaly", False

    def __init__(self, mode, check_nan: bool = True):
        super().__init__(mode)


def set_anomaly_enabled(mode: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection (see :class:`detect_anomaly`) on or off in this thread;
    ``check_nan`` is accepted for PyTorch's signature (fastnn always checks NaN/Inf)."""
    if not isinstance(mode, bool):
        raise TypeError(f"set_anomaly_enabled: mode must be True or False, got "
                        f"{type(mode).__name__} {mode!r}")
    _state.anomaly = mode


def is_inference_mode_enabled() -> bool:
    """Whether this thread is inside an ``inference_mode`` block."""
    return _state.inference


class inference_mode(ContextDecorator):
    """Context manager and decorator (``@inference_mode``, ``@inference_mode()``): ops
    inside record nothing, as under ``no_grad``, and :func:`is_inference_mode_enabled`
    says so; ``inference_mode(False)`` leaves grad mode as it is.

    fastnn has no separate "inference tensors": what is made inside is an ordinary
    tensor without history (PyTorch's speed-ups there are its own bookkeeping skipped).
    """

    def __new__(cls, mode=True):
        if callable(mode) and not isinstance(mode, bool):  # @inference_mode, bare
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode=True):
        if not isinstance(mode, bool):
            raise TypeError(f"inference_mode: mode must be True or False, got "
                            f"{type(mode).__name__} {mode!r}")
        self._mode = mode

    def _stack(self) -> list:
        stack = getattr(_state, "saved_inference", None)
        if stack is None:
            stack = _state.saved_inference = []
        return stack

    def __enter__(self):
        self._stack().append((_state.grad, _state.inference))
        if self._mode:
            _state.grad = False
        _state.inference = self._mode
        return self

    def __exit__(self, *exc):
        _state.grad, _state.inference = self._stack().pop()
        return False
