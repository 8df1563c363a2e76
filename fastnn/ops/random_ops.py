"""Random sampling as PyTorch spells it: ``fnn.Generator``, multinomial, bernoulli, normal,
poisson, randperm, randint_like, and the global state (seed, initial_seed,
get_rng_state/set_rng_state).

Every draw comes from a host NumPy generator: fastnn's default one (what
``fnn.manual_seed`` seeds) or the ``generator=`` given, so eager code is deterministic
under a seed on every backend. Bulk uniforms are drawn on the device from a seed taken
from that generator (as ``fnn.rand`` does); the discrete samplers run on the host.
"""

from __future__ import annotations

import contextlib
import copy
import numbers
import time

import numpy as np

from fastnn.api import dtypes
from fastnn.api.args import integer
from fastnn.api.device import DeviceSpec
from fastnn.api.dtypes import as_dtype
from fastnn.ops import elementwise as ew
from fastnn.ops import rng_state
from fastnn.ops import tensor as tensor_module
from fastnn.ops.core import astype
from fastnn.ops.rng_state import rng_of
from fastnn.ops.spelling import shape_arg
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, tensor


@public(top=True, functional=False)
class Generator:
    """A random number generator with its own state, as ``torch.Generator``: pass it as
    ``generator=`` to the random functions. ``manual_seed(s)`` seeds it (and returns it),
    ``seed()`` seeds it from the clock, ``initial_seed()`` gives the last seed,
    ``get_state()``/``set_state()`` save and restore it (an opaque state object, not
    PyTorch's byte tensor)."""

    def __init__(self, device="cpu"):
        # named, not opened: making a generator (fastnn's default one at import) loads no
        # backend
        self.device = device if isinstance(device, DeviceSpec) else DeviceSpec(str(device))
        self._seed = 67280421310721  # PyTorch's default seed for a new Generator
        self._rng = np.random.default_rng(self._seed)

    @property
    def rng(self) -> np.random.Generator:
        """The NumPy generator behind this one."""
        return self._rng

    def manual_seed(self, seed) -> Generator:
        """Seed this generator; returns it (``g = fnn.Generator().manual_seed(0)``)."""
        self._seed = _seed_value("Generator.manual_seed", seed)
        self._set_rng(np.random.default_rng(self._seed))
        return self

    def seed(self) -> int:
        """Seed from the clock and return the seed used."""
        self.manual_seed(time.time_ns() % 2**63)
        return self._seed

    def initial_seed(self) -> int:
        """The seed last given (or the default one)."""
        return self._seed

    def get_state(self):
        """A copy of this generator's state, for :meth:`set_state`."""
        return copy.deepcopy(self.rng.bit_generator.state)

    def set_state(self, state) -> Generator:
        """Restore a state from :meth:`get_state`."""
        if not isinstance(state, dict) or "bit_generator" not in state:
            raise TypeError(f"Generator.set_state: expected a state from get_state(), got "
                            f"{type(state).__name__}")
        rng = np.random.Generator(getattr(np.random, state["bit_generator"])())
        rng.bit_generator.state = copy.deepcopy(state)
        self._set_rng(rng)
        return self

    def _set_rng(self, rng: np.random.Generator) -> None:
        self._rng = rng


class _DefaultGenerator(Generator):
    """The generator ``fnn.manual_seed`` seeds: its state is the one fastnn's layers and
    ``randn`` draw from."""

    @property
    def rng(self) -> np.random.Generator:
        return rng_state.host_rng()

    def manual_seed(self, seed) -> Generator:
        rng_state.manual_seed(_seed_value("manual_seed", seed))
        return self

    def initial_seed(self) -> int:
        seeded = rng_state.initial_seed()
        return self._seed if seeded is None else seeded

    def _set_rng(self, rng: np.random.Generator) -> None:
        rng_state.set_host_rng(rng)


default_generator = _DefaultGenerator()
"""fastnn's default generator (``torch.default_generator``): what ``manual_seed`` seeds and
returns, and what the random functions draw from without ``generator=``."""


def manual_seed(seed) -> Generator:
    """Seed fastnn's default generator (``randn`` without ``generator=``, layer init);
    returns it, as ``torch.manual_seed`` returns ``torch.default_generator``."""
    return default_generator.manual_seed(seed)


def _seed_value(op: str, seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"{op}: seed must be an int, got {type(seed).__name__}")
    return int(seed) % 2**64  # negative seeds wrap, as PyTorch's


