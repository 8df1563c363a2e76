"""ParameterList and ParameterDict: their entries are the owner's parameters (names,
state_dict, optimizer, gradients), as PyTorch's."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn, optim

try:
    import torch
except ImportError:
    torch = None


class Mixer(nn.Module):
    def __init__(self):
        super().__init__()
        self.scales = nn.ParameterList([fnn.ones(3), nn.Parameter(fnn.tensor([1.0, 2.0, 3.0]))])
        self.table = nn.ParameterDict({"shift": fnn.zeros(3)})

    def forward(self, x):
        for s in self.scales:
            x = x * s
        return x + self.table["shift"]


def test_entries_are_the_owners_parameters_and_train():
    m = Mixer()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["scales.0", "scales.1", "table.shift"]
    assert set(m.state_dict()) == set(names)
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in m.parameters())
    x = np.array([0.5, -1.0, 2.0])
    opt = optim.SGD(m.parameters(), lr=0.1)
    loss = m(fnn.tensor(x)).sum()
    loss.backward()
    np.testing.assert_allclose(m.scales[0].grad.numpy(), x * [1.0, 2.0, 3.0])
    np.testing.assert_allclose(m.table["shift"].grad.numpy(), np.ones(3))
    opt.step()
    np.testing.assert_allclose(m.table["shift"].numpy(), -0.1 * np.ones(3))
    np.testing.assert_allclose(m.scales[0].numpy(), 1 - 0.1 * x * [1.0, 2.0, 3.0])
    copy = Mixer()
    copy.load_state_dict(m.state_dict())
    np.testing.assert_array_equal(copy.scales[0].numpy(), m.scales[0].numpy())


def test_list_and_dict_operations():
    plist = nn.ParameterList()
    plist.append(fnn.ones(2)).extend([fnn.zeros(1), fnn.ones(4)])
    assert len(plist) == 3 and [p.shape for p in plist] == [(2,), (1,), (4,)]
    plist[1] = fnn.full((5,), 2.0)
    assert plist[1].shape == (5,) and isinstance(plist[1], nn.Parameter)
    assert [p.shape for p in plist[1:]] == [(5,), (4,)]
    assert [n for n, _ in plist.named_parameters()] == ["0", "1", "2"]
    pdict = nn.ParameterDict([("a", fnn.ones(1))])
    pdict.update({"b": fnn.ones(2)})
    assert list(pdict) == ["a", "b"] and "a" in pdict and pdict.get("c") is None
    assert pdict.pop("a").shape == (1,) and list(pdict.keys()) == ["b"]
    del pdict["b"]
    assert len(pdict) == 0 and list(pdict.parameters()) == []


def test_bad_entries_are_named():
    with pytest.raises(TypeError, match="ParameterList: entry 0 is a list"):
        nn.ParameterList([[1.0, 2.0]])
    with pytest.raises(TypeError, match="int64 tensor; parameters are floating point"):
        nn.ParameterList([fnn.tensor([1, 2])])
    with pytest.raises(KeyError, match="without '.'"):
        nn.ParameterDict({"a.b": fnn.ones(1)})
    with pytest.raises(TypeError, match="use append"):
        nn.ParameterList().extend(fnn.ones(3))


@pytest.mark.skipif(torch is None, reason="PyTorch not installed")
def test_names_match_pytorch():
    class TorchMixer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scales = torch.nn.ParameterList([torch.ones(3), torch.ones(3)])
            self.table = torch.nn.ParameterDict({"shift": torch.zeros(3)})

    assert [n for n, _ in TorchMixer().named_parameters()] == [
        n for n, _ in Mixer().named_parameters()]
