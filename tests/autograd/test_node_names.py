"""grad_fn names and edges as PyTorch's for the calls tutorials print: the losses fastnn
composes, nn.Linear's fused addmm, view, and the walk of the blitz tutorial's
loss.grad_fn.next_functions."""

from __future__ import annotations

import re

import numpy as np
import pytest

import fastnn as fnn
from tests.autograd.test_graph_edges import _walk

try:
    import torch
except ImportError:  # pragma: no cover - the literal names below hold without it
    torch = None

X = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)

CASES = {
    "MseLossBackward0": lambda L, x: L.nn.functional.mse_loss(x, L.zeros(4, 5)),
    "MseLossBackward0 ": lambda L, x: L.nn.MSELoss(reduction="sum")(x, L.zeros(4, 5)),
    "SmoothL1LossBackward0": lambda L, x: L.nn.functional.smooth_l1_loss(x, L.zeros(4, 5)),
    "HuberLossBackward0": lambda L, x: L.nn.functional.huber_loss(x, L.zeros(4, 5)),
    "NllLossBackward0": lambda L, x: L.nn.functional.cross_entropy(x, L.tensor([0, 1, 2, 3])),
    "NllLossBackward0 ": lambda L, x: L.nn.functional.nll_loss(x, L.tensor([0, 1, 2, 3])),
    "NllLossBackward0  ": lambda L, x: L.nn.functional.cross_entropy(
        x, L.tensor([0, -100, 2, 3]), reduction="sum"),  # (a row ignored: one fused hook)
    "AddBackward0": lambda L, x: L.nn.functional.cross_entropy(
        x, L.tensor([0, 1, 2, -100]), label_smoothing=0.1),
    "BinaryCrossEntropyWithLogitsBackward0":
        lambda L, x: L.nn.functional.binary_cross_entropy_with_logits(x, L.ones(4, 5)),
    "BinaryCrossEntropyBackward0":
        lambda L, x: L.nn.functional.binary_cross_entropy(x.sigmoid(), L.ones(4, 5)),
    "MeanBackward0": lambda L, x: L.nn.functional.l1_loss(x, L.zeros(4, 5)),
    "ViewBackward0": lambda L, x: x.view(20),
    "ToCopyBackward0": lambda L, x: x.to(L.float64),
    "MmBackward0": lambda L, x: L.nn.functional.linear(x, L.ones(3, 5)),
    "MmBackward0 ": lambda L, x: x @ L.ones(5, 2),
    "BmmBackward0": lambda L, x: L.bmm(x.view(1, 4, 5), L.ones(1, 5, 2)),
    "AddmmBackward0": lambda L, x: L.nn.Linear(5, 2)(x),
    "ViewBackward0 ": lambda L, x: L.nn.Linear(5, 2)(x.view(2, 2, 5)),
    "ExpandBackward0": lambda L, x: x[:1].expand(3, 5),
    "ConvolutionBackward0": lambda L, x: L.nn.functional.conv2d(x.view(1, 1, 4, 5),
                                                                L.ones(1, 1, 2, 2)),
    "NativeBatchNormBackward0": lambda L, x: L.nn.BatchNorm1d(5)(x),
    "LinalgVectorNormBackward0": lambda L, x: x.norm(dim=1),
    "DistBackward0": lambda L, x: L.dist(x, L.zeros(4, 5)),
    "CdistBackward0": lambda L, x: L.cdist(x, L.zeros(2, 5)),
    "StdBackward0": lambda L, x: x.std(),
    "VarBackward0": lambda L, x: x.var(1),
    "LogsumexpBackward0": lambda L, x: x.logsumexp(1),
    "MaskedFillBackward0": lambda L, x: x.masked_fill(x > 0, 0.0),
    "TriuBackward0": lambda L, x: x.triu(),
    "TrilBackward0": lambda L, x: x.tril(1),
    "StackBackward0": lambda L, x: L.stack([x, x]),
    "SumBackward0": lambda L, x: x.sum(),
    "SumBackward1": lambda L, x: x.sum(0),
    "SumBackward1 ": lambda L, x: x.sum((0, 1), keepdim=True),
    "MeanBackward1": lambda L, x: x.mean(-1),
    "ProdBackward1": lambda L, x: x.prod(1),
    "MaxBackward1": lambda L, x: x.max(),
    "MaxBackward0": lambda L, x: x.max(1).values,
    "MinBackward1": lambda L, x: x.min(),
    "MinBackward0": lambda L, x: x.min(0)[0],
    "AmaxBackward0": lambda L, x: x.amax(),
    "AminBackward0": lambda L, x: x.amin(1),
    "TBackward0": lambda L, x: x.t(),
    "TBackward0 ": lambda L, x: x[0].t(),
    "PermuteBackward0": lambda L, x: x.permute(1, 0),
    "PermuteBackward0 ": lambda L, x: x.T,
    "PermuteBackward0  ": lambda L, x: x.movedim(0, 1),
    "TransposeBackward0": lambda L, x: x.transpose(0, 1),
    "SqueezeBackward0": lambda L, x: x[:1].squeeze(),
    "SqueezeBackward1": lambda L, x: x[:1].squeeze(0),
    "UnsqueezeBackward0": lambda L, x: x.unsqueeze(1),
    "ClampBackward1": lambda L, x: x.clamp(-0.5, 0.5),
    "ClampBackward1 ": lambda L, x: x.clamp(min=0),
    "PowBackward0": lambda L, x: x.square(),
}