@public(top=True, functional=False)
def seed() -> int:
    """Seed fastnn's default generator from the clock; returns the seed."""
    return default_generator.seed()


@public(top=True, functional=False)
def initial_seed() -> int:
    """The seed fastnn's default generator was last given."""
    return default_generator.initial_seed()


@public(top=True, functional=False)
def get_rng_state():
    """A copy of the default generator's state (see :meth:`Generator.get_state`)."""
    return default_generator.get_state()


@public(top=True, functional=False)
def set_rng_state(state) -> None:
    """Restore the default generator's state from :func:`get_rng_state`."""
    default_generator.set_state(state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled: bool = True, **kwargs):
    """``torch.random.fork_rng``: the default generator's state is put back as it was when
    the block ends (the draws inside it change nothing after). ``devices`` is accepted:
    fastnn has one default generator for every device."""
    if not enabled:
        yield
        return
    saved = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(saved)


def _uniform_like(op: str, shape, dtype, device, generator) -> Tensor:
    """Uniform [0, 1) samples drawn on ``device`` from a seed taken from the generator."""
    seed_ = int(rng_of(op, generator).integers(2**31))
    return tensor_module.rand(shape, dtype=dtype, device=device, seed=seed_)


# ---------------------------------------------------------------- samplers


@public(method=True, top=True)
def bernoulli(input, p=None, *, generator=None):
    """0/1 samples, 1 with probability ``input`` elementwise (or with probability ``p``,
    shaped like input); input's dtype, no gradient."""
    if not isinstance(input, Tensor):
        raise TypeError(f"bernoulli: expected a Tensor, got {type(input).__name__}")
    kind = input._dtype if input._dtype.is_floating else dtypes.get_default_dtype()
    if p is not None:
        probs = float(p)
        if not 0 <= probs <= 1:
            raise ValueError(f"bernoulli: p must be in [0, 1], got {p}")
    else:
        probs = input.detach()
        if probs.numel():
            low, high = float(probs.min().item()), float(probs.max().item())
            if not (0 <= low and high <= 1):
                raise ValueError(f"bernoulli: probabilities must be in [0, 1], got values in "
                                 f"[{low}, {high}]")
    u = _uniform_like("bernoulli", input.shape, kind if kind.itemsize >= 4 else dtypes.float32,
                      input._device, generator)
    hit = ew.compare("less", u, probs if p is not None else astype(probs, u._dtype))
    return astype(hit, input._dtype)


@public(top=True, functional=False)
def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False):
    """Normal samples: ``normal(mean, std)`` with tensor mean and/or std (broadcast), or
    ``normal(mean, std, size)`` with numbers. No gradient flows to mean or std (as
    PyTorch's). The samples take a tensor mean's dtype (a float32 mean with a float64 std
    gives float32), else the std's, as PyTorch's."""
    tensors = [v for v in (mean, std) if isinstance(v, Tensor)]
    if tensors:
        if size is not None:
            raise TypeError("normal: size= is for float mean and std; with a tensor mean or "
                            "std the shape is theirs")
        like = tensors[0]
        shape = tuple(np.broadcast_shapes(*(t.shape for t in tensors)))
        kind = like._dtype  # mean's dtype where it is a tensor, as PyTorch's (no promotion)
        if not all(t._dtype.is_floating for t in tensors):
            raise TypeError(f"normal: mean and std must be floating tensors, got "
                            f"{', '.join(t._dtype.name for t in tensors)}")
        device = like._device
    else:
        if size is None:
            raise TypeError("normal: give size= with float mean and std (or tensor mean/std)")
        shape = shape_arg("normal", size)
        kind = as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    spread = std.detach() if isinstance(std, Tensor) else float(std)
    lowest = float(spread.min().item()) if isinstance(spread, Tensor) and spread.numel() else \
        spread if not isinstance(spread, Tensor) else 0.0
    if lowest < 0:
        raise ValueError(f"normal: std must be >= 0, got {lowest}")
    z = tensor(rng_of("normal", generator).standard_normal(shape), dtype=kind, device=device)
    centre = mean.detach() if isinstance(mean, Tensor) else float(mean)
    out = ew.add(ew.mul(z, spread), centre)
    out = astype(out, kind)
    return out.requires_grad_(True) if requires_grad else out


