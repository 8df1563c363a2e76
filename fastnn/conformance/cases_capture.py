"""The conformance case of ``compile_program``: a recorded step replayed by the backend.

A small training step (linear, activation, loss, backward, SGD with momentum) is compiled
with ``fnn.compile`` on the device and run for a few steps next to the same step run
eagerly from the same start: every replay must give what the eager step gives, bit for
bit (the backend's program runs the backend's own hooks), whether the backend brings a
``compile_program`` of its own or takes the core's interpreter.
"""

from __future__ import annotations

import numpy as np

from fastnn.conformance.case import Case, register
from fastnn.conformance.compare import EXACT, GRADIENT, Mismatch, assert_close


def _train(device, dtype, rng_seed, compiled):
    import fastnn as fnn
    import fastnn.functional as F
    from fastnn import optim

    data = np.random.default_rng(rng_seed)
    w = fnn.tensor(data.normal(size=(5, 3)), dtype=dtype, device=device, requires_grad=True)
    b = fnn.tensor(data.normal(size=(5,)), dtype=dtype, device=device, requires_grad=True)
    opt = optim.SGD([w, b], lr=0.1, momentum=0.9)

    def step(x, y):
        opt.zero_grad()
        loss = ((F.linear(x, w, b).tanh() - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    run = fnn.compile(step) if compiled else step
    losses = []
    for _ in range(5):
        x = fnn.tensor(data.normal(size=(4, 3)), dtype=dtype, device=device)
        y = fnn.tensor(data.normal(size=(4, 5)), dtype=dtype, device=device)
        losses.append(run(x, y).numpy())
    if compiled and run.stats["replayed"] < 3:
        raise Mismatch(f"compile_program: the step replayed {run.stats['replayed']} of 5 "
                       f"times on {device} (expected 3: two recordings, then replays)")
    return [w.numpy(), b.numpy()] + losses


def _check(device, dtype, rng):
    seed = int(rng.integers(2**31))
    eager = _train(device, dtype, seed, compiled=False)
    replayed = _train(device, dtype, seed, compiled=True)
    for n, (want, got) in enumerate(zip(eager, replayed)):
        what = ["the weight", "the bias"][n] if n < 2 else f"the loss of step {n - 1}"
        if want.shape != got.shape or not np.array_equal(want, got, equal_nan=True):
            raise Mismatch(f"compile_program on {device}, {dtype}: {what} after the compiled "
                           f"steps differs from the eager run's (max difference "
                           f"{np.max(np.abs(want.astype(float) - got.astype(float)))})")


register(Case("compile_program", check=_check, tol=dict(EXACT)))


# expressions as fnn.compile's fusion makes them (fastnn.api.fusion): chains of
# elementwise hooks, a where on a comparison, constants, an input read twice
_EXPRS = [
    ("add", ("mul", ("in", 0), ("in", 1)), ("const", 0.5)),
    ("where", ("greater", ("in", 0), ("const", 0.0)), ("in", 1), ("const", 0.0)),
    ("tanh", ("sub", ("exp", ("neg", ("in", 0))), ("div", ("in", 1), ("in", 2)))),
    ("maximum", ("sigmoid", ("in", 0)), ("relu", ("mul", ("in", 0), ("in", 0)))),
    ("sqrt", ("add", ("abs", ("log", ("abs", ("in", 2)))), ("const", 1e-3))),
    ("minimum", ("in", 1), ("where", ("less", ("in", 0), ("in", 1)), ("in", 0), ("in", 2))),
]


def _check_fused(device, dtype, rng):
    from fastnn.api import composite

    ops = device.ops
    for shape in [(3, 4), (7,), (), (2, 0)]:
        host = [rng.normal(size=shape).astype(dtype) for _ in range(3)]
        host[2] = host[2] + np.where(host[2] >= 0, 0.5, -0.5).astype(dtype)  # no 0 divisor
        for expr in _EXPRS:
            arrays = [ops.from_numpy(h, device.index) for h in host]
            got = np.asarray(ops.to_numpy(ops.fused_elementwise(expr, arrays)))
            want = np.asarray(ops.to_numpy(composite.fused_elementwise(ops, expr, arrays)))
            if got.shape != want.shape or got.dtype != want.dtype:
                raise Mismatch(f"fused_elementwise {expr} on {device}, {dtype}: got a "
                               f"{got.dtype}{list(got.shape)} array, the hooks give "
                               f"{want.dtype}{list(want.shape)}")
            rtol, atol = GRADIENT[dtype]
            assert_close(got, want, rtol, atol, f"fused_elementwise {expr} on {device}, "
                         f"{dtype}, shape {shape} (against the hooks node by node)")


register(Case("fused_elementwise", check=_check_fused, tol=dict(GRADIENT)))
