"""Running a fastnn layer and its PyTorch twin on the same weights and inputs."""

from __future__ import annotations

import numpy as np

import fastnn as fnn

TOL = {"float32": dict(rtol=2e-4, atol=2e-5), "float64": dict(rtol=1e-9, atol=1e-11)}


def devices() -> list:
    names = {b.name for b in fnn.backends() if b.available}
    return [d for d in ("cpu", "opencl") if d in names]


def torch_state(module) -> dict:
    return {k: v.detach().cpu().numpy() for k, v in module.state_dict().items()}


def first(out):
    return out[0] if isinstance(out, tuple) else out


def compare(ours, theirs, inputs, dtype, device, call=None, torch_call=None, grad_inputs=True):
    """Load ``theirs``' state_dict into ``ours``; run both on ``inputs`` (host arrays); check
    the outputs (the first when a tuple), input gradients and parameter gradients of the
    sum of output * a fixed random weight."""
    import torch

    call = call or (lambda m, *xs: m(*xs))
    torch_call = torch_call or call
    tdtype = getattr(torch, dtype)
    theirs = theirs.to(tdtype)
    assert list(ours.state_dict()) == list(theirs.state_dict()), "state_dict keys differ"
    ours.load_state_dict(torch_state(theirs))
    floating = [np.issubdtype(np.asarray(a).dtype, np.floating) for a in inputs]
    t_in = [torch.tensor(np.asarray(a, dtype=dtype) if f else a,
                         requires_grad=bool(f and grad_inputs)) for a, f in zip(inputs, floating)]
    f_in = [fnn.tensor(np.asarray(a, dtype=dtype) if f else a, device=device,
                       requires_grad=bool(f and grad_inputs)) for a, f in zip(inputs, floating)]
    t_out = first(torch_call(theirs, *t_in))
    f_out = first(call(ours, *f_in))
    tol = TOL[dtype]
    np.testing.assert_allclose(f_out.numpy(), t_out.detach().numpy(), **tol)
    weights = np.random.default_rng(7).standard_normal(t_out.shape).astype(dtype)
    (t_out * torch.tensor(weights)).sum().backward()
    (f_out * fnn.tensor(weights, device=device)).sum().backward()
    for a, b in zip(f_in, t_in):
        if b.requires_grad:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **tol)
    t_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), t_params[name].grad.numpy(), err_msg=name,
                                   **tol)
    return f_out