@public(top=True)
def poisson(input, generator=None):
    """Poisson samples with rates ``input`` (>= 0), elementwise; input's dtype."""
    if not isinstance(input, Tensor) or not input._dtype.is_floating:
        raise TypeError("poisson: expected a floating tensor of rates")
    rates = input.detach().numpy().astype(np.float64)
    if np.any(rates < 0) or np.any(np.isnan(rates)):
        raise ValueError("poisson: rates must be >= 0 (and not NaN)")
    draws = rng_of("poisson", generator).poisson(rates)
    return tensor(draws, dtype=input._dtype, device=input._device)


@public(top=True)
def binomial(count, prob, generator=None):
    """Binomial samples: successes in ``count`` trials of probability ``prob`` (floating
    tensors of one dtype, broadcast together), elementwise, in that dtype."""
    for name, value in (("count", count), ("prob", prob)):
        if not isinstance(value, Tensor) or not value._dtype.is_floating:
            raise TypeError(f"binomial: {name} must be a floating tensor, got "
                            f"{getattr(value, 'dtype', type(value).__name__)}")
    if count._dtype is not prob._dtype:
        raise RuntimeError(f"binomial: count and prob must have one dtype, got "
                           f"{count._dtype.name} and {prob._dtype.name}")
    trials = count.detach().numpy().astype(np.float64)
    chance = prob.detach().numpy().astype(np.float64)
    if np.any(~(trials >= 0)):
        raise ValueError("binomial: count must be >= 0 (and not NaN)")
    if np.any(~((chance >= 0) & (chance <= 1))):
        raise ValueError("binomial: prob must be in [0, 1]")
    draws = rng_of("binomial", generator).binomial(trials.astype(np.int64), chance)
    return tensor(draws, dtype=count._dtype, device=count._device)


@public(method=True, top=True)
def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Indices drawn by the weights in each row of ``input`` (1-D or 2-D, non-negative,
    not all zero): ``num_samples`` per row, with or without replacement; int64."""
    if not isinstance(input, Tensor) or input.ndim not in (1, 2):
        raise ValueError("multinomial: expected a 1-D or 2-D tensor of weights")
    num_samples = integer("multinomial", "num_samples", num_samples, 1)
    weights = input.detach().numpy().astype(np.float64)
    rows = weights.reshape(-1, weights.shape[-1])
    if not np.all(np.isfinite(rows)) or np.any(rows < 0):
        raise ValueError("multinomial: weights must be finite and >= 0")
    totals = rows.sum(1)
    if np.any(totals <= 0):
        raise ValueError("multinomial: invalid distribution (a row's weights sum to 0)")
    if not replacement and num_samples > int(np.min((rows > 0).sum(1))):
        raise ValueError(f"multinomial: cannot draw {num_samples} samples without "
                         f"replacement from a row with fewer nonzero weights")
    rng = rng_of("multinomial", generator)
    drawn = np.stack([rng.choice(rows.shape[1], num_samples, replace=bool(replacement),
                                 p=row / row.sum()) for row in rows])
    drawn = drawn.reshape(weights.shape[:-1] + (num_samples,))
    return tensor(drawn.astype(np.int64), device=input._device)


@public(top=True, functional=False)
def randperm(n, *, generator=None, dtype=dtypes.int64, device=None, requires_grad=False):
    """A random permutation of 0 .. n-1 (int64 unless given)."""
    n = integer("randperm", "n", n, 0)
    order = rng_of("randperm", generator).permutation(n)
    out = tensor(order, dtype=dtype, device=device)
    return out.requires_grad_(True) if requires_grad else out


@public(top=True, functional=False)
def randint_like(input, low=0, high=None, *, dtype=None, device=None, generator=None):
    """Integers uniform in [low, high) shaped like input (``randint_like(x, high)`` starts
    at 0); input's dtype and device unless given."""
    if not isinstance(input, Tensor):
        raise TypeError(f"randint_like: expected a Tensor, got {type(input).__name__}")
    if high is None:
        low, high = 0, low
    low, high = integer("randint_like", "low", low, -2**63), integer("randint_like", "high",
                                                                      high, -2**63)
    if high <= low:
        raise ValueError(f"randint_like: high ({high}) must be greater than low ({low})")
    kind = input._dtype if dtype is None else as_dtype(dtype)
    draws = rng_of("randint_like", generator).integers(low, high, input.shape, dtype=np.int64)
    return tensor(draws, dtype=kind, device=input._device if device is None else device)
