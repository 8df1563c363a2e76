"""The Module protocol against PyTorch's, part two: buffers, load_state_dict's result,
Sequential(OrderedDict), dtype/device moves that keep the Parameter objects, and the
tree-wide settings."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn, optim
from tests.nn.module_pair import tied_pair as _pair
from tests.nn.module_pair import torch_or_skip as _torch

# ---------------------------------------------------------------- buffers and state dicts


class _WithBuffers(nn.Module):
    def __init__(self, lib_nn, make):
        super().__init__()
        self.lin = lib_nn.Linear(2, 2)
        self.register_buffer("kept", make([1.0, 2.0]))
        self.register_buffer("scratch", make([3.0]), persistent=False)


def test_non_persistent_buffers_stay_out_of_state_dict_as_pytorchs():
    torch = _torch()

    class Theirs(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(2, 2)
            self.register_buffer("kept", torch.tensor([1.0, 2.0]))
            self.register_buffer("scratch", torch.tensor([3.0]), persistent=False)

    ours, theirs = _WithBuffers(nn, fnn.tensor), Theirs()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    ours.double()
    assert ours.scratch.dtype is fnn.float64  # moved with the module all the same
    del ours.scratch
    assert [n for n, _ in ours.named_buffers()] == ["kept"]
    with pytest.raises(TypeError, match=r"register_buffer: buffer 'x' must be a fastnn "
                                        r"Tensor or None, got list"):
        ours.register_buffer("x", [1.0])
    with pytest.raises(KeyError, match=r"'lin' is already an attribute"):
        ours.register_buffer("lin", fnn.zeros((1,)))


def test_load_state_dict_strict_and_not_as_pytorchs():
    torch = _torch()
    ours, theirs = _pair(torch)
    sd = {k: v.numpy() for k, v in theirs.state_dict().items()}
    result = ours.load_state_dict(sd)
    assert result == (theirs.load_state_dict(theirs.state_dict()))
    assert repr(result) == "<All keys matched successfully>"
    partial = dict(sd)
    del partial["out.bias"], partial["block.1.running_var"]
    partial["extra.weight"] = np.zeros(2)
    tpartial = {k: torch.tensor(v) for k, v in partial.items()}
    before = ours.out.bias.numpy().copy()
    partial["inp.weight"] = sd["inp.weight"] * 0 + 7
    result = ours.load_state_dict(partial, strict=False)
    tresult = theirs.load_state_dict(tpartial, strict=False)
    assert result.missing_keys == tresult.missing_keys
    assert result.unexpected_keys == tresult.unexpected_keys
    assert (ours.inp.weight.numpy() == 7).all()  # what matched was loaded
    np.testing.assert_array_equal(ours.out.bias.numpy(), before)  # the rest left alone
    with pytest.raises(ValueError, match=r"missing keys \['block.1.running_var', 'out.bias'\], "
                                         r"unexpected keys \['extra.weight'\]"):
        ours.load_state_dict(partial)
    wrong = dict(sd, **{"out.weight": np.zeros((3, 4))})
    with pytest.raises(ValueError, match=r"out.weight: checkpoint \(3, 4\), model \(2, 4\)"):
        ours.load_state_dict(wrong, strict=False)  # a shape mismatch raises, strict or not
    # PyTorch raises RuntimeError for both: `except RuntimeError` code must catch ours
    for bad, strict in ((partial, True), (wrong, False)):
        with pytest.raises(RuntimeError):
            theirs.load_state_dict({k: torch.tensor(v) for k, v in bad.items()}, strict=strict)
        with pytest.raises(RuntimeError, match="does not fit this model"):
            ours.load_state_dict(bad, strict=strict)


# ---------------------------------------------------------------- containers


def test_sequential_from_an_ordered_dict_names_its_layers_as_pytorchs():
    torch = _torch()
    ours = nn.Sequential(OrderedDict([("conv", nn.Conv2d(1, 2, 3)), ("bn", nn.BatchNorm2d(2)),
                                      ("act", nn.ReLU())]))
    theirs = torch.nn.Sequential(OrderedDict([("conv", torch.nn.Conv2d(1, 2, 3)),
                                              ("bn", torch.nn.BatchNorm2d(2)),
                                              ("act", torch.nn.ReLU())]))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours.conv is ours[0] and isinstance(ours[1:], nn.Sequential)
    assert [n for n, _ in ours[1:].named_children()] == ["bn", "act"]
    assert repr(ours).startswith("Sequential(\n  (conv): Conv2d(")
    x = fnn.randn((2, 1, 5, 5))
    _, grads = ours.reverse(x, fnn.ones((2, 2, 3, 3)))
    assert set(grads) == {"conv.weight", "conv.bias", "bn.weight", "bn.bias"}


def _edit(lib, s):
    """insert, append, del, pop, item assignment and extend on a Sequential: the names
    and classes after each, as PyTorch's (positions renumbered)."""
    s.insert(1, lib.nn.ELU())
    s.insert(-1, lib.nn.GELU())
    s.append(lib.nn.SiLU())
    seen = [[(n, type(m).__name__) for n, m in s.named_children()]]
    del s[0]
    popped = type(s.pop(1)).__name__
    s[0] = lib.nn.Identity()
    del s[1:3]
    s.extend(lib.nn.Sequential(lib.nn.ReLU()))
    seen.append([(n, type(m).__name__) for n, m in s.named_children()])
    return seen, popped


