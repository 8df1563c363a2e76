"""fnn.compile(module) as torch.compile(module): a Module holding it as ``_orig_mod``
(state_dict keys prefixed, as checkpoint code expects), forwarding other attributes, with
torch.compile's keyword arguments accepted."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        self.scale = 3.0

    def forward(self, x):
        return self.body(x) * self.scale

    def describe(self):
        return f"net x{self.scale}"


def test_compiled_module_is_a_module_with_pytorchs_keys():
    fnn.manual_seed(0)
    model = Net()
    compiled = fnn.compile(model, mode="reduce-overhead", backend="inductor", dynamic=False)
    assert isinstance(compiled, nn.Module) and compiled._orig_mod is model
    assert list(compiled.state_dict()) == [f"_orig_mod.{k}" for k in model.state_dict()]
    assert [id(p) for p in compiled.parameters()] == [id(p) for p in model.parameters()]
    assert compiled.describe() == "net x3.0" and compiled.scale == 3.0  # the module's
    x = fnn.randn(5, 4)
    with fnn.no_grad():
        outs = [compiled(x) for _ in range(3)]
    for out in outs:
        np.testing.assert_array_equal(out.numpy(), model(x).numpy())
    assert compiled.stats["replayed"] == 2 and "program(s)" in repr(compiled)
    compiled.eval()
    assert not model.training and not model.body[0].training
    # a checkpoint of the compiled module loads into a plain one once the prefix goes
    state = {k.removeprefix("_orig_mod."): v for k, v in compiled.state_dict().items()}
    fresh = Net()
    fresh.load_state_dict(state)
    with fnn.no_grad():
        np.testing.assert_array_equal(fresh(x).numpy(), model(x).numpy())


def test_disable_returns_the_function_itself_and_unknown_names_fail():
    model = Net()
    assert fnn.compile(model, disable=True) is model
    compiled = fnn.compile(model)
    with pytest.raises(AttributeError, match="no_such_thing"):
        compiled.no_such_thing  # noqa: B018


def test_the_eager_warning_names_the_users_line():
    model = Net()
    compiled = fnn.compile(model)
    x = fnn.randn(3, 4)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        compiled(x).sum().backward()  # a backward outside: eager, said once
    assert seen and seen[0].filename == __file__


def test_state_dict_keys_match_torch_compile():
    torch = pytest.importorskip("torch")
    ours = fnn.compile(nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3)))
    theirs = torch.compile(torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.BatchNorm1d(3)))
    assert list(ours.state_dict()) == list(theirs.state_dict())
