"""``nn.Parameter`` and ``nn.Buffer`` as PyTorch spells them: ``Parameter(data,
requires_grad=False)`` (frozen parameters, integer ones), ``Parameter()`` (empty), and
``self.x = nn.Buffer(t, persistent=...)`` registering a buffer; fastnn's own
``Parameter(data, "bias")`` still names the parameter's class."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn
from tests.helpers import usable_or_skip


def test_parameter_takes_pytorchs_requires_grad():
    frozen = nn.Parameter(fnn.ones(3), requires_grad=False)
    assert isinstance(frozen, nn.Parameter) and not frozen.requires_grad and frozen.is_leaf
    assert not nn.Parameter(fnn.ones(3), False).requires_grad  # positionally, as torch
    counts = nn.Parameter(fnn.tensor([1, 2, 3]), requires_grad=False)
    assert counts.dtype is fnn.int64
    np.testing.assert_array_equal(counts.numpy(), [1, 2, 3])
    with pytest.raises(RuntimeError, match="floating point dtype can require gradients"):
        nn.Parameter(fnn.tensor([1, 2, 3]))
    empty = nn.Parameter()
    assert empty.shape == (0,) and empty.requires_grad
    assert nn.Parameter(fnn.ones(2), "bias").param_class == "bias"


def test_a_frozen_parameter_is_registered_and_not_trained():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(fnn.full((3,), 2.0), requires_grad=False)
            self.w = nn.Parameter(fnn.ones(3))

        def forward(self, x):
            return (x * self.scale * self.w).sum()

    m = Model()
    opt = fnn.optim.SGD(m.parameters(), lr=0.1)
    m(fnn.ones(3)).backward()
    opt.step()
    assert [n for n, _ in m.named_parameters()] == ["scale", "w"]
    assert m.scale.grad is None
    np.testing.assert_allclose(m.scale.numpy(), 2.0)
    np.testing.assert_allclose(m.w.numpy(), 1.0 - 0.1 * 2.0)


class _WithBuffers(nn.Module):
    def __init__(self, lib_nn, ones, zeros):
        super().__init__()
        self.a = lib_nn.Buffer(ones(2))
        self.b = lib_nn.Buffer(zeros(2), persistent=False)


def test_buffer_assignment_registers_a_buffer():
    m = _WithBuffers(nn, fnn.ones, fnn.zeros)
    assert type(m.a) is fnn.Tensor
    assert list(m.state_dict()) == ["a"]
    assert [n for n, _ in m.named_buffers()] == ["a", "b"]
    m.a = nn.Buffer(fnn.ones(3), persistent=False)  # re-registered, now left out
    assert list(m.state_dict()) == [] and m.a.shape == (3,)
    with pytest.raises(TypeError, match="Buffer: data must be a fastnn Tensor"):
        nn.Buffer([1.0, 2.0])


def test_buffers_and_state_dict_keys_match_pytorch():
    torch = pytest.importorskip("torch")

    class Theirs(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Buffer(torch.ones(2))
            self.b = torch.nn.Buffer(torch.zeros(2), persistent=False)

    theirs, ours = Theirs(), _WithBuffers(nn, fnn.ones, fnn.zeros)
    assert list(theirs.state_dict()) == list(ours.state_dict())
    assert [n for n, _ in theirs.named_buffers()] == [n for n, _ in ours.named_buffers()]
    t_frozen = torch.nn.Parameter(torch.ones(2), requires_grad=False)
    assert nn.Parameter(fnn.ones(2), requires_grad=False).requires_grad is t_frozen.requires_grad


@pytest.mark.parametrize("device", ["cpu", "opencl"])
def test_parameter_shares_the_storage_of_the_tensor_it_wraps(device):
    # PyTorch's Parameter(t) is t's storage as a new leaf: a write through either is seen
    # by both (fastnn used to copy, a silent difference)
    usable_or_skip(device)
    with fnn.use(device):
        w = fnn.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
        p = nn.Parameter(w)
        assert p.is_leaf and p.requires_grad and p.grad_fn is None and p.device == w.device
        w.add_(1.0)
        np.testing.assert_array_equal(p.detach().numpy(), np.arange(6).reshape(2, 3) + 1)
        with fnn.no_grad():
            p.mul_(2.0)
        np.testing.assert_array_equal(w.numpy(), (np.arange(6).reshape(2, 3) + 1) * 2)
        # an optimizer's update is seen through the tensor, too
        (p * p).sum().backward()
        np.testing.assert_array_equal(p.grad.numpy(), 2 * w.numpy())
        before = w.numpy().copy()
        fnn.optim.SGD([p], lr=0.25).step()
        np.testing.assert_allclose(w.numpy(), before - 0.25 * 2 * before)


def test_parameter_of_a_tensor_with_history_is_a_leaf_sharing_it():
    x = fnn.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = x * 2
    p = nn.Parameter(y)
    assert p.is_leaf and p.grad_fn is None and p.requires_grad
    (p * p).sum().backward()
    np.testing.assert_array_equal(p.grad.numpy(), [4.0, -8.0, 12.0])
    assert x.grad is None  # no history through the parameter
    with fnn.no_grad():
        p.zero_()
    np.testing.assert_array_equal(y.detach().numpy(), [0.0, 0.0, 0.0])


def test_parameter_sharing_matches_pytorch():
    torch = pytest.importorskip("torch")
    data = np.array([[0.5, -1.0], [2.0, 3.0]], np.float32)
    results = []
    for lib, tnn, make in ((torch, torch.nn, torch.tensor), (fnn, nn, fnn.tensor)):
        w = make(data.copy())
        p = tnn.Parameter(w)
        w.mul_(3.0)
        with lib.no_grad():
            p.add_(1.0)
        frozen = tnn.Parameter(w, requires_grad=False)
        w.sub_(0.5)
        results.append([np.array(t.detach().numpy()) for t in (w, p, frozen)])
    for got, want in zip(results[1], results[0]):
        np.testing.assert_array_equal(got, want)