def test_sequential_insert_delete_pop_as_pytorchs():
    ours = _edit(fnn, nn.Sequential(nn.ReLU(), nn.Tanh(), nn.Sigmoid()))
    assert ours == ([[("0", "ReLU"), ("1", "ELU"), ("2", "Tanh"), ("3", "GELU"),
                      ("4", "Sigmoid"), ("5", "SiLU")],
                     [("0", "Identity"), ("1", "SiLU"), ("2", "ReLU")]], "Tanh")
    torch = _torch()
    assert ours == _edit(torch, torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Tanh(),
                                                    torch.nn.Sigmoid()))
    with pytest.raises(IndexError):
        nn.Sequential(nn.ReLU()).insert(3, nn.ReLU())


def test_state_dict_takes_pytorchs_prefix_destination_and_keep_vars():
    model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    assert list(model.state_dict(prefix="net.")) == [
        "net." + k for k in model.state_dict()]
    kept = model.state_dict(keep_vars=True)
    assert kept["0.weight"] is model[0].weight and kept["1.running_mean"] is model[1].running_mean
    into = {"other": 1}
    assert model.state_dict(destination=into) is into and len(into) == 1 + len(kept)
    assert isinstance(model.state_dict()["0.bias"], np.ndarray)  # (fastnn's: host arrays)


# ---------------------------------------------------------------- dtypes and devices


def test_to_keeps_the_parameter_objects_as_pytorch_and_an_older_optimizer_steps_them():
    torch = _torch()
    theirs = torch.nn.Linear(3, 2)
    before = list(theirs.parameters())
    theirs.double()
    assert all(a is b for a, b in zip(before, theirs.parameters()))  # what torch does
    model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    params = list(model.parameters())
    opt = optim.Adam(model.parameters(), lr=0.1)
    y = model(fnn.randn((4, 3)))
    (y * y).sum().backward()  # not y.sum(): BatchNorm would make its gradient 0
    assert model.double() is model
    assert all(a is b for a, b in zip(params, model.parameters(), strict=True))
    assert all(p.dtype is fnn.float64 and p.grad.dtype is fnn.float64 for p in params)
    assert model[1].running_mean.dtype is fnn.float64
    assert model[1].num_batches_tracked.dtype is fnn.int64  # integer buffers keep theirs
    old = params[0].numpy().copy()
    opt.step()
    assert params[0].dtype is fnn.float64 and (params[0].numpy() != old).all()
    assert model.float() is model and params[0].dtype is fnn.float32
    assert model.half() is model and params[0].dtype is fnn.float16
    assert model.to("cpu", fnn.float64) is model and params[0].dtype is fnn.float64
    assert model.to(fnn.zeros((1,), dtype=fnn.float32)) is model
    assert params[0].dtype is fnn.float32 and params[0].device == "cpu"


def test_to_another_device_keeps_the_parameter_objects():
    if not any(r.name == "opencl" and r.available for r in fnn.backends()):
        pytest.skip("needs a second device (opencl)")
    model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    params = list(model.parameters())
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = fnn.randn((4, 3))
    y = model(x)
    (y * y).sum().backward()
    opt.step()
    assert model.to("opencl") is model
    assert all(a is b for a, b in zip(params, model.parameters(), strict=True))
    assert params[0].device == "opencl" and model[1].running_var.device == "opencl"
    old = params[0].numpy().copy()
    y = model(x.to("opencl"))
    (y * y).sum().backward()
    opt.step()  # the optimizer made before still steps them, on their new device
    assert params[0].device == "opencl" and (params[0].numpy() != old).all()


# ---------------------------------------------------------------- tree-wide settings


def test_train_eval_requires_grad_and_zero_grad_return_and_recurse_as_pytorchs():
    calls = []

    class Custom(nn.Module):
        def forward(self, x):
            return x

        def train(self, mode=True):  # PyTorch calls each child's own train()
            calls.append(mode)
            return super().train(mode)

    model = nn.Sequential(nn.Linear(2, 2), Custom(), nn.Dropout(0.5))
    assert model.eval() is model and calls == [False]
    assert not any(m.training for m in model.modules())
    assert model.train() is model and calls == [False, True]
    assert model.requires_grad_(False) is model
    assert not any(p.requires_grad for p in model.parameters())
    model.requires_grad_()
    model(fnn.randn((3, 2))).sum().backward()
    grads = [p.grad for p in model.parameters()]
    model.zero_grad(set_to_none=False)
    assert [p.grad for p in model.parameters()] == grads  # the same tensors, zeroed
    assert all((p.grad.numpy() == 0).all() for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())
