"""Each layer's ``reverse`` (hand-derived gradients) against the tape's gradients."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn.conformance.compare import GRADIENT, assert_close
from fastnn.conformance.harness import floor_atol
from fastnn.conformance.layers import away_from_kinks, randomize


def test_reverse_matches_tape(layer_spec, dtype, device, rng):
    if layer_spec is None:
        pytest.skip("fastnn.nn is not available in this installation")
    label, make, shape, *extra = layer_spec
    options = extra[0] if extra else {}
    call = options.get("call", lambda layer, x: layer(x))
    layer = make(dtype, device)
    randomize(layer, rng)
    if "inputs" in options:  # e.g. indices: no gradient of the input itself
        x_host = options["inputs"](rng, shape)
        x = fnn.tensor(x_host, device=device)
    else:
        x_host = away_from_kinks(rng, shape).astype(dtype)
        x = fnn.tensor(x_host, device=device, requires_grad=True)
    with fnn.enable_grad():
        out = call(layer, x)
    grad_out = rng.normal(size=out.shape).astype(np.float16).astype(dtype)
    out.backward(grad_out)
    tape = {name: p.grad.numpy() for name, p in layer.named_parameters()}
    buffers = {name: b.numpy().copy() for name, b in layer.named_buffers()}
    reverse = options.get("reverse", lambda layer, x, g: layer.reverse(x, g))
    grad_x, own = reverse(layer, fnn.tensor(x_host, device=device),
                          fnn.tensor(grad_out, device=device))
    for name, b in layer.named_buffers():
        assert np.array_equal(b.numpy(), buffers[name]), f"nn.{label}: reverse changed the " \
                                                          f"buffer {name}"
    rtol, atol = GRADIENT[dtype]
    atol = floor_atol(atol, dtype)
    where = f"nn.{label} reverse vs tape on {device}, {dtype}, input {shape}"
    if x.requires_grad:
        assert_close(grad_x.numpy(), x.grad.numpy(), rtol, atol, f"{where}: grad_x")
    else:
        assert grad_x is None, f"{where}: an input without a gradient got grad_x {grad_x}"
    assert sorted(own) == sorted(tape), f"{where}: self_grads names {sorted(own)} != " \
                                        f"named_parameters {sorted(tape)}"
    for name, grad in own.items():
        assert_close(grad.numpy(), tape[name], rtol, atol, f"{where}: grad of {name}")
