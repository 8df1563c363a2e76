"""fnn.compile's memory (issue 23: peak memory of a compiled step at most eager's),
measured with tracemalloc on the MLP step of ``benchmarks/bench_models.py``.

A replay makes the same arrays as eager and frees none of them later (the replay drops
each one after its last use; eager's tape frees saved arrays as its backward passes
them), so during the step it holds no more than eager: only eager's tape and Tensor
objects, which it does not make. What it keeps besides is its program (the calls as a
few bytes each, the replay's inputs and writes as tuples, guards, the packed
description), a few KB, less than eager's tape and Tensor objects at the step's peak
in a fresh process (``PROGRAM_KEEPS``).
"""

import gc
import tracemalloc

import numpy as np

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn, optim

PROGRAM_KEEPS = 1024
"""Bytes a compiled MLP step may keep beyond eager at its peak. What its compiled
function keeps between steps (~4.3 KB, tracemalloc: the program as data ~0.9, its
packed description ~0.55 [read back from that data, fastnn/api/program_derive.py], the
replay's data ~0.8, the guards' data ~0.8 [the parameters found through their
optimizer, their ids one bytes object], weak references to the modules and the
optimizer ~0.3, the function, cache, key and program ~0.9) is less than what eager's
tape and tensors hold during the step and a replay does not (~4.9 KB): in a fresh
process its peak is 0.45-0.8 KB under eager's (ten runs; was 1.7-2.4 KB over it,
7.4-8.1 with generated code), but in a worker that ran the rest of the suite first
eager's peak is ~0.5 KB lower (allocations its first steps leave in a fresh process,
e.g. strings of grad mode's contexts, are there already) and the compiled one was
measured 36 bytes over it: hence 1 KiB, not 0."""


def _mlp_step(compiled: bool):
    fnn.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10))
    opt = optim.SGD(list(model.parameters()), lr=0.01)
    rng = np.random.default_rng(1)
    x = fnn.tensor(rng.standard_normal((128, 784)).astype(np.float32))
    y = fnn.tensor(rng.integers(0, 10, 128))

    def one(a, b):
        opt.zero_grad()
        loss = F.cross_entropy(model(a), b)
        loss.backward()
        opt.step()
        return loss.detach()

    run = fnn.compile(one) if compiled else one
    return lambda: run(x, y)


def _memory(compiled: bool, steps: int = 4) -> tuple[int, int]:
    """(bytes held between steps, most bytes held during one step), everything counted
    from before the model was built (its weights, gradients, a compiled program)."""
    warm = _mlp_step(compiled)  # imports and process-wide caches, untraced
    for _ in range(steps):
        warm()
    del warm
    gc.collect()
    tracemalloc.start()
    try:
        step = _mlp_step(compiled)
        for _ in range(steps):
            step()
        gc.collect()  # the recording's cycles: garbage, not the step's memory
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        float(step())
        return base, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_compiled_mlp_step_holds_no_more_than_eager_during_the_step():
    eager_base, eager_peak = _memory(False)
    base, peak = _memory(True)
    # the arrays of the step at its peak: the new first-layer weight gradient and the
    # gradient it is made from, beside the weights, the other gradients and the batch
    assert eager_peak - eager_base > 256 * 1024
    assert peak - base <= eager_peak - eager_base, (peak - base, eager_peak - eager_base)
    assert peak <= eager_peak + PROGRAM_KEEPS, (peak, eager_peak, peak - eager_peak)
