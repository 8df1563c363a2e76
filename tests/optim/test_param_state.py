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
    # the moments, and the step as a 0-d tensor, as PyTorch's state size reports count them
    assert sum(v.numel() for st in opt.state.values() for v in st.values()
               if isinstance(v, fnn.Tensor)) == 7
    assert dict.keys(opt.state) == {id(a)}  # the rules' own view is unchanged
    torch = pytest.importorskip("torch")
    ta, topt = _adam(torch)
    np.testing.assert_allclose(_moments(fnn, opt), _moments(torch, topt), rtol=1e-12)


@pytest.mark.parametrize("cls", ["Adam", "NAdam", "ASGD", "Adagrad", "RMSprop", "Rprop"])
def test_counts_read_as_zero_dim_tensors_as_pytorch(cls):
    """PyTorch keeps ``step`` (and NAdam's mu_product, ASGD's eta and mu) as 0-d float32
    tensors on the CPU: ``state[p]["step"].item()`` works, and writing one back keeps the
    rule stepping; a user's own optimizer keeps the numbers it stores."""
    torch = pytest.importorskip("torch")
    seen = {}
    for lib in (fnn, torch):
        p = lib.ones(3, requires_grad=True)
        opt = getattr(lib.optim, cls)([p], lr=0.1)
        for _ in range(2):
            p.grad = lib.ones(3)
            opt.step()
        st = opt.state[p]
        scalars = {k: (v.item(), str(v.dtype).split(".")[-1], str(v.device))
                   for k, v in st.items() if v.ndim == 0}
        st["step"] = st["step"] + 1
        p.grad = lib.ones(3)
        opt.step()
        seen[lib] = scalars, float(st["step"]), p.detach().numpy().copy()
    assert seen[fnn][0].keys() == seen[torch][0].keys()
    for k, (value, dtype, device) in seen[fnn][0].items():
        assert (dtype, device) == seen[torch][0][k][1:] == ("float32", "cpu")
        assert value == pytest.approx(seen[torch][0][k][0], rel=1e-6)
    assert seen[fnn][1] == seen[torch][1] == 4.0
    np.testing.assert_allclose(seen[fnn][2], seen[torch][2], rtol=1e-5)


def test_a_users_optimizer_keeps_its_int_step():
    class Plain(fnn.optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": 0.1})

        def step(self):
            for group in self.param_groups:
                for p in group["params"]:
                    state = self.state[p]
                    state["step"] = state.get("step", 0) + 1

    p = fnn.ones(2, requires_grad=True)
    opt = Plain([p])
    opt.step()
    opt.step()
    assert opt.state[p]["step"] == 2 and type(opt.state[p]["step"]) is int
