"""fastnn.api.errors: a PyTorch script's ``except`` clause catches what fastnn raises for
the same mistake (shape and dim errors are RuntimeError and IndexError there, and stay
ValueError here for fastnn code)."""

import pytest

import fastnn as fnn

# the same mistake written once for either library (lib is torch or fastnn)
MISTAKES = {
    "mul does not broadcast": lambda lib: lib.ones(2, 3) * lib.ones(3, 2),
    "add_ does not broadcast": lambda lib: lib.ones(2, 3).add_(lib.ones(3, 2)),
    "mse_loss shapes": lambda lib: lib.nn.functional.mse_loss(lib.ones(4, 3), lib.ones(4, 2)),
    "expand": lambda lib: lib.ones(2, 3).expand(4, 3),
    "matmul": lambda lib: lib.ones(2, 3) @ lib.ones(2, 3),
    "view": lambda lib: lib.ones(2, 3).view(4, 2),
    "reshape -1": lambda lib: lib.ones(2, 3).reshape(4, -1),
    "cat": lambda lib: lib.cat([lib.ones(2, 3), lib.ones(2, 4)]),
    "stack": lambda lib: lib.stack([lib.ones(2, 3), lib.ones(2, 4)]),
    "split sizes": lambda lib: lib.ones(5).split([2, 2]),
    "permute": lambda lib: lib.ones(2, 3).permute(0, 0),
    "gather dims": lambda lib: lib.ones(2, 3).gather(1, lib.zeros(2, 3, 4, dtype=lib.long)),
    "setitem value": lambda lib: lib.ones(2, 3).__setitem__(0, lib.ones(2)),
    "item of many": lambda lib: lib.ones(2).item(),
    "bool of many": lambda lib: bool(lib.ones(2)),
    "Linear features": lambda lib: lib.nn.Linear(3, 2)(lib.ones(4, 5)),
    "Conv2d channels": lambda lib: lib.nn.Conv2d(3, 2, 3)(lib.ones(1, 4, 8, 8)),
    "BatchNorm2d channels": lambda lib: lib.nn.BatchNorm2d(3)(lib.ones(2, 4, 5, 5)),
    "LSTM input size": lambda lib: lib.nn.LSTM(3, 4)(lib.ones(5, 2, 6)),
    "cross_entropy targets": lambda lib: lib.nn.functional.cross_entropy(
        lib.ones(4, 3), lib.zeros(4, 3, dtype=lib.long)),
    "conv2d kernel > input": lambda lib: lib.nn.Conv2d(1, 1, 5)(lib.ones(1, 1, 3, 3)),
    "Conv1d channels": lambda lib: lib.nn.Conv1d(3, 2, 3)(lib.ones(1, 4, 8)),
    "conv1d kernel > input": lambda lib: lib.nn.Conv1d(1, 1, 5)(lib.ones(1, 1, 3)),
    "ConvTranspose2d channels": lambda lib: lib.nn.ConvTranspose2d(3, 2, 3)(lib.ones(1, 4, 8, 8)),
    "max_pool2d too small": lambda lib: lib.nn.MaxPool2d(2)(lib.ones(1, 1, 1, 1)),
    "avg_pool2d too small": lambda lib: lib.nn.functional.avg_pool2d(lib.ones(1, 1, 1, 1), 2),
    "reflect pad too wide": lambda lib: lib.nn.functional.pad(lib.ones(1, 1, 2, 2), (3, 3, 3, 3),
                                                              mode="reflect"),
    "RNN h_0": lambda lib: lib.nn.RNN(3, 4)(lib.ones(5, 2, 3), lib.ones(1, 3, 4)),
    "narrow": lambda lib: lib.ones(2, 3).narrow(1, 2, 3),
    "unflatten": lambda lib: lib.ones(2, 6).unflatten(1, (4, 2)),
    "repeat fewer counts": lambda lib: lib.ones(2, 3).repeat(2),
    "topk k": lambda lib: lib.ones(3).topk(5),
    "scatter_ index > src": lambda lib: lib.zeros(2, 3).scatter_(
        1, lib.zeros(2, 4, dtype=lib.long), lib.ones(2, 2)),
    "stack of none": lambda lib: lib.stack([]),
    "nll_loss target": lambda lib: lib.nn.functional.nll_loss(lib.ones(2, 3), lib.tensor([0, 7])),
    "cross_entropy target": lambda lib: lib.nn.functional.cross_entropy(lib.ones(2, 3),
                                                                        lib.tensor([0, 7])),
    "sum dim": lambda lib: lib.ones(2, 3).sum(dim=4),
    "softmax dim": lambda lib: lib.softmax(lib.ones(2, 3), dim=3),
    "transpose dim": lambda lib: lib.ones(2, 3).transpose(0, 5),
    "max of nothing": lambda lib: lib.zeros(0).max(),
    "grad_outputs shape": lambda lib: _grad_of_shape(lib, 2),
}


def _grad_of_shape(lib, size):
    x = lib.ones(3, requires_grad=True)
    return lib.autograd.grad(x * 2, x, lib.ones(size))


@pytest.mark.parametrize("name", MISTAKES)
def test_a_pytorch_except_clause_catches_the_same_mistake(name):
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as theirs:
        MISTAKES[name](torch)
    with pytest.raises(type(theirs.value)):  # RuntimeError or IndexError, as PyTorch's
        MISTAKES[name](fnn)
    with pytest.raises(ValueError):  # and fastnn code that caught ValueError still does
        MISTAKES[name](fnn)
