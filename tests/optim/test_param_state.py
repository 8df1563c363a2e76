"""optimizer.state indexed by the parameter, as PyTorch's: the state as tensors (empty
before the first update), writing through to what the rules use; the rules' own
id(param) keys unchanged; against PyTorch's Adam where it is installed."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import fastnn as fnn


def _adam(lib, steps=2):
    a = lib.nn.Parameter(lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64))
    opt = lib.optim.Adam([a], lr=0.1)
    assert a not in opt.state and len(opt.state[a]) == 0  # (a defaultdict, as PyTorch's)
    for _ in range(steps):
        opt.zero_grad()
        (a * a).sum().backward()
        opt.step()
    return a, opt


def test_state_by_parameter_is_tensors_that_write_through():
    a, opt = _adam(fnn)
    st = opt.state[a]
    assert a in opt.state and sorted(st) == ["exp_avg", "exp_avg_sq", "step"]
    assert isinstance(st["exp_avg"], fnn.Tensor) and st["step"] == 2
    assert st["exp_avg"].shape == (3,) and st["exp_avg"].dtype == fnn.float64
    raw = opt.state[id(a)]  # the rules' own view: the same entries, as arrays
    np.testing.assert_array_equal(st["exp_avg"].numpy(), np.asarray(raw["exp_avg"]))
    st["exp_avg"] = fnn.zeros(3, dtype=fnn.float64)  # written through: the next step uses it
    np.testing.assert_array_equal(np.asarray(opt.state[id(a)]["exp_avg"]), np.zeros(3))
    before = a.detach().clone()
    opt.zero_grad()
    (a * a).sum().backward()
    opt.step()
    g = 2 * before.numpy()
    m = 0.1 * g  # from a zero first moment
    np.testing.assert_allclose(opt.state[a]["exp_avg"].numpy(), m, rtol=1e-12)
    for twin in (copy.deepcopy(opt), pickle.loads(pickle.dumps(opt))):
        p = twin.param_groups[0]["params"][0]
        np.testing.assert_array_equal(twin.state[p]["exp_avg"].numpy(),
                                      opt.state[a]["exp_avg"].numpy())


def test_state_by_parameter_matches_pytorchs():
    torch = pytest.importorskip("torch")
    a, opt = _adam(fnn, steps=3)
    ta, topt = _adam(torch, steps=3)
    ours, theirs = opt.state[a], topt.state[ta]
    assert sorted(ours) == sorted(theirs)
    for name in ("exp_avg", "exp_avg_sq"):
        np.testing.assert_allclose(ours[name].numpy(), theirs[name].numpy(), rtol=1e-12)
    assert ours["step"] == int(theirs["step"])


def _moments(lib, opt) -> list:
    """Every parameter's Adam moments, read as a PyTorch user iterates optimizer.state."""
    out = []
    for p, st in opt.state.items():
        assert isinstance(p, lib.nn.Parameter) and isinstance(st["exp_avg"], lib.Tensor)
        out.append(st["exp_avg"].detach().numpy().tolist())
    assert [id(p) for p in opt.state] == [id(p) for p, _ in opt.state.items()]
    assert [st["exp_avg"].tolist() for st in opt.state.values()] == out
    return out


def test_iterating_the_state_gives_parameters_and_tensors():
    # `for p, st in optimizer.state.items()` (state size reports, resetting moments) gave
    # the rules' int ids and raw arrays where PyTorch gives the parameters and tensors
    a, opt = _adam(fnn)
    assert list(opt.state) == [a] and list(opt.state.keys())[0] is a
    assert _moments(fnn, opt) == [opt.state[a]["exp_avg"].tolist()]
    assert sum(v.numel() for st in opt.state.values() for v in st.values()
               if isinstance(v, fnn.Tensor)) == 6
    assert dict.keys(opt.state) == {id(a)}  # the rules' own view is unchanged
    torch = pytest.importorskip("torch")
    ta, topt = _adam(torch)
    np.testing.assert_allclose(_moments(fnn, opt), _moments(torch, topt), rtol=1e-12)
