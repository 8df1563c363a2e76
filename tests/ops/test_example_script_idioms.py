"""Idioms of PyTorch's own example scripts (github.com/pytorch/examples) that fastnn
refused: dropout2d on a 2-D input (mnist_rnn), a range as an index (forward_forward)."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F


def test_dropout2d_of_a_2d_input_drops_elements_with_pytorchs_warning():
    fnn.manual_seed(0)
    x = fnn.ones(64, 64)
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        y = F.dropout2d(x, 0.5).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0}
    # one mask value per element (PyTorch's feature dropout of an (N, C) input)
    assert 0.4 < (y == 0).mean() < 0.6 and not (y == 0).all(1).any()
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout3d"):
        z = F.dropout3d(fnn.ones(40, 3), 0.5).numpy()
    assert all(len(set(row)) == 1 for row in z)  # whole rows (one sample of 40 channels)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"), pytest.warns(UserWarning):
        F.dropout2d(fnn.ones(5), 0.5)


def test_range_as_an_index():
    x = fnn.zeros(3, 4)
    x[range(3), fnn.tensor([0, 1, 3])] = 5.0
    want = np.zeros((3, 4))
    want[range(3), [0, 1, 3]] = 5.0
    np.testing.assert_array_equal(x.numpy(), want)
    assert x[range(0, 3, 2)].shape == (2, 4)
    np.testing.assert_array_equal(x[range(2), 1].numpy(), [0.0, 5.0])


def test_the_first_argument_by_pytorchs_name_input():
    """Llama's generation scores tokens with F.cross_entropy(input=logits.transpose(1, 2),
    target=tokens, reduction="none", ignore_index=pad_id): TypeError (fastnn's first
    parameter is named logits); every function and fastnn.NAME takes input= now."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((2, 5, 4)).astype(np.float32)
    tokens = np.array([[1, 3, -1, 0], [4, -1, 2, 2]])
    results = []
    for lib, fn in ((fnn, F), (torch, torch.nn.functional)):
        x, t = lib.tensor(logits), lib.tensor(tokens)
        results.append([
            fn.cross_entropy(input=x, target=t, reduction="none", ignore_index=-1),
            fn.softmax(input=x, dim=1), lib.sum(input=x, dim=0), fn.relu(input=x),
            fn.mse_loss(input=x, target=x * 2), fn.layer_norm(input=x, normalized_shape=(4,))])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)
    x = fnn.tensor(logits)
    with pytest.raises(TypeError, match="got 'logits' and PyTorch's 'input' for it"):
        F.cross_entropy(x, input=x, target=fnn.tensor(tokens))
    with pytest.raises(TypeError, match="missing required argument: 'target'"):
        F.cross_entropy(input=x)
    with pytest.raises(TypeError, match=r"missing required argument: 'logits' \(PyTorch's"):
        F.cross_entropy(target=fnn.tensor(tokens))
    assert isinstance(fnn.Generator(), fnn.Generator)  # a class is not wrapped
    # where PyTorch's input is the second argument, input= is that argument, not the first
    found = fnn.searchsorted(fnn.tensor([1.0, 3.0]), input=fnn.tensor([2.0]))
    assert found.tolist() == [1]
