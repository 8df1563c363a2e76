"""fastnn's host generator: what ``fnn.manual_seed`` seeds, layer init and ``randn`` draw
from, and what a captured step (``fnn.compile``) swaps for a logging one while it records.
"""

from __future__ import annotations

import numpy as np

from fastnn.api.args import integer


class _HostRng:
    rng: np.random.Generator = np.random.default_rng()
    seed: int | None = None  # what manual_seed last gave (fnn.initial_seed)


_state = _HostRng()


def manual_seed(seed: int) -> None:
    """Seed fastnn's host generator (used by randn without seed= and by layer init)."""
    _state.seed = integer("manual_seed", "seed", seed, 0)
    _state.rng = np.random.default_rng(_state.seed)


def host_rng() -> np.random.Generator:
    """The generator behind :func:`manual_seed`."""
    return _state.rng


def set_host_rng(rng) -> None:
    """Make ``rng`` the default generator (a restored state, or capture's logging one)."""
    _state.rng = rng


def initial_seed() -> int | None:
    """The seed :func:`manual_seed` last gave, or None."""
    return _state.seed


def rng_of(op: str, generator) -> np.random.Generator:
    """The NumPy generator to draw from: ``generator``'s (an fnn.Generator has it as
    ``.rng``; a NumPy Generator is taken as is), or fastnn's default one for None."""
    if generator is None:
        return _state.rng
    if isinstance(generator, np.random.Generator):
        return generator
    rng = getattr(generator, "rng", None)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"{op}: generator must be an fnn.Generator (or None for the default), "
                        f"got {type(generator).__name__}")
    return rng
