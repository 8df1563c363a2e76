"""The one table of public tensor ops, from which Tensor's methods and ``fastnn.functional``
are made (and ``fnn.NAME`` where PyTorch has ``torch.NAME``).

An op module marks each public function once::

    @public(method=True)          # F.exp and x.exp()
    def exp(x): ...

    @public(method="softmax", top=False)
    def softmax(x, dim=-1): ...

so that adding an op is writing it; no list elsewhere names it again. An op named in
:data:`fastnn.ops.autocasting.TABLE` is registered (and bound in its module) wrapped with
its autocast policy.
"""

from __future__ import annotations

from fastnn.ops import autocasting
from fastnn.ops.torch_keywords import takes_input_keyword

FUNCTIONAL: dict = {}  # fastnn.functional.NAME
METHODS: dict = {}  # Tensor.NAME
TOP: dict = {}  # fastnn.NAME


def public(method=False, functional=True, top=False, name=None, aliases=()):
    """Register the decorated op under ``name`` (default: its own name) and ``aliases``.

    ``method``: True binds it as ``Tensor.<name>`` too, a string binds it under that
    name, a tuple of strings under each; ``top``: also ``fastnn.<name>``.
    """

    def register(fn):
        names = (name or fn.__name__,) + tuple(aliases)
        fn = autocasting.wrap(names[0], fn)  # an op of the autocast table casts first
        for n in names:
            if functional:
                _put(FUNCTIONAL, n, takes_input_keyword(fn))
            if top:
                _put(TOP, n, takes_input_keyword(fn))
        if method:
            for n in (names if method is True else (method,) if isinstance(method, str)
                      else method):
                _put(METHODS, n, fn)
        return fn

    return register


def _put(table: dict, name: str, fn) -> None:
    if name in table and table[name] is not fn:
        raise ValueError(f"op table: {name!r} is registered twice "
                         f"({table[name].__module__} and {fn.__module__})")
    table[name] = fn
