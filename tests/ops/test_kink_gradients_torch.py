"""Gradients at ties, kinks and edges against PyTorch's: where a composite's natural
chain rule gives NaN (0 * inf) or splits a tie, PyTorch picks a value; fastnn means the
same (fmax/fmin ties, std and cosine similarity of constant or zero inputs, the margin
losses exactly at their hinge, binary cross entropy at p = 0 and 1, where() with an
infinite gradient on the unselected side, relu at a NaN input)."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _grads(run_ours, run_theirs, *arrays):
    """Values and the gradients of every input, both libraries, as NumPy."""
    weights = np.random.default_rng(3).normal(size=64)
    found = []
    for lib, run in ((fnn, run_ours), (torch, run_theirs)):
        inputs = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = run(*inputs)
        w = weights[:out.numel()].reshape(tuple(out.shape)) if out.ndim else np.array(1.5)
        (out * lib.tensor(w)).sum().backward()
        found.append([np.asarray(out.detach().numpy())] +
                     [np.asarray(t.grad.numpy()) for t in inputs])
    return found


def _agree(run_ours, run_theirs, *arrays, rtol=1e-9):
    ours, theirs = _grads(run_ours, run_theirs, *arrays)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-12, equal_nan=True,
                                   err_msg=f"output {k}" if k == 0 else f"gradient {k}")


NAN = float("nan")
A = np.array([[1.0, 2.0, -1.0, 0.0], [NAN, NAN, 3.0, 2.0]])
B = np.array([[1.0, 1.0, -1.0, 0.5], [2.0, NAN, NAN, 2.0]])


@pytest.mark.parametrize("op", ["fmax", "fmin"])
def test_fmax_fmin_ties_and_nan(op):
    # a tie goes to input, a NaN side to the other one
    _agree(getattr(fnn, op), getattr(torch, op), A, B)


def test_std_of_constant_rows_has_zero_gradient():
    x = np.array([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]])
    _agree(lambda t: t.std(dim=1), lambda t: t.std(dim=1), x)
    _agree(lambda t: t.std(), lambda t: t.std(), np.full((2, 3), 0.5))


def test_cosine_similarity_of_a_zero_vector():
    a = np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 0.5], [1e-12, 0.0, 0.0]])
    b = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [2.0, 1.0, 0.0]])
    _agree(F.cosine_similarity, TF.cosine_similarity, a, b)
    _agree(lambda t: F.normalize(t * 0.0 + t), lambda t: TF.normalize(t * 0.0 + t), a)


TIES = np.array([1.0, 2.0, -1.0, 0.0, 0.5])
OTHER = np.array([1.0, 1.0, -1.0, 0.5, 0.5])
SIGNS = np.array([1.0, -1.0, 1.0, -1.0, 1.0])


@pytest.mark.parametrize("name,ours,theirs", [
    ("margin_ranking_loss",
     lambda a, b: F.margin_ranking_loss(a, b, fnn.tensor(SIGNS), reduction="none"),
     lambda a, b: TF.margin_ranking_loss(a, b, torch.tensor(SIGNS), reduction="none")),
    ("hinge_embedding_loss",
     lambda a, b: F.hinge_embedding_loss(a + b * 0.0, fnn.tensor(-SIGNS), margin=1.0,
                                         reduction="none"),
     lambda a, b: TF.hinge_embedding_loss(a + b * 0.0, torch.tensor(-SIGNS), margin=1.0,
                                          reduction="none")),
    ("cosine_embedding_loss",  # rows equal: cos = 1 = margin
     lambda a, b: F.cosine_embedding_loss(a.reshape(1, 5), a.reshape(1, 5) + b.reshape(1, 5)
                                          * 0.0, fnn.tensor([-1.0]), margin=1.0),
     lambda a, b: TF.cosine_embedding_loss(a.reshape(1, 5), a.reshape(1, 5) + b.reshape(1, 5)
                                           * 0.0, torch.tensor([-1.0]), margin=1.0)),
    ("triplet_margin_loss",  # d(a, p) - d(a, n) + margin = 0
     lambda a, b: F.triplet_margin_loss(a.reshape(1, 5), a.reshape(1, 5), b.reshape(1, 5),
                                        margin=float(np.linalg.norm(TIES - OTHER + 1e-6))),
     lambda a, b: TF.triplet_margin_loss(a.reshape(1, 5), a.reshape(1, 5), b.reshape(1, 5),
                                         margin=float(np.linalg.norm(TIES - OTHER + 1e-6)))),
    ("multi_margin_loss",  # integer scores: hinges exactly 0
     lambda a, b: F.multi_margin_loss((a + b).reshape(1, 5), fnn.tensor([1])),
     lambda a, b: TF.multi_margin_loss((a + b).reshape(1, 5), torch.tensor([1]))),
    ("multilabel_margin_loss",
     lambda a, b: F.multilabel_margin_loss((a + b).reshape(1, 5),
                                           fnn.tensor([[1, 3, -1, 0, 0]])),
     lambda a, b: TF.multilabel_margin_loss((a + b).reshape(1, 5),
                                            torch.tensor([[1, 3, -1, 0, 0]])))])
def test_margin_losses_at_their_hinge(name, ours, theirs):
    _agree(ours, theirs, TIES, OTHER)


def test_binary_cross_entropy_at_zero_and_one():
    p = np.array([0.0, 1.0, 0.5, 0.0, 1.0, 1e-3, 0.999, 0.3])
    t = np.array([0.0, 1.0, 1.0, 1.0, 0.0, 0.2, 0.9, 0.3])
    ours, theirs = _grads(lambda a: F.binary_cross_entropy(a, fnn.tensor(t)),
                          lambda a: TF.binary_cross_entropy(a, torch.tensor(t)), p)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12, atol=1e-12)  # (no NaN)


def test_binary_cross_entropy_second_derivative_kept():
    results = []
    for lib, grad in ((fnn, fnn.autograd.grad), (torch, torch.autograd.grad)):
        p = lib.tensor(np.array([0.3, 0.6, 0.9]), requires_grad=True)
        t = lib.tensor(np.array([0.0, 1.0, 0.5]))
        loss = lib.nn.functional.binary_cross_entropy(p, t)
        (g,) = grad(loss, p, create_graph=True)
        (g * g).sum().backward()
        results.append(np.asarray(p.grad.detach().numpy()))
    np.testing.assert_allclose(*results, rtol=1e-10)


def test_where_gives_zero_to_the_unselected_side_of_an_infinite_gradient():
    a, b = np.array([0.0, 1.0, 4.0]), np.array([0.0, 2.0, 0.0])
    _agree(lambda x, y: fnn.where(x > 0.5, x.sqrt(), y.sqrt()),
           lambda x, y: torch.where(x > 0.5, x.sqrt(), y.sqrt()), a, b)


def test_lp_pool_of_zeros_and_negative_windows():
    # the root's gradient at 0 is inf; sign's gradient is 0 (not inf * 0) and relu
    # selects, so the windows of zeros pass 0, as PyTorch's
    x = np.array([[[0.0, 0.0, 1.0, -2.0, 0.0, 3.0, 0.0, 0.0]]])
    _agree(lambda t: F.lp_pool1d(t, 2, 2), lambda t: TF.lp_pool1d(t, 2, 2), x)
    _agree(lambda t: F.lp_pool1d(t * t, 1.5, 2), lambda t: TF.lp_pool1d(t * t, 1.5, 2), x)


def test_sign_and_floor_pass_a_zero_gradient_even_an_infinite_one():
    x = np.array([0.0, 1.0, -4.0])
    _agree(lambda t: t.sign().abs().sqrt(), lambda t: t.sign().abs().sqrt(), x)
    _agree(lambda t: (t * 0.0).floor().sqrt(), lambda t: (t * 0.0).floor().sqrt(), x)


@pytest.mark.parametrize("p", [3.0, 1.5, 2.0])  # (p < 1: left, see the commit)
def test_p_norm_of_a_zero_row(p):
    x = np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 0.5]])
    _agree(lambda t: t.norm(p=p, dim=1), lambda t: t.norm(p=p, dim=1), x)


def test_std_mean_of_a_constant_row():
    x = np.array([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]])
    _agree(lambda t: fnn.std_mean(t, dim=1)[0], lambda t: torch.std_mean(t, dim=1)[0], x)


def test_copysign_at_zero():
    a, b = np.array([0.0, -0.0, 2.0, -2.0, 0.0]), np.array([1.0, -1.0, -1.0, 1.0, -0.0])
    _agree(fnn.copysign, torch.copysign, a, b)


EDGES = np.array([np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 6.0, 3.0, -3.0, 20.0, 0.5, -0.5,
                  0.3, -0.3])


@pytest.mark.parametrize("name", ["relu", "relu6", "hardtanh", "hardswish", "hardsigmoid",
                                  "hardshrink", "softshrink", "elu", "selu", "celu",
                                  "leaky_relu", "softplus", "silu", "mish"])
def test_activations_at_infinities_zeros_and_kinks(name):
    # (PyTorch's hardsigmoid slope is float32's 1/6 in float64 too: 5e-9 off)
    _agree(getattr(F, name), getattr(TF, name), EDGES, rtol=1e-7)


@pytest.mark.parametrize("name", ["relu", "leaky_relu", "hardsigmoid"])
@pytest.mark.parametrize("size", [1, 64])
def test_activations_at_nan(name, size):
    """relu passes the gradient at a NaN input (PyTorch's threshold_backward tests out <=
    0), leaky_relu passes it times its slope, hardsigmoid stops it, at every size. (The
    others' kernels in PyTorch 2.13 give one answer in their vectorised loop and another
    in their scalar tail, so at NaN they mean nothing to agree with.)"""
    x = np.full(size, NAN)
    x[::3] = 1.0
    _agree(getattr(F, name), getattr(TF, name), x, rtol=1e-7)  # (hardsigmoid: above)


def test_fused_bias_relu_passes_the_gradient_of_a_nan():
    """The bias + relu hook (nn.Linear's fused activation) and its backward, as
    relu(x + b) in PyTorch, with a NaN, zeros and both signs."""
    from fastnn.ops.activations import bias_act

    x = np.array([[NAN, 1.0, -2.0], [1.0, 0.0, 2.0], [-1.0, 2.0, 0.5]])
    b = np.array([0.0, -1.0, 1.0])
    _agree(lambda t, u: bias_act(t, u, "relu"), lambda t, u: torch.relu(t + u), x, b)
