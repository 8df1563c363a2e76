"""PyTorch's memory formats (accepted; layouts stay row-major; is_contiguous answers from
the strides), Module.to's non_blocking/memory_format, and manual_seed returning the
default generator: against torch where it is installed."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn


def _channels_last(lib, shape):
    x = lib.ones(*shape)
    if len(shape) == 4:
        return x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
    return x.permute(0, 2, 3, 4, 1).contiguous().permute(0, 4, 1, 2, 3)


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3, 1, 5), (1, 1, 1, 1), (2, 3, 2, 4, 5)])
def test_is_contiguous_in_a_memory_format(shape):
    fmt = fnn.channels_last if len(shape) == 4 else fnn.channels_last_3d
    plain, last = fnn.ones(*shape), _channels_last(fnn, shape)
    answers = [plain.is_contiguous(memory_format=fmt), last.is_contiguous(memory_format=fmt),
               last.is_contiguous(), plain.is_contiguous(memory_format=fnn.contiguous_format)]
    assert answers[1] and answers[3]
    torch = pytest.importorskip("torch")
    tfmt = torch.channels_last if len(shape) == 4 else torch.channels_last_3d
    tp, tl = torch.ones(*shape), _channels_last(torch, shape)
    assert answers == [tp.is_contiguous(memory_format=tfmt), tl.is_contiguous(memory_format=tfmt),
                       tl.is_contiguous(), tp.is_contiguous(memory_format=torch.contiguous_format)]


def test_memory_format_is_accepted_and_values_stay():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU())
    x = fnn.randn(2, 3, 6, 6)
    before = model(x).numpy()
    assert model.to(memory_format=fnn.channels_last) is model
    assert model.to("cpu", non_blocking=True) is model
    np.testing.assert_array_equal(model(x.contiguous(memory_format=fnn.channels_last)).numpy(),
                                  before)
    assert x.to(memory_format=fnn.channels_last).shape == x.shape
    with pytest.raises(TypeError, match="memory_format must be one of fnn.contiguous_format"):
        model.to(memory_format="channels_last")
    with pytest.raises(RuntimeError, match="channels_last is for 4-D tensors"):
        fnn.ones(2, 3).is_contiguous(memory_format=fnn.channels_last)
    assert pickle.loads(pickle.dumps(fnn.channels_last)) is fnn.channels_last
    assert repr(fnn.preserve_format) == "fastnn.preserve_format"


def test_manual_seed_returns_the_default_generator():
    g = fnn.manual_seed(7)
    assert g is fnn.default_generator and fnn.initial_seed() == 7
    first = fnn.randn(3).numpy()
    assert np.array_equal(fnn.manual_seed(7).manual_seed(7) and fnn.randn(3).numpy(), first)
    fnn.manual_seed(-1)  # negative seeds wrap, as PyTorch's
    assert fnn.initial_seed() == 2**64 - 1
    assert isinstance(fnn.manual_seed(0), fnn.Generator)
