"""``torch.nn.modules.utils``' argument helpers, which custom layers import: ``_pair(3)``
is ``(3, 3)``, ``_pair((1, 2))`` is ``(1, 2)``."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import repeat


def _ntuple(n: int, name: str = "parse"):
    """A function making ``n``-tuples: an iterable as a tuple of its items, anything else
    repeated ``n`` times."""
    def parse(x):
        if isinstance(x, Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n: int) -> tuple:
    """Each item of ``t``, last first, repeated ``n`` times (F.pad's order of a conv's
    padding)."""
    return tuple(x for x in reversed(t) for _ in range(n))


def consume_prefix_in_state_dict_if_present(state_dict, prefix: str) -> None:
    """Strip ``prefix`` from the keys of ``state_dict`` that have it, in place (PyTorch's:
    a DistributedDataParallel checkpoint's ``module.`` keys loaded into the bare model),
    and from its ``_metadata`` keys where it has them."""
    for key in list(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata.keys()):
            # '' is the wrapper's own entry; 'module' (the prefix without its dot) and
            # 'module.xx' are the model's
            if key and (key == prefix.replace(".", "") or key.startswith(prefix)):
                metadata[key[len(prefix):]] = metadata.pop(key)


def _addindent(text: str, spaces: int) -> str:
    """``text`` with every line but the first indented by ``spaces`` (what PyTorch's and
    custom ``__repr__`` methods nest a child's repr with)."""
    first, *rest = text.split("\n")
    if not rest:
        return text
    return "\n".join([first] + [" " * spaces + line for line in rest])


def _get_clones(module, n: int):
    """A ModuleList of ``n`` deep copies of ``module`` (torch.nn.modules.transformer's,
    which code that builds its own transformer stacks imports)."""
    import copy

    from fastnn.nn.lists import ModuleList

    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _get_activation_fn(activation: str):
    """F.relu or F.gelu by name (torch.nn.modules.transformer's)."""
    from fastnn import functional

    if activation in ("relu", "gelu"):
        return getattr(functional, activation)
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")
