"""Module lookups (get_parameter, get_buffer, set_submodule), the dtype/device helpers
(type, bfloat16, to_empty, share_memory) and the optimizer step hooks, as PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn


def _model():
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))


def test_lookups_by_dotted_path():
    m = _model()
    assert m.get_parameter("0.weight") is m[0].weight
    assert m.get_buffer("1.running_mean") is m[1].running_mean
    with pytest.raises(AttributeError, match="no parameter 'nope'"):
        m.get_parameter("0.nope")
    with pytest.raises(AttributeError, match="no buffer 'weight'"):
        m.get_buffer("0.weight")
    replacement = nn.Linear(4, 5)
    m.set_submodule("2", replacement)
    assert m[2] is replacement and "2.weight" in m.state_dict()
    with pytest.raises(AttributeError, match="strict=True"):
        m.set_submodule("extra", nn.Identity(), strict=True)
    with pytest.raises(TypeError, match="is not a Module"):
        m.set_submodule("2", 3)


def test_same_names_as_pytorch():
    torch = pytest.importorskip("torch")
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    ours = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    for target in ("0.weight", "0.bias", "1.weight"):
        assert tuple(ours.get_parameter(target).shape) == tuple(
            theirs.get_parameter(target).shape)
    assert tuple(ours.get_buffer("1.running_var").shape) == tuple(
        theirs.get_buffer("1.running_var").shape)


def test_type_to_empty_and_share_memory():
    m = _model()
    assert m.type(fnn.float64) is m and m[0].weight.dtype is fnn.float64
    assert m[1].num_batches_tracked.dtype is fnn.int64  # integer buffers keep their dtype
    assert m.to_empty(device="cpu") is m and m.share_memory() is m


def test_step_hooks_run_around_every_step_and_can_be_removed():
    w = nn.Parameter(fnn.ones(2))
    opt = fnn.optim.SGD([w], lr=0.5)
    seen = []
    pre = opt.register_step_pre_hook(lambda o, a, k: seen.append(("pre", o is opt,
                                                                   w.numpy().copy())))
    opt.register_step_post_hook(lambda o, a, k: seen.append(("post", o is opt,
                                                             w.numpy().copy())))
    w.grad = fnn.ones(2)
    opt.step()
    assert [s[:2] for s in seen] == [("pre", True), ("post", True)]
    np.testing.assert_allclose(seen[0][2], 1.0)  # before the update
    np.testing.assert_allclose(seen[1][2], 0.5)  # after it
    pre.remove()
    seen.clear()
    opt.step()
    assert [s[0] for s in seen] == ["post"]


def test_a_pre_hook_may_replace_the_arguments():
    w = nn.Parameter(fnn.ones(1))
    opt = fnn.optim.SGD([w], lr=0.1)
    # (args start with the optimizer itself, as PyTorch's)
    opt.register_step_pre_hook(lambda o, a, k: ((o,), {"closure": lambda: fnn.tensor(7.0)}))
    w.grad = fnn.ones(1)
    assert opt.step().item() == 7.0  # the closure the hook gave
    bad = fnn.optim.Adam([w])
    bad.register_step_pre_hook(lambda o, a, k: "nonsense")
    with pytest.raises(RuntimeError, match=r"tuple of \(new_args, new_kwargs\)"):
        bad.step()


def test_step_hooks_run_once_for_every_optimizer_class():
    for cls in (fnn.optim.Adam, fnn.optim.AdamW, fnn.optim.RMSprop, fnn.optim.Adagrad):
        w = nn.Parameter(fnn.ones(2))
        opt = cls([w])
        calls = []
        opt.register_step_post_hook(lambda o, a, k, calls=calls: calls.append(1))
        w.grad = fnn.ones(2)
        opt.step()
        assert calls == [1], cls.__name__


def test_step_hooks_match_pytorchs_calls():
    torch = pytest.importorskip("torch")
    calls = {}
    for name, lib, params in (("torch", torch, [torch.nn.Parameter(torch.ones(2))]),
                              ("fastnn", fnn, [nn.Parameter(fnn.ones(2))])):
        opt = lib.optim.SGD(params, lr=0.1)
        log = calls[name] = []
        opt.register_step_pre_hook(lambda o, a, k, log=log: log.append(
            ("pre", [x is o for x in a], sorted(k))))
        opt.register_step_post_hook(lambda o, a, k, log=log: log.append(
            ("post", [x is o for x in a], sorted(k))))
        params[0].grad = lib.ones(2)
        opt.step()
    assert calls["torch"] == calls["fastnn"]
