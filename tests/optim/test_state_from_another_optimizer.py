"""load_state_dict refuses the state of another kind of optimizer (it loaded silently, and
the rule then ignored it or failed on a missing entry at the next step)."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn, optim

KINDS = {
    "sgd": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9),
    "rmsprop": lambda ps: optim.RMSProp(ps, lr=0.01),
    "adam": lambda ps: optim.Adam(ps, lr=0.01),
    "adamw": lambda ps: optim.AdamW(ps, lr=0.01),
}


def _stepped(kind):
    model = nn.Linear(3, 2, dtype=fnn.float64)
    opt = KINDS[kind](model.parameters())
    x = fnn.tensor(np.random.default_rng(0).standard_normal((4, 3)))
    model(x).sum().backward()
    opt.step()
    return model, opt


@pytest.mark.parametrize("saved", list(KINDS))
@pytest.mark.parametrize("loaded", list(KINDS))
def test_only_the_same_kind_of_state_loads(saved, loaded):
    state = _stepped(saved)[1].state_dict()
    model, _ = _stepped(loaded)
    target = KINDS[loaded](model.parameters())
    same = {saved, loaded} <= {"adam", "adamw"} or saved == loaded
    if same:
        target.load_state_dict(state)
        target.step()  # and it can go on
    else:
        with pytest.raises(ValueError, match="saved from another optimizer"):
            target.load_state_dict(state)


def test_a_partial_state_is_refused():
    _, opt = _stepped("adam")
    state = opt.state_dict()
    del state["state"][0]["exp_avg_sq"]
    model, _ = _stepped("adam")
    with pytest.raises(ValueError, match=r"keeps \['exp_avg', 'exp_avg_sq', 'step'\]"):
        optim.Adam(model.parameters(), lr=0.01).load_state_dict(state)


class _AMSGradLike(optim.Adam):
    """A user's rule on top of Adam that keeps one more state entry."""

    def _update(self, group, params, grads):
        super()._update(group, params, grads)
        for p in params:
            st = self.state[id(p)]
            st["max_exp_avg_sq"] = st["exp_avg_sq"]


class _CountingSGD(optim.SGD):
    """A user's rule on top of SGD that counts its updates (state even without momentum)."""

    def _update(self, group, params, grads):
        super()._update(group, params, grads)
        for p in params:
            st = self.state.setdefault(id(p), {})
            st["updates"] = st.get("updates", 0) + 1


class _DeclaredAMSGrad(_AMSGradLike):
    STATE_KEYS = optim.Adam.STATE_KEYS + ("max_exp_avg_sq",)


@pytest.mark.parametrize("make", [
    lambda ps: _AMSGradLike(ps, lr=0.01),
    lambda ps: _CountingSGD(ps, lr=0.1),
    lambda ps: _CountingSGD(ps, lr=0.1, momentum=0.9),
    lambda ps: _DeclaredAMSGrad(ps, lr=0.01),
], ids=["adam-plus-one", "sgd-counting", "sgd-momentum-counting", "declared-keys"])
def test_a_subclass_with_more_state_reloads_its_own(make):
    model = nn.Linear(3, 2, dtype=fnn.float64)
    opt = make(model.parameters())
    model(fnn.tensor(np.ones((4, 3)))).sum().backward()
    opt.step()
    again = make(model.parameters())
    again.load_state_dict(opt.state_dict())
    again.step()


def test_a_subclass_that_declares_its_keys_is_checked_against_them():
    _, adam = _stepped("adam")
    model, _ = _stepped("adam")
    with pytest.raises(ValueError, match="saved from another optimizer"):
        _DeclaredAMSGrad(model.parameters(), lr=0.01).load_state_dict(adam.state_dict())
