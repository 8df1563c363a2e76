"""What ``fastnn train`` adds to a checkpoint so that ``--resume`` continues bit-for-bit:
the state of fastnn's host generator (layer init, Dropout's masks, seeds drawn from it),
the data loader's position, and the learning-rate schedule's.

Checkpoints hold arrays and numbers only, so the generator's PCG64 state (two
128-bit integers and a buffered 32-bit word) travels as six uint64 words.
"""

from __future__ import annotations

import numpy as np

_MASK = (1 << 64) - 1


def rng_state(generator: np.random.Generator) -> np.ndarray:
    """The PCG64 state of ``generator`` as uint64 words: state, inc (each high, low), then
    has_uint32 and uinteger."""
    state = generator.bit_generator.state
    if state.get("bit_generator") != "PCG64":
        raise ValueError(f"cannot save a {state.get('bit_generator')} generator's state; "
                         "fastnn's host generator is numpy's PCG64 (np.random.default_rng)")
    words = []
    for key in ("state", "inc"):
        value = int(state["state"][key])
        words += [value >> 64, value & _MASK]
    words += [int(state["has_uint32"]), int(state["uinteger"])]
    return np.array(words, dtype=np.uint64)


def set_rng_state(generator: np.random.Generator, words) -> None:
    """Restore a state that :func:`rng_state` returned into ``generator``, in place."""
    words = [int(w) for w in np.asarray(words, dtype=np.uint64).ravel()]
    if len(words) != 6:
        raise ValueError(f"a saved generator state has 6 words, got {len(words)}")
    generator.bit_generator.state = {
        "bit_generator": "PCG64",
        "state": {"state": (words[0] << 64) | words[1], "inc": (words[2] << 64) | words[3]},
        "has_uint32": words[4], "uinteger": words[5],
    }


SCHEDULES = ("constant", "cosine", "warmup-cosine", "step", "exponential", "onecycle")


def make_schedule(name: str, optimizer, lr: float, total_steps: int):
    """The learning-rate schedule ``name`` over ``total_steps`` optimizer steps (None for
    constant); it is stepped once per batch."""
    from fastnn.optim import lr_scheduler as sched

    if name == "constant":
        return None
    if name == "cosine":
        return sched.CosineAnnealingLR(optimizer, T_max=total_steps)
    if name == "warmup-cosine":  # a tenth of the run warms up linearly from lr / 10
        warm = max(1, total_steps // 10)
        return sched.SequentialLR(optimizer, [
            sched.LinearLR(optimizer, start_factor=0.1, total_iters=warm),
            sched.CosineAnnealingLR(optimizer, T_max=max(1, total_steps - warm))],
            milestones=[warm])
    if name == "step":  # a tenth of the rate after each third of the run
        return sched.StepLR(optimizer, step_size=max(1, total_steps // 3), gamma=0.1)
    if name == "exponential":  # down to a hundredth over the run
        return sched.ExponentialLR(optimizer, gamma=0.01 ** (1.0 / total_steps))
    return sched.OneCycleLR(optimizer, max_lr=lr, total_steps=total_steps)
