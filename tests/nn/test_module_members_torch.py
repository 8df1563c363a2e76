"""Writes straight into a module's ``_parameters``, ``_buffers`` and ``_modules`` (as
PyTorch code does: a classifier swapped through ``_modules``, pruning's ``del
module._parameters[...]``) change what the module's attributes and forward see, as in
PyTorch, also after a deepcopy and a pickle."""

import copy
import pickle

import numpy as np
import pytest

import fastnn as fnn

torch = pytest.importorskip("torch")


def _story(lib):
    """What a script sees along a run of direct writes, with ``lib`` as torch."""
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)
            self.register_buffer("shift", lib.zeros(2))

        def forward(self, x):
            return self.fc(x) + self.shift

    seen = []
    model = Net()
    model._modules["fc"] = nn.Linear(3, 2, bias=False)  # transfer learning's swap
    seen.append((model.fc.bias is None, tuple(model(lib.ones(1, 3)).shape)))
    weight = nn.Parameter(lib.ones(2, 3))
    model.fc._parameters["weight"] = weight
    seen.append((model.fc.weight is weight, model(lib.ones(1, 3)).tolist()))
    model._buffers["shift"] = lib.ones(2)
    seen.append(model(lib.ones(1, 3)).tolist())
    seen.append([n for n, _ in model.named_parameters()])
    del model.fc._parameters["weight"]
    seen.append(hasattr(model.fc, "weight"))
    model.fc._parameters.update({"weight": weight})
    seen.append(model.fc.weight is weight)
    twin = copy.deepcopy(model)
    twin._modules["fc"] = nn.Identity()
    seen.append((type(twin.fc).__name__, type(model.fc).__name__))
    layer = nn.Linear(2, 2)
    thawed = pickle.loads(pickle.dumps(layer))
    thawed._parameters["bias"] = None
    seen.append((thawed.bias is None, layer.bias is None))
    with lib.no_grad():
        thawed._parameters["weight"].fill_(2.0)
    seen.append(thawed(lib.ones(1, 2)).tolist())
    del model.shift
    seen.append(("shift" in dict(model.named_buffers()), hasattr(model, "shift")))
    model._modules.pop("fc")
    seen.append(hasattr(model, "fc"))
    return seen


def test_direct_writes_to_the_member_dicts_are_seen_as_in_torch():
    theirs = _story(torch)
    ours = _story(fnn)
    assert ours == theirs, "\n".join(f"{a}\n{b}" for a, b in zip(ours, theirs) if a != b)
    assert np.isclose(ours[1][1][0][0], 3.0)  # the forward ran on the swapped weight
