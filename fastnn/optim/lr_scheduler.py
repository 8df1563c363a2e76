"""Learning-rate schedules (``fastnn.optim.lr_scheduler``), with PyTorch's names and arguments.

PyTorch's: :class:`StepLR`, :class:`MultiStepLR`, :class:`ExponentialLR`,
:class:`CosineAnnealingLR`, :class:`LinearLR` (the usual warm-up),
:class:`SequentialLR`, :class:`OneCycleLR`, :class:`LambdaLR`,
:class:`ReduceLROnPlateau`, :class:`MultiplicativeLR`, :class:`ConstantLR`,
:class:`PolynomialLR`, :class:`CosineAnnealingWarmRestarts`, :class:`CyclicLR` and
:class:`ChainedScheduler`, each computing the rates as PyTorch does, with
``get_last_lr()``, ``state_dict()`` and ``load_state_dict()``.

fastnn's own factor schedules stay too: :class:`LinearWarmup`,
:class:`CosineAnnealing` (held at its minimum after ``total_steps``),
:class:`LinearDecay`, :class:`WarmupCosine` and :class:`WarmupLinear`.
"""

from fastnn.optim.schedules import (
    CosineAnnealingLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    LRScheduler,
    MultiStepLR,
    StepLR,
)
from fastnn.optim.schedules_extra import (
    ChainedScheduler,
    ConstantLR,
    CosineAnnealingWarmRestarts,
    CyclicLR,
    MultiplicativeLR,
    PolynomialLR,
)
from fastnn.optim.schedules_more import OneCycleLR, ReduceLROnPlateau, SequentialLR
from fastnn.optim.warmup import (
    CosineAnnealing,
    FactorScheduler,
    LinearDecay,
    LinearWarmup,
    WarmupCosine,
    WarmupLinear,
    cosine_factor,
    linear_factor,
    warmup_factor,
)


class _LRScheduler(LRScheduler):
    """PyTorch's former name of :class:`LRScheduler` (custom schedulers subclass it)."""


__all__ = ["CosineAnnealing", "CosineAnnealingLR", "ExponentialLR", "FactorScheduler",
           "LRScheduler", "LambdaLR", "LinearDecay", "LinearLR", "LinearWarmup", "MultiStepLR",
           "OneCycleLR", "ReduceLROnPlateau", "SequentialLR", "StepLR", "WarmupCosine",
           "WarmupLinear", "cosine_factor", "linear_factor", "warmup_factor",
           "ChainedScheduler", "ConstantLR", "CosineAnnealingWarmRestarts", "CyclicLR",
           "MultiplicativeLR", "PolynomialLR"]
