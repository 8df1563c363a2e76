"""What an op keeps for its backward decides which later in-place writes PyTorch refuses
("modified by an inplace operation"): an op that keeps its result lets its input be
written, one that keeps its input lets its result be written. fastnn keeps what
PyTorch keeps for these ops, so a PyTorch script's in-place writes pass or fail alike,
and the gradient is the one of the values before the write."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn.api import hookspec
from fastnn.autograd import saved

try:
    import torch
except ImportError:  # pragma: no cover - the reference below holds without it
    torch = None

X = np.array([0.5, 1.5, -0.75], np.float64)

# op, d op / dx at X (the reference), and which write PyTorch refuses: "input" (the op
# keeps its input), "output" (it keeps its result), "both" or "neither"
CASES = {
    "sigmoid": (lambda t, y: t.sigmoid(y), lambda x: np.exp(-x) / (1 + np.exp(-x)) ** 2,
                "output"),
    "tanh": (lambda t, y: t.tanh(y), lambda x: 1 - np.tanh(x) ** 2, "output"),
    "relu": (lambda t, y: t.relu(y), lambda x: (x > 0).astype(float), "output"),
    "leaky_relu": (lambda t, y: t.nn.functional.leaky_relu(y, 0.1),
                   lambda x: np.where(x > 0, 1.0, 0.1), "input"),
    "silu": (lambda t, y: t.nn.functional.silu(y),
             lambda x: (1 / (1 + np.exp(-x))) * (1 + x * (1 - 1 / (1 + np.exp(-x)))), "input"),
    "softplus": (lambda t, y: t.nn.functional.softplus(y), lambda x: 1 / (1 + np.exp(-x)),
                 "input"),
    "pow scalar": (lambda t, y: y ** 2, lambda x: 2 * x, "input"),
    "div scalar": (lambda t, y: y / 2, lambda x: np.full_like(x, 0.5), "neither"),
    "mul scalar": (lambda t, y: y * 3, lambda x: np.full_like(x, 3.0), "neither"),
    "exp": (lambda t, y: y.exp(), np.exp, "output"),
}


def _run(lib, op, write):
    """d sum(op(y)) / dx with y = x * 1 and ``write`` ("input": y, "output": op(y)) written
    in place between the forward and the backward; None when the backward refuses."""
    x = lib.tensor(X, requires_grad=True)
    y = x * 1
    z = op(lib, y)
    (y if write == "input" else z).add_(1.0)
    try:
        z.sum().backward()
    except RuntimeError as exc:
        assert "modified by an in" in str(exc)
        return None
    return x.grad.detach().numpy()


@pytest.mark.parametrize("write", ["input", "output"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_in_place_write_after_op_refused_as_pytorch(name, write):
    op, derivative, kept = CASES[name]
    got = _run(fnn, op, write)
    if kept in (write, "both"):
        assert got is None, f"{name}: a write of its {write} must be refused"
    else:
        assert got is not None, f"{name}: a write of its {write} must pass"
        np.testing.assert_allclose(got, derivative(X), rtol=1e-12, atol=1e-12)
    if torch is not None:
        want = _run(torch, op, write)
        assert (got is None) == (want is None)
        if want is not None:
            np.testing.assert_allclose(got, want, rtol=1e-12)


def test_div_by_tensor_gradient_without_the_result():
    """div keeps the dividend (not the result) for the divisor's gradient: the result may be
    written in place, and -g a / b**2 is exact."""
    a = fnn.tensor([1.0, -2.0, 3.0], dtype="float64", requires_grad=True)
    b = fnn.tensor([0.5, 4.0, -1.5], dtype="float64", requires_grad=True)
    out = a / b
    out.mul_(2.0)
    out.sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), -2.0 * a.detach().numpy()
                               / b.detach().numpy() ** 2, rtol=1e-15)
    np.testing.assert_allclose(a.grad.numpy(), 2.0 / b.detach().numpy(), rtol=1e-15)


def test_every_activation_kind_says_what_its_gradient_reads():
    assert set(saved.GRAD_READS) == set(hookspec.ACTIVATION_HOOKS)


@pytest.mark.parametrize("make", [lambda x: (x * 2).sum(), lambda x: (x * 2).mean(),
                                  lambda x: x.sum() + x.sum(), lambda x: (x * x).mean() * 2])
def test_in_place_on_a_zero_d_result(make):
    """``s = x.sum(); s += 1`` wrote into a NumPy scalar (a reduction's 0-d result) and
    crashed in copyto; it adds, and the gradient flows through."""
    x = fnn.tensor([1.0, 2.0, 3.0], dtype="float64", requires_grad=True)
    s = make(x)
    before = float(s)
    s += 1.5
    s.mul_(2.0)
    assert float(s) == (before + 1.5) * 2.0
    s.backward()
    x2 = fnn.tensor([1.0, 2.0, 3.0], dtype="float64", requires_grad=True)
    (make(x2) * 2.0).backward()
    np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy(), rtol=1e-15)


def test_in_place_on_a_saved_zero_d_result_is_refused_as_pytorch():
    """max keeps its result (as PyTorch's), so writing it in place is refused at backward."""
    x = fnn.tensor([1.0, 3.0], dtype="float64", requires_grad=True)
    s = (x * x).max()
    s += 1.0
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        s.backward()
    if torch is not None:
        y = torch.tensor([1.0, 3.0], dtype=torch.float64, requires_grad=True)
        t = (y * y).max()
        t += 1.0
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            t.backward()


def test_from_numpy_keeps_sharing_through_in_place_writes():
    """An in-place write into a tensor made by from_numpy reaches the array (a transposed,
    non-contiguous one and a 0-d one too), as PyTorch's."""
    a = np.zeros((3, 4)).T
    t = fnn.from_numpy(a)
    t += 1.0
    assert a.sum() == 12.0
    b = np.array(5.0)
    u = fnn.from_numpy(b)
    u += 1.0
    assert float(b) == 6.0


def test_loss_accumulated_in_place():
    """The PyTorch loop idiom ``loss = 0; loss += criterion(...)`` over several terms."""
    w = fnn.tensor([0.5, -1.0], dtype="float64", requires_grad=True)
    loss = 0
    for target in (1.0, 2.0, 3.0):
        loss += F.mse_loss(w.sum() * 2.0, fnn.tensor(target, dtype="float64"))
    loss.backward()
    s = float(w.detach().sum())
    want = sum(2 * (2 * s - t) * 2 for t in (1.0, 2.0, 3.0))
    np.testing.assert_allclose(w.grad.numpy(), [want, want], rtol=1e-14)



POOLED = np.linspace(-1.0, 1.0, 32).reshape(1, 2, 4, 4)[..., ::-1].copy()  # distinct values
WEIGHTS = np.array([[1.0, -2.0], [3.0, 4.0]])


def _max_pool_then(lib, write):
    """The gradient of sum(WEIGHTS * relu_(max_pool2d(x))), with the pooling's result (or
    input) written in place before the backward (PyTorch's STN tutorial: nn.MaxPool2d(2,
    stride=2), then nn.ReLU(True)); None when the backward refuses."""
    x = lib.tensor(POOLED, requires_grad=True)
    y = x * 1
    z = lib.nn.Sequential(lib.nn.MaxPool2d(2, stride=2), lib.nn.ReLU(inplace=True))(y)
    if write == "input":
        y.add_(1.0)
    try:
        (z * lib.tensor(WEIGHTS)).sum().backward()
    except RuntimeError as exc:
        assert "modified by an in" in str(exc)
        return None
    return x.grad.detach().numpy()


@pytest.mark.parametrize("write", ["output", "input"])
def test_max_pool_result_written_in_place_as_pytorch(write):
    # PyTorch's max pooling keeps its input and the indices, not its result
    got = _max_pool_then(fnn, write)
    if write == "input":
        assert got is None
    else:
        want = np.zeros_like(POOLED)
        for c, i, j in np.ndindex(2, 2, 2):
            window = POOLED[0, c, 2 * i:2 * i + 2, 2 * j:2 * j + 2]
            a, b = np.unravel_index(window.argmax(), (2, 2))
            want[0, c, 2 * i + a, 2 * j + b] = WEIGHTS[i, j] * (window.max() > 0)
        np.testing.assert_allclose(got, want)
    if torch is not None:
        want = _max_pool_then(torch, write)
        assert (got is None) == (want is None)
        if want is not None:
            np.testing.assert_allclose(got, want)
