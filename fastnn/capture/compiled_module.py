"""What ``fnn.compile(module)`` returns: a Module, as ``torch.compile``'s OptimizedModule.

It holds the module as its sub-module ``_orig_mod`` (so ``state_dict()`` keys start with
``_orig_mod.``, as PyTorch's, which checkpoint code strips), runs its forward through the
compiled function (:class:`fastnn.capture.compiled.Compiled`), and answers every other
attribute from the compiled function (``program()``, ``stats``) or else from the module
(``compiled.generate(...)``, ``compiled.config``).
"""

from __future__ import annotations

from fastnn.nn.module import Module


class CompiledModule(Module):
    """A module whose forward replays its recorded program (see :func:`fastnn.compile`)."""

    def __init__(self, module: Module, compiled):
        super().__init__()
        self._orig_mod = module
        object.__setattr__(self, "_compiled", compiled)

    def forward(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name):
        # only reached for what the instance and its class lack: the compiled function's
        # attributes first, then the module's own
        if name.startswith("__") or name in ("_compiled", "_parameters", "_modules",
                                             "_buffers"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        compiled = self.__dict__["_compiled"]
        try:
            return getattr(compiled, name)
        except AttributeError:
            return getattr(self.__dict__["_modules"]["_orig_mod"], name)

    def __repr__(self) -> str:
        return f"{self._compiled!r}\n{super().__repr__()}"