@pytest.mark.parametrize("name", CASES)
def test_grad_fn_names(name):
    x = fnn.tensor(X, requires_grad=True)
    out = CASES[name](fnn, x)
    assert out.grad_fn.name() == name.strip()
    assert re.fullmatch(rf"<{name.strip()} object at 0x[0-9a-f]+>", repr(out.grad_fn))
    if torch is not None:
        assert CASES[name](torch, torch.tensor(X, requires_grad=True)).grad_fn.name() == \
            name.strip()


def _blitz_walk(L):
    """The blitz neural-network tutorial's walk: loss, then the Linear, then its bias."""
    L.manual_seed(0)
    fc = L.nn.Linear(5, 3)
    loss = L.nn.MSELoss()(fc(L.tensor(X)), L.zeros(4, 3))
    first = loss.grad_fn.next_functions[0][0]
    return loss, first, first.next_functions[0][0], fc


def test_blitz_tutorial_walk_reaches_the_bias():
    loss, addmm, leaf, fc = _blitz_walk(fnn)
    assert repr(loss).endswith("grad_fn=<MseLossBackward0>)")
    assert addmm.name() == "AddmmBackward0"
    assert re.fullmatch(r"<AccumulateGrad object at 0x[0-9a-f]+>", repr(leaf))
    assert leaf.variable is fc.bias
    names = _walk(loss.grad_fn)
    assert names == ["MseLossBackward0", "AddmmBackward0", "leaf:(3,)", "TBackward0",
                     "leaf:(3, 5)"]
    if torch is not None:
        assert _walk(_blitz_walk(torch)[0].grad_fn) == names


def test_names_do_not_change_the_gradients():
    w = fnn.tensor(np.ones((3, 5), np.float32), requires_grad=True)
    x = fnn.tensor(X, requires_grad=True)
    fnn.nn.functional.mse_loss(fnn.nn.functional.linear(x, w), fnn.zeros(4, 3)).backward()
    want = 2 * (X @ np.ones((5, 3))) / 12
    np.testing.assert_allclose(x.grad.numpy(), want @ np.ones((3, 5)), rtol=1e-5)


def test_a_custom_function_s_node_keeps_its_name_after_backward_as_pytorch():
    torch = pytest.importorskip("torch")

    def run(lib):
        class Square(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return 2 * x * grad

        y = Square.apply(lib.ones(2, requires_grad=True)).sum()
        node = y.grad_fn.next_functions[0][0]
        y.backward()
        return node.name()

    assert run(fnn) == run(torch) == "SquareBackward"
