"""``fastnn.jit``, the part of ``torch.jit`` that model code calls on its way to running
eagerly: ``@torch.jit.script`` on helper functions, ``torch.jit.is_scripting()`` guards,
``@torch.jit.ignore`` / ``unused`` / ``export``, ``torch.jit.annotate``, ``fork``/``wait``.

fastnn has no TorchScript: ``script`` and ``trace`` return what they are given, which
computes what the scripted or traced program computes (TorchScript is a subset of
Python; a trace records one path through the code, and for code without data-dependent
branches every path is that one), so a script that scripts its helpers runs as written.
Where a trace would have frozen a data-dependent branch, the result keeps taking the
branch the data asks for (PyTorch warns there with a TracerWarning). What needs a
serialized program, ``save`` and ``load``, raises: save the weights with ``fnn.save``
(``model.state_dict()``). To capture a step for speed, use ``fnn.compile``.
"""

from __future__ import annotations

from fastnn.nn.module import Module

__all__ = ["Attribute", "Final", "ScriptFunction", "ScriptModule", "annotate", "export",
           "fork", "freeze", "ignore", "interface", "is_scripting", "is_tracing", "load",
           "optimize_for_inference", "save", "script", "script_if_tracing", "script_method",
           "trace", "trace_module", "unused", "wait"]


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """``obj`` (a function, a module or a class) itself, run eagerly (see the module)."""
    return obj


def trace(func, example_inputs=None, *args, **kwargs):
    """``func`` (a function or a module) itself, run eagerly on each call (see the module);
    ``example_inputs`` are not needed."""
    return func


def trace_module(mod, inputs=None, *args, **kwargs):
    """``mod`` itself, as :func:`trace`."""
    return mod


def _decorator(name: str, what: str):
    def decorator(fn=None, **options):
        if fn is None or isinstance(fn, bool):  # @torch.jit.ignore(drop=True)
            return lambda f: f
        return fn

    decorator.__name__ = decorator.__qualname__ = name
    decorator.__doc__ = f"``torch.jit.{name}``: the function unchanged ({what})."
    return decorator


ignore = _decorator("ignore", "it runs in Python, as everything here does")
unused = _decorator("unused", "it runs in Python when called")
export = _decorator("export", "there is no compiled module to export it to")
script_method = _decorator("script_method", "a method of a ScriptModule runs as Python")
script_if_tracing = _decorator("script_if_tracing", "nothing is traced")
interface = _decorator("interface", "a class as written")


def is_scripting() -> bool:
    """False: code runs as Python, never as TorchScript (so guarded branches for eager
    mode are the ones taken)."""
    return False


def is_tracing() -> bool:
    """False: nothing is traced."""
    return False


def annotate(the_type, the_value):
    """``the_value`` (the type is for TorchScript's compiler)."""
    return the_value


class Final:
    """``torch.jit.Final[T]``: a constant attribute's annotation; ``Final[int]`` is ``int``."""

    def __class_getitem__(cls, item):
        return item


def Attribute(value, type=None):  # noqa: N802, A002 (PyTorch's names)
    """The attribute's value (the type is for TorchScript's compiler)."""
    return value


class ScriptModule(Module):
    """A module (subclassed by scripts written for TorchScript; runs as any module)."""


class ScriptFunction:
    """The type of a scripted function in PyTorch; nothing here is one (script returns
    the function itself)."""


class _Future:
    """The result of :func:`fork`: computed already (nothing runs in parallel)."""

    def __init__(self, value):
        self._value = value

    def wait(self):
        return self._value


def fork(func, *args, **kwargs) -> _Future:
    """Run ``func(*args, **kwargs)`` now; :func:`wait` on the result gives its value."""
    return _Future(func(*args, **kwargs))


def wait(future):
    """The value of a :func:`fork`."""
    return future.wait()


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """``mod`` itself (nothing to fold: it runs as Python)."""
    return mod


def optimize_for_inference(mod, other_methods=None):
    """``mod`` itself; for speed, ``fnn.compile`` captures a step's backend calls."""
    return mod


def _no_program(name: str):
    def refuse(*args, **kwargs):
        raise NotImplementedError(
            f"torch.jit.{name}: fastnn has no TorchScript program to {name}; save the "
            f"weights with fnn.save(model.state_dict(), path) and load them into the model's "
            f"class with model.load_state_dict(fnn.load(path))")

    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = f"Raises NotImplementedError: there is no TorchScript program to {name}."
    return refuse


save = _no_program("save")
load = _no_program("load")
