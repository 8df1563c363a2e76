"""A module's extra state (get_extra_state / set_extra_state), as PyTorch's: saved in
state_dict() under <prefix>_extra_state, given back by load_state_dict, through
fnn.save/fnn.load; a module that defines none has no such key."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn


def _counter_class(lib):
    class Counted(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(2, 2)
            self.seen = 0

        def get_extra_state(self):
            return {"seen": self.seen, "tag": "v1"}

        def set_extra_state(self, state):
            self.seen = state["seen"]

    return Counted


def test_extra_state_is_saved_and_loaded_under_pytorchs_key(tmp_path):
    Counted = _counter_class(fnn)
    outer = nn.Sequential(nn.ReLU(), Counted())
    outer[1].seen = 7
    state = outer.state_dict()
    assert set(state) == {"1.lin.weight", "1.lin.bias", "1._extra_state"}
    assert state["1._extra_state"] == {"seen": 7, "tag": "v1"}
    fnn.save(state, tmp_path / "m.safetensors")
    fresh = nn.Sequential(nn.ReLU(), Counted())
    result = fresh.load_state_dict(fnn.load(tmp_path / "m.safetensors"))
    assert fresh[1].seen == 7 and result.missing_keys == [] and result.unexpected_keys == []
    np.testing.assert_array_equal(fresh[1].lin.weight.numpy(), outer[1].lin.weight.numpy())
    partial = {k: v for k, v in state.items() if k != "1._extra_state"}
    with pytest.raises(RuntimeError, match=r"missing keys \['1._extra_state'\]"):
        fresh.load_state_dict(partial)
    assert fresh.load_state_dict(partial, strict=False).missing_keys == ["1._extra_state"]
    with pytest.raises(RuntimeError, match=r"unexpected keys \['_extra_state'\]"):
        nn.Linear(2, 2).load_state_dict({**nn.Linear(2, 2).state_dict(), "_extra_state": 1})
    assert "_extra_state" not in "".join(nn.Linear(2, 2).state_dict())


def test_extra_state_keys_match_pytorchs():
    torch = pytest.importorskip("torch")
    ours = nn.Sequential(nn.Linear(2, 2), _counter_class(fnn)())
    theirs = torch.nn.Sequential(torch.nn.Linear(2, 2), _counter_class(torch)())
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
