"""An optimizer's state_dict keys its per-parameter state by the parameter's int index,
as PyTorch's (``sd["state"][0]["step"]``); the "0" strings fastnn wrote before still
load, and a checkpoint keeps the ints."""

import numpy as np
import pytest

import fastnn as fnn


def _stepped(cls=fnn.optim.Adam):
    params = [fnn.zeros(3, requires_grad=True), fnn.zeros((2, 2), requires_grad=True)]
    opt = cls(params, lr=0.1)
    for p in params:
        p.grad = fnn.ones(p.shape)
    opt.step()
    return params, opt


@pytest.mark.parametrize("cls", [fnn.optim.Adam, fnn.optim.SGD, fnn.optim.LBFGS])
def test_state_is_keyed_by_int_as_in_pytorch(cls):
    torch = pytest.importorskip("torch")
    if cls is fnn.optim.SGD:
        params, opt = [fnn.zeros(3, requires_grad=True)], None
        opt = fnn.optim.SGD(params, lr=0.1, momentum=0.9)
        params[0].grad = fnn.ones(3)
        opt.step()
        tp = [torch.zeros(3, requires_grad=True)]
        topt = torch.optim.SGD(tp, lr=0.1, momentum=0.9)
        tp[0].grad = torch.ones(3)
        topt.step()
    elif cls is fnn.optim.LBFGS:
        params = [fnn.zeros(3, requires_grad=True)]
        opt = fnn.optim.LBFGS(params)
        opt.step(lambda: (params[0] - 1.0).pow(2).sum().backward() or
                 (params[0] - 1.0).pow(2).sum())
        tp = [torch.zeros(3, requires_grad=True)]
        topt = torch.optim.LBFGS(tp)

        def closure():
            topt.zero_grad()
            loss = (tp[0] - 1.0).pow(2).sum()
            loss.backward()
            return loss
        topt.step(closure)
    else:
        params, opt = _stepped(cls)
        tp = [torch.zeros(3, requires_grad=True), torch.zeros((2, 2), requires_grad=True)]
        topt = torch.optim.Adam(tp, lr=0.1)
        for p in tp:
            p.grad = torch.ones(p.shape)
        topt.step()
    assert list(opt.state_dict()["state"]) == list(topt.state_dict()["state"])
    assert all(type(k) is int for k in opt.state_dict()["state"])


def test_string_keys_still_load_and_checkpoints_keep_ints(tmp_path):
    params, opt = _stepped()
    sd = opt.state_dict()
    assert float(sd["state"][0]["step"]) == 1.0
    old = dict(sd, state={str(k): v for k, v in sd["state"].items()})
    other_params, other = _stepped()
    other.load_state_dict(old)
    np.testing.assert_array_equal(other.state_dict()["state"][1]["exp_avg"],
                                  sd["state"][1]["exp_avg"])
    fnn.save({"optimizer": sd}, tmp_path / "c.pt")
    back = fnn.load(tmp_path / "c.pt")["optimizer"]
    assert list(back["state"]) == [0, 1]
    other.load_state_dict(back)


def test_adagrad_fills_every_state_when_built_as_pytorch():
    """PyTorch's Adagrad gives each parameter its state in the constructor (step 0, the sum
    at initial_accumulator_value): a parameter that never had a gradient is in state_dict,
    and opt.state[p]["sum"] is there before the first step."""
    torch = pytest.importorskip("torch")
    ours = [fnn.ones(3, requires_grad=True), fnn.ones(2, requires_grad=True)]
    theirs = [torch.ones(3, requires_grad=True), torch.ones(2, requires_grad=True)]
    opt = fnn.optim.Adagrad(ours, lr=0.1, initial_accumulator_value=0.5)
    topt = torch.optim.Adagrad(theirs, lr=0.1, initial_accumulator_value=0.5)
    np.testing.assert_array_equal(opt.state[ours[1]]["sum"].numpy(),
                                  topt.state[theirs[1]]["sum"].numpy())
    ours[0].grad, theirs[0].grad = fnn.ones(3), torch.ones(3)
    opt.step()
    topt.step()
    got, want = opt.state_dict()["state"], topt.state_dict()["state"]
    assert sorted(got) == sorted(want) == [0, 1]
    for i in (0, 1):
        assert float(got[i]["step"]) == float(want[i]["step"])
        np.testing.assert_allclose(got[i]["sum"], want[i]["sum"].numpy())
    np.testing.assert_allclose(ours[0].detach().numpy(), theirs[0].detach().numpy(), rtol=1e-6)


def test_state_dict_hooks_as_pytorch():
    """PyTorch's optimizer state-dict hooks: pre and post around state_dict() and
    load_state_dict(), a post hook's (or a load pre hook's) returned dict replacing it,
    prepend= putting a hook first, and remove() unregistering it."""
    torch = pytest.importorskip("torch")

    def run(lib, cls):
        params = [lib.ones(2, requires_grad=True)]
        opt = getattr(lib.optim, cls)(params, lr=0.1)
        seen = []
        opt.register_state_dict_pre_hook(lambda o: seen.append("pre"))
        opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
        handle = opt.register_state_dict_post_hook(lambda o, sd: seen.append("first"),
                                                   prepend=True)
        opt.register_load_state_dict_pre_hook(
            lambda o, sd: {**sd, "param_groups": [{**sd["param_groups"][0], "lr": 0.5}]})
        opt.register_load_state_dict_post_hook(lambda o: seen.append("loaded"))
        state = opt.state_dict()
        handle.remove()
        opt.state_dict()
        opt.load_state_dict({k: v for k, v in state.items() if k != "extra"})
        return seen, "extra" in state, opt.param_groups[0]["lr"]

    for cls in ("SGD", "LBFGS"):
        assert run(fnn, cls) == run(torch, cls) == (["pre", "first", "pre", "loaded"], True,
                                                    0.5)
