"""What a conformance case declares, and the registry of cases (one per hook).

A *run-style* case (most of them) declares only

- ``run(*tensors, **params) -> Tensor``: the op through fastnn's public API
  (the path users take; it reaches the backend's hook);
- ``ref(*arrays, **params) -> ndarray``: the same op in NumPy float64;
- ``grad_ref(*arrays, grad_out, **params) -> tuple``: the reference's analytic
  gradient, one entry per argument (None where no gradient flows), for the
  arguments listed in ``diff_args``;
- ``samples(rng)`` and ``edges(rng, dtype)``: lists of :class:`Sample`;
- ``random(draw)``: one :class:`Sample` from hypothesis' ``data.draw``;
- ``tol``: ``{dtype: (rtol, atol)}`` for the forward comparison.

The harness (:mod:`fastnn.conformance.harness`) turns each into forward,
gradient (finite differences and analytic), edge-case, randomised and
cross-backend checks. A *custom* case (creation, transfer, the fused optimizer
steps) instead supplies ``check(device, dtype, rng)``, which raises
:class:`~fastnn.conformance.compare.Mismatch` on a wrong result, and declares as
``tol`` the table its check holds the hook's outputs to (the widest it uses; a
check may add slack for the magnitudes of its sums). Shadow mode holds the hook
to that table on a user's model (:mod:`fastnn.shadowing.tolerance`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fastnn.conformance.compare import ELEMENTWISE, Tolerances


@dataclass
class Sample:
    """One input: arrays (float64 for float inputs; int/bool as they are) or Python scalars."""

    label: str
    args: tuple
    params: dict = field(default_factory=dict)
    # dtypes the sample needs besides the case's own (astype's target): a device that
    # does not list one of them skips the sample
    needs: tuple = ()

    def __post_init__(self):
        # NumPy draws with size=() give NumPy scalars: keep them arrays (0-d tensors);
        # a plain Python int or float stays a scalar operand
        self.args = tuple(np.asarray(a) if isinstance(a, np.generic) else a for a in self.args)

    def describe(self) -> str:
        shapes = ", ".join(str(np.shape(a)) if isinstance(a, np.ndarray) else repr(a)
                           for a in self.args)
        extra = f" {self.params}" if self.params else ""
        return f"{self.label} [{shapes}]{extra}"


@dataclass
class Case:
    """The conformance case of one hook (see the module docstring)."""

    name: str
    run: Callable | None = None
    ref: Callable | None = None
    samples: Callable[[np.random.Generator], list] | None = None
    grad_ref: Callable | None = None
    diff_args: tuple = ()
    edges: Callable[[np.random.Generator, str], list] | None = None
    random: Callable[[Any], Sample] | None = None
    tol: dict | None = None  # None: ELEMENTWISE for a run-style case (see above)
    # the analytic gradient check's {dtype: (rtol, atol)}; None: GRADIENT (wider where a
    # sample's gradients sum more products than GRADIENT's float32 atol allows)
    grad_tol: dict | None = None
    check: Callable | None = None
    pass_dtype: bool = False  # run() takes dtype=<name> (ops that create a dtype)
    grad_check: str = "both"  # "both", "analytic" (no finite differences), or "none"
    # an op composed of primitives (no hook of its own): checked as a hook's case is, on
    # every backend, and reported in a row of its own
    composite: bool = False

    def __post_init__(self):
        if self.tol is None and self.check is None:
            self.tol = dict(ELEMENTWISE)
        # bfloat16's tolerances derived from float16's where a case gives none
        self.tol = None if self.tol is None else Tolerances(self.tol)
        self.grad_tol = None if self.grad_tol is None else Tolerances(self.grad_tol)

    @property
    def differentiable(self) -> bool:
        return bool(self.diff_args)

    @property
    def custom(self) -> bool:
        return self.check is not None


CASES: dict[str, Case] = {}


def register(case: Case) -> Case:
    if case.name in CASES:
        raise ValueError(f"conformance case {case.name!r} is declared twice")
    CASES[case.name] = case
    return case


def composite(*cases: Case) -> None:
    """Mark ``cases`` as cases of core composites (ops made of hooks, with no hook of their
    own): the harness checks them as any case; the hook/case lists leave them out."""
    for case in cases:
        case.composite = True


def sum_to(grad: np.ndarray, shape: tuple) -> np.ndarray:
    """Sum a broadcast gradient back to ``shape`` (the adjoint of NumPy broadcasting)."""
    lead = grad.ndim - len(shape)
    grad = grad.sum(axis=tuple(range(lead))) if lead else grad
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=axes, keepdims=True).reshape(shape) if axes else grad.reshape(shape)


def magnitudes(dtype: str) -> dict:
    """Large and tiny values for ``dtype`` that stay finite and normal on the input side."""
    info = np.finfo(dtype)
    big = float(info.max)
    large = np.array([100.0, big**0.5, big / 8])
    tiny = np.array([float(info.tiny) * 64, float(info.eps), big**-0.5])
    return {"large": np.concatenate([large, -large]), "tiny": np.concatenate([tiny, -tiny])}


def uniform(rng, shape, low=-2.0, high=2.0):
    return rng.uniform(low, high, size=shape)


def away_from_zero(rng, shape, low=0.2, high=2.0):
    """Values with |x| in [low, high] and random signs (no kinks near 0)."""
    return rng.uniform(low, high, size=shape) * rng.choice([-1.0, 1.0], size=shape)
