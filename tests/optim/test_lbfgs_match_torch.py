"""LBFGS against torch.optim.LBFGS in float64 on the same small nonlinear least-squares problem:
weights, losses and the quasi-Newton state after several steps, with and without the strong
Wolfe line search; torch's state_dict loads into ours and ours into torch."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from fastnn import optim
from fastnn.nn import Parameter

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
X = RNG.standard_normal((16, 3))
Y = RNG.standard_normal((16, 2))
W0, B0 = RNG.standard_normal((3, 2)) * 0.5, RNG.standard_normal(2) * 0.1

CONFIGS = {
    "plain": dict(lr=0.5, max_iter=6),
    "wolfe": dict(lr=1, max_iter=8, line_search_fn="strong_wolfe"),
    "wolfe-short-history": dict(lr=1, max_iter=10, history_size=3,
                                line_search_fn="strong_wolfe"),
}


def _torch_closure(w, b):
    x, y = torch.tensor(X), torch.tensor(Y)

    def closure():
        for p in (w, b):
            p.grad = None
        loss = ((torch.tanh(x @ w + b) - y) ** 2).mean()
        loss.backward()
        return loss
    return closure


def _fastnn_closure(w, b):
    x, y = fnn.tensor(X, dtype=fnn.float64), fnn.tensor(Y, dtype=fnn.float64)

    def closure():
        for p in (w, b):
            p.grad = None
        loss = ((fnn.tanh(x @ w + b) - y) ** 2).mean()
        loss.backward()
        return loss
    return closure


def _torch_run(kwargs, steps, params=None, opt=None):
    w, b = params or (torch.tensor(W0, requires_grad=True), torch.tensor(B0, requires_grad=True))
    opt = opt or torch.optim.LBFGS([w, b], **kwargs)
    losses = [float(opt.step(_torch_closure(w, b)).detach()) for _ in range(steps)]
    return (w, b), opt, losses


def _fastnn_run(kwargs, steps, params=None, opt=None):
    w, b = params or (Parameter.from_numpy(W0, "connective", fnn.float64, "cpu"),
                      Parameter.from_numpy(B0, "bias", fnn.float64, "cpu"))
    opt = opt or optim.LBFGS([w, b], **kwargs)
    losses = [float(opt.step(_fastnn_closure(w, b))) for _ in range(steps)]
    return (w, b), opt, losses


def _close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-11)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_lbfgs_matches_torch(name):
    (tw, tb), topt, tlosses = _torch_run(CONFIGS[name], 3)
    (w, b), opt, losses = _fastnn_run(CONFIGS[name], 3)
    _close(losses, tlosses)
    _close(w.numpy(), tw.detach().numpy())
    _close(b.numpy(), tb.detach().numpy())
    theirs, ours = topt.state_dict()["state"][0], opt.state_dict()["state"][0]
    assert set(ours) == set(theirs)
    for key in ("func_evals", "n_iter", "t", "H_diag", "prev_loss"):
        _close(float(ours[key]), float(theirs[key]))
    for key in ("d", "prev_flat_grad"):
        _close(ours[key], theirs[key].numpy())
    assert len(ours["old_dirs"]) == len(theirs["old_dirs"])
    for a, c in zip(ours["old_dirs"] + ours["old_stps"], theirs["old_dirs"] +
                    theirs["old_stps"]):
        _close(a, c.numpy())


def test_state_dict_loads_from_torch_and_back():
    kwargs = CONFIGS["wolfe"]
    _, _, want = _torch_run(kwargs, 4)
    (tw, tb), topt, _ = _torch_run(kwargs, 2)
    params = (Parameter.from_numpy(tw.detach().numpy(), "connective", fnn.float64, "cpu"),
              Parameter.from_numpy(tb.detach().numpy(), "bias", fnn.float64, "cpu"))
    ours = optim.LBFGS(list(params), **kwargs)
    ours.load_state_dict(topt.state_dict())
    _, _, rest = _fastnn_run(kwargs, 2, params=params, opt=ours)
    _close(rest, want[2:])
    (w, b), opt, _ = _fastnn_run(kwargs, 2)
    sd = opt.state_dict()
    assert list(sd) == list(topt.state_dict()) == ["state", "param_groups"]

    def tensors(v):
        if isinstance(v, list):
            return [tensors(x) for x in v]
        return torch.as_tensor(v) if isinstance(v, np.ndarray) else v

    tparams = (torch.tensor(w.numpy(), requires_grad=True),
               torch.tensor(b.numpy(), requires_grad=True))
    theirs = torch.optim.LBFGS(list(tparams), **kwargs)
    theirs.load_state_dict({"state": {0: {k: tensors(v) for k, v in sd["state"][0].items()}},
                            "param_groups": sd["param_groups"]})
    _, _, rest = _torch_run(kwargs, 2, params=tparams, opt=theirs)
    _close(rest, want[2:])


def test_lbfgs_refuses_groups_and_apply():
    w = Parameter.from_numpy(W0, "connective", fnn.float64, "cpu")
    b = Parameter.from_numpy(B0, "bias", fnn.float64, "cpu")
    with pytest.raises(ValueError, match="groups"):
        optim.LBFGS([{"params": [w]}, {"params": [b]}])
    opt = optim.LBFGS([w, b])
    with pytest.raises(TypeError, match="closure"):
        opt.apply_gradients([(w, np.zeros((3, 2)))])
    with pytest.raises(ValueError, match="line_search_fn"):
        optim.LBFGS([w], line_search_fn="armijo")


def test_a_checkpoint_resumes_exactly(tmp_path):
    kwargs = CONFIGS["wolfe-short-history"]
    _, _, want = _fastnn_run(kwargs, 4)
    (w, b), opt, _ = _fastnn_run(kwargs, 2)
    fnn.save({"opt": opt.state_dict()}, tmp_path / "lbfgs.safetensors")
    again = optim.LBFGS([w, b], **dict(kwargs, lr=0.1))
    again.load_state_dict(fnn.load(tmp_path / "lbfgs.safetensors")["opt"])
    assert again.param_groups[0]["lr"] == kwargs["lr"]
    _, _, rest = _fastnn_run(kwargs, 2, params=(w, b), opt=again)
    np.testing.assert_array_equal(rest, want[2:])
