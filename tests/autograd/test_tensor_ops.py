"""Higher-order gradients (create_graph=True): every rule run through TensorOps.

Each case is a scalar function of float64 inputs, written once for fastnn and
PyTorch (``lib`` is fastnn or torch). Its Hessian-vector product, from a second
backward through the recorded first one, must match central differences of the
first gradient along the vector, and PyTorch's double backward on the same
numbers.
"""

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as fnn_F
from fastnn.autograd.engine import attach
from fastnn.autograd.tensor_ops import TensorOps

RNG = np.random.default_rng(7)
EPS = 1e-5


def _functional(lib):
    if lib is fnn:
        return fnn_F
    import torch.nn.functional as torch_F

    return torch_F


INDEX = np.array([[1, 3], [0, 0], [2, 1]])
CONV_X, CONV_W = RNG.standard_normal((1, 2, 5, 5)), RNG.standard_normal((3, 2, 3, 3))


def _amax(lib, x, dim):
    return x.amax(dim)  # x.max(dim) is (values, indices) in both, as PyTorch's


def _pos(lib, x):
    return x * x + 0.5


CASES = {  # name -> (function of (lib, *inputs), input shapes)
    "tanh": (lambda L, x: x.tanh(), [(3, 4)]),
    "softplus": (lambda L, x: _functional(L).softplus(x), [(3, 4)]),
    "sigmoid": (lambda L, x: x.sigmoid(), [(3, 4)]),
    "exp_log": (lambda L, x: (x.exp() + 1.0).log() * x, [(3, 4)]),
    "log_sqrt": (lambda L, x: _pos(L, x).log() * _pos(L, x).sqrt(), [(5,)]),
    "sin_cos": (lambda L, x: x.sin() * x.cos() * x, [(5,)]),
    "gelu_silu": (lambda L, x: _functional(L).gelu(x) * _functional(L).silu(x), [(6,)]),
    "relu_square": (lambda L, x: x.relu() * x.relu(), [(6,)]),
    "erf_abs": (lambda L, x: x.erf() * x.abs(), [(6,)]),
    "div_pow": (lambda L, x, y: x / _pos(L, y) + _pos(L, x) ** y, [(4,), (4,)]),
    "pow_scalar": (lambda L, x: _pos(L, x) ** 2.5 - x ** 3, [(4,)]),
    "maximum": (lambda L, x, y: L.maximum(x * x, y) * x, [(5,), (5,)]),
    "matmul_chain": (lambda L, a, b, c: (a @ b).tanh() @ c, [(3, 4), (4, 5), (5, 2)]),
    "batched_matmul": (lambda L, a, b: (a @ b) * (a @ b), [(2, 3, 4), (4, 2)]),
    "softmax": (lambda L, x, y: x.softmax(-1) * y, [(3, 4), (3, 4)]),
    "log_softmax": (lambda L, x, y: x.log_softmax(1) * y * x, [(3, 4), (3, 4)]),
    "sum_mean_broadcast": (lambda L, x, b: ((x + b).sum(0) * (x * b).mean(1, keepdim=True)),
                           [(3, 4), (4,)]),
    "amax": (lambda L, x: _amax(L, x * x, 1) * x.sum(1), [(3, 4)]),
    "prod_cumsum": (lambda L, x: x.prod(1) * x.cumsum(1).sum(1), [(3, 4)]),
    "slices": (lambda L, x: x[:, 1:] * x[:, :-1] * x[1:, 1:].sum(), [(3, 4)]),
    "transpose_reshape": (lambda L, x: (x.T @ x).reshape(16) * x.reshape(12).sum(), [(3, 4)]),
    "where": (lambda L, x: L.where(x > 0.1, x * x * x, x.exp()), [(6,)]),
    "float32_inside": (lambda L, x: x.float().tanh().double() * x, [(4,)]),
    "gather": (lambda L, x: L.gather(x * x, 1, L.tensor(INDEX)) * x[:, :2], [(3, 4)]),
    "index_select": (lambda L, x: L.index_select(x.exp(), 0, L.tensor([2, 0, 2])) * x,
                     [(3, 4)]),
    "scatter_add": (lambda L, x, s: (x * x).scatter_add(1, L.tensor(INDEX), s * s) * x,
                    [(3, 4), (3, 2)]),
    "cat": (lambda L, x, y: L.cat([x * y, y.tanh()], 1) * L.cat([x, x], 1), [(2, 3), (2, 3)]),
    "leaky_relu_clamp": (lambda L, x: _functional(L).leaky_relu(x, 0.2) * x.clamp(-0.5, 0.5)
                         * x, [(8,)]),
    "layer_norm": (lambda L, x, w, b: _functional(L).layer_norm(x * x, (4,), w, b) * x,
                   [(3, 4), (4,), (4,)]),
    # a gradient penalty's convolutions: both gradients of each are on the tape
    "conv2d": (lambda L, x, w: _functional(L).conv2d(x, w, stride=(2, 1), padding=1,
                                                     dilation=(1, 2), groups=2).tanh(),
               [(2, 4, 6, 7), (6, 2, 3, 2)]),
    "conv2d_one_side": (lambda L, x, w: _functional(L).conv2d(x * x, L.tensor(CONV_W),
                                                              padding="same").sigmoid()
                        * _functional(L).conv2d(L.tensor(CONV_X), w * w, padding=1),
                        [(1, 2, 5, 5), (3, 2, 3, 3)]),
    "conv_transpose2d": (lambda L, x, w: _functional(L).conv_transpose2d(
        x, w, stride=2, padding=1, output_padding=1).tanh(), [(2, 4, 3, 4), (4, 3, 3, 3)]),
    "max_pool2d": (lambda L, x: _functional(L).max_pool2d(x * x, 3, stride=2, padding=1) * x[
        :, :, ::2, ::2], [(2, 3, 6, 6)]),
    "max_pool2d_tiles": (lambda L, x: _functional(L).max_pool2d(x.tanh(), 2).exp(),
                         [(1, 2, 4, 6)]),
    "batch_norm_train": (lambda L, x, w, b: _functional(L).batch_norm(
        x * x, None, None, w, b, training=True) * x, [(4, 3, 2, 2), (3,), (3,)]),
    "conv1d": (lambda L, x, w: _functional(L).conv1d(x, w, stride=2, padding=2, dilation=2,
                                                     groups=2).tanh(),
               [(2, 4, 9), (6, 2, 3)]),
}


# cases that round through float32: coarser differences and tolerances
FLOAT32 = {"float32_inside": dict(eps=1e-2, rtol=2e-3, atol=1e-4, torch_rtol=1e-6)}
FLOAT64 = dict(eps=EPS, rtol=1e-5, atol=1e-6, torch_rtol=1e-10)


def _inputs(shapes):
    return [RNG.standard_normal(s) * 0.8 for s in shapes]


def _scalar(lib, fn, tensors, weights):
    out = fn(lib, *tensors)
    return (out * lib.tensor(weights, dtype=lib.float64)).sum()


def _fnn_hvp(fn, arrays, weights, vectors):
    """(gradient, Hessian-vector product) through fastnn's double backward."""
    ts = [fnn.tensor(a, dtype="float64", requires_grad=True) for a in arrays]
    grads = fnn.autograd.grad(_scalar(fnn, fn, ts, weights), ts, create_graph=True)
    dot = sum((g * fnn.tensor(v, dtype="float64")).sum() for g, v in zip(grads, vectors))
    hvp = fnn.autograd.grad(dot, ts, allow_unused=True)
    return ([g.numpy() for g in grads],
            [np.zeros_like(a) if h is None else h.numpy() for a, h in zip(arrays, hvp)])


def _first_gradient(fn, arrays, weights):
    ts = [fnn.tensor(a, dtype="float64", requires_grad=True) for a in arrays]
    return [g.numpy() for g in fnn.autograd.grad(_scalar(fnn, fn, ts, weights), ts)]


def _torch_hvp(fn, arrays, weights, vectors):
    torch = pytest.importorskip("torch")
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    grads = torch.autograd.grad(_scalar(torch, fn, ts, weights), ts, create_graph=True)
    dot = sum((g * torch.tensor(v)).sum() for g, v in zip(grads, vectors))
    hvp = torch.autograd.grad(dot, ts, allow_unused=True)
    return ([g.detach().numpy() for g in grads],
            [np.zeros_like(a) if h is None else h.numpy() for a, h in zip(arrays, hvp)])


def _case(name):
    """The function, its inputs, the output's weights and the Hessian's vector."""
    fn, shapes = CASES[name]
    arrays = _inputs(shapes)
    shape = fn(fnn, *[fnn.tensor(a, dtype="float64") for a in arrays]).shape
    return fn, arrays, RNG.standard_normal(shape), _inputs(shapes)


@pytest.mark.parametrize("name", sorted(CASES))
def test_hessian_vector_product_matches_finite_differences(name):
    fn, arrays, weights, vectors = _case(name)
    tol = FLOAT32.get(name, FLOAT64)
    grads, hvp = _fnn_hvp(fn, arrays, weights, vectors)
    for g, ref in zip(grads, _first_gradient(fn, arrays, weights)):
        np.testing.assert_allclose(g, ref, rtol=1e-12, atol=1e-12)
    eps = tol["eps"]
    up = _first_gradient(fn, [a + eps * v for a, v in zip(arrays, vectors)], weights)
    down = _first_gradient(fn, [a - eps * v for a, v in zip(arrays, vectors)], weights)
    for h, u, d in zip(hvp, up, down):
        np.testing.assert_allclose(h, (u - d) / (2 * eps), rtol=tol["rtol"], atol=tol["atol"])


@pytest.mark.parametrize("name", sorted(CASES))
def test_hessian_vector_product_matches_torch(name):
    pytest.importorskip("torch")
    fn, arrays, weights, vectors = _case(name)
    grads, hvp = _fnn_hvp(fn, arrays, weights, vectors)
    torch_grads, torch_hvp = _torch_hvp(fn, arrays, weights, vectors)
    rtol = FLOAT32.get(name, FLOAT64)["torch_rtol"]
    for ours, theirs in zip(grads + hvp, torch_grads + torch_hvp):
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=1e-12)


def test_third_derivative_of_tanh():
    x = fnn.tensor([0.3, -0.7], dtype="float64", requires_grad=True)
    (g1,) = fnn.autograd.grad(x.tanh().sum(), x, create_graph=True)
    (g2,) = fnn.autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = fnn.autograd.grad(g2.sum(), x)
    t = np.tanh([0.3, -0.7])
    np.testing.assert_allclose(g1.numpy(), 1 - t**2, rtol=1e-12)
    np.testing.assert_allclose(g2.numpy(), -2 * t * (1 - t**2), rtol=1e-12)
    np.testing.assert_allclose(g3.numpy(), (1 - t**2) * (6 * t**2 - 2), rtol=1e-12)


def test_backward_with_create_graph_puts_a_differentiable_grad_in_leaves():
    torch = pytest.importorskip("torch")
    values = np.array([0.4, -1.1, 2.0])

    def run(lib, x):
        (x.sin() * x * x).sum().backward(create_graph=True)
        first = x.grad
        assert first.requires_grad
        (first * first).sum().backward()  # adds d|g|^2/dx into x.grad, as PyTorch
        return x.grad

    ours = run(fnn, fnn.tensor(values, dtype="float64", requires_grad=True))
    theirs = run(torch, torch.tensor(values, requires_grad=True))
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12)


def test_an_op_without_a_second_derivative_is_named():
    x = fnn.randn((2, 8), dtype="float64", requires_grad=True)
    with pytest.raises(NotImplementedError, match="backward of 'rms_div' cannot be differ"):
        fnn.autograd.grad(fnn_F.rms_div(x).sum(), x, create_graph=True)
    (g,) = fnn.autograd.grad(fnn_F.rms_div(x).sum(), x)  # first order still works
    assert g.shape == (2, 8)


# ---------------------------------------------------------------- models: penalties and HVPs


def _mlp(lib, x, w1, b1, w2, b2):
    """Linear-tanh-Linear, through F.linear (fastnn's fused linear and bias_act nodes)."""
    F = _functional(lib)
    return F.linear(F.linear(x, w1, b1).tanh(), w2, b2)


MLP_SHAPES = [(5, 4), (6, 4), (6,), (3, 6), (3,)]  # x, w1, b1, w2, b2
TARGETS = np.array([0, 2, 1, 1, 0])


def _loss(lib, arrays_or_tensors):
    logits = _mlp(lib, *arrays_or_tensors)
    return _functional(lib).cross_entropy(logits, lib.tensor(TARGETS))


def _penalty_grads(lib, arrays):
    """d/d(weights) of ||d loss / dx||^2: the gradient penalty of WGAN-GP."""
    ts = [lib.tensor(a, requires_grad=True, dtype=lib.float64) for a in arrays]
    (gx,) = lib.autograd.grad(_loss(lib, ts), ts[0], create_graph=True)
    penalty = (gx * gx).sum()
    return float(penalty.detach().numpy() if lib is not fnn else penalty.item()), [
        g.numpy() if lib is fnn else g.detach().numpy()
        for g in lib.autograd.grad(penalty, ts[1:])]


def _penalty_value(arrays):
    ts = [fnn.tensor(a, requires_grad=True, dtype="float64") for a in arrays]
    (gx,) = fnn.autograd.grad(_loss(fnn, ts), ts[0])
    return float((gx * gx).sum().item())


def test_gradient_penalty_matches_finite_differences_and_torch():
    arrays = _inputs(MLP_SHAPES)
    value, grads = _penalty_grads(fnn, arrays)
    for k, g in enumerate(grads, start=1):  # every weight entry, by central differences
        ref = np.zeros_like(arrays[k])
        for i in np.ndindex(arrays[k].shape):
            up = [a.copy() for a in arrays]
            down = [a.copy() for a in arrays]
            up[k][i] += EPS
            down[k][i] -= EPS
            ref[i] = (_penalty_value(up) - _penalty_value(down)) / (2 * EPS)
        np.testing.assert_allclose(g, ref, rtol=1e-5, atol=1e-8)
    pytest.importorskip("torch")
    import torch

    torch_value, torch_grads = _penalty_grads(torch, arrays)
    np.testing.assert_allclose(value, torch_value, rtol=1e-12)
    for ours, theirs in zip(grads, torch_grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-14)


def test_hessian_vector_product_of_an_mlp_loss():
    arrays = _inputs(MLP_SHAPES)
    vectors = _inputs(MLP_SHAPES[1:])

    def gradient(params, create_graph=False):
        ts = [fnn.tensor(a, requires_grad=True, dtype="float64") for a in params]
        loss = _loss(fnn, [fnn.tensor(arrays[0], dtype="float64")] + ts)
        return ts, fnn.autograd.grad(loss, ts, create_graph=create_graph)

    ts, grads = gradient(arrays[1:], create_graph=True)
    dot = sum((g * fnn.tensor(v, dtype="float64")).sum() for g, v in zip(grads, vectors))
    hvp = [h.numpy() for h in fnn.autograd.grad(dot, ts)]
    up = gradient([a + EPS * v for a, v in zip(arrays[1:], vectors)])[1]
    down = gradient([a - EPS * v for a, v in zip(arrays[1:], vectors)])[1]
    for h, u, d in zip(hvp, up, down):
        np.testing.assert_allclose(h, (u.numpy() - d.numpy()) / (2 * EPS), rtol=1e-5, atol=1e-8)
    torch = pytest.importorskip("torch")
    tts = [torch.tensor(a, requires_grad=True) for a in arrays[1:]]
    tgrads = torch.autograd.grad(_loss(torch, [torch.tensor(arrays[0])] + tts), tts,
                                 create_graph=True)
    tdot = sum((g * torch.tensor(v)).sum() for g, v in zip(tgrads, vectors))
    for ours, theirs in zip(hvp, torch.autograd.grad(tdot, tts)):
        np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-10, atol=1e-14)


def test_nn_mlp_gradient_penalty_matches_torch():
    torch = pytest.importorskip("torch")
    fnn.manual_seed(3)
    model = fnn.nn.Sequential(fnn.nn.Linear(4, 6), fnn.nn.Tanh(), fnn.nn.Linear(6, 2))
    model = model.to(fnn.float64)
    reference = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(),
                                    torch.nn.Linear(6, 2)).double()
    with torch.no_grad():
        for ours, theirs in zip(model.parameters(), reference.parameters()):
            theirs.copy_(torch.tensor(ours.numpy()))
    x_values = RNG.standard_normal((5, 4))

    def penalty_grads(lib, net):
        x = lib.tensor(x_values, requires_grad=True)
        out = net(x)
        (gx,) = lib.autograd.grad((out * out).sum(), x, create_graph=True)
        ((gx * gx).sum() * 0.5).backward()
        return [p.grad.numpy() if lib is fnn else p.grad.detach().numpy()
                for p in net.parameters()]

    for ours, theirs in zip(penalty_grads(fnn, model), penalty_grads(torch, reference)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("fn", [
    lambda x: x * x.detach() * x,
    lambda x: x.detach() * x * x,
    lambda x: x / x.detach() * x,
    lambda x: x.detach() / (x * x),
    lambda x: x ** x.detach(),
])
def test_inputs_sharing_data_with_a_detached_copy(fn):
    """x and x.detach() share one array: only x may carry the second derivative."""
    torch = pytest.importorskip("torch")
    values = np.array([0.7, 1.3])

    def second(lib, x):
        (g,) = lib.autograd.grad(fn(x).sum(), x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)
        return h.numpy() if lib is fnn else h.detach().numpy()

    ours = second(fnn, fnn.tensor(values, dtype="float64", requires_grad=True))
    theirs = second(torch, torch.tensor(values, requires_grad=True))
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)


# ---------------------------------------------------------------- TensorOps records as ops do

A = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
RECORDED_ALIKE = {  # name -> (the public op on x, y; the same through TensorOps)
    "exp": (lambda x, y: x.exp(), lambda T, x, y: T.exp(x)),
    "log": (lambda x, y: x.log(), lambda T, x, y: T.log(x)),
    "sqrt": (lambda x, y: x.sqrt(), lambda T, x, y: T.sqrt(x)),
    "sin": (lambda x, y: x.sin(), lambda T, x, y: T.sin(x)),
    "mul": (lambda x, y: x * y, lambda T, x, y: T.mul(x, y)),
    "div": (lambda x, y: x / y, lambda T, x, y: T.div(x, y)),
    "pow": (lambda x, y: x ** y, lambda T, x, y: T.pow(x, y)),
    "pow_scalar": (lambda x, y: x ** 2.0, lambda T, x, y: T.pow(x, 2.0)),
    "maximum": (lambda x, y: fnn.maximum(x, y), lambda T, x, y: T.maximum(x, y)),
    "tanh": (lambda x, y: x.tanh(), lambda T, x, y: T.tanh(x)),
    "sigmoid": (lambda x, y: x.sigmoid(), lambda T, x, y: T.sigmoid(x)),
    "leaky_relu": (lambda x, y: fnn_F.leaky_relu(x, 0.1), lambda T, x, y: T.leaky_relu(x, 0.1)),
    "sum": (lambda x, y: x.sum(1, keepdim=True), lambda T, x, y: T.sum(x, (1,), True)),
    "mean": (lambda x, y: x.mean(-1), lambda T, x, y: T.mean(x, (-1,), False)),
    "max": (lambda x, y: x.amax(0), lambda T, x, y: T.max(x, (0,), False)),
    "prod": (lambda x, y: x.prod(1), lambda T, x, y: T.prod(x, (1,), False)),
    "cumsum": (lambda x, y: x.cumsum(1), lambda T, x, y: T.cumsum(x, 1)),
    "reshape": (lambda x, y: x.reshape(3, 2), lambda T, x, y: T.reshape(x, (3, 2))),
    "transpose": (lambda x, y: x.T, lambda T, x, y: T.transpose(x, (1, 0))),
    "broadcast_to": (lambda x, y: x.broadcast_to((4, 2, 3)),
                     lambda T, x, y: T.broadcast_to(x, (4, 2, 3))),
    "matmul": (lambda x, y: x @ y.T, lambda T, x, y: T.matmul(x, T.transpose(y, (1, 0)))),
    "softmax": (lambda x, y: x.softmax(1), lambda T, x, y: T.softmax(x, 1)),
    "log_softmax": (lambda x, y: x.log_softmax(1), lambda T, x, y: T.log_softmax(x, 1)),
    "slice": (lambda x, y: x[:, 1:], lambda T, x, y: T.slice(x, (0, 1), (2, 3), (1, 1))),
    "where": (lambda x, y: fnn.where(x > 0.0, x, y), lambda T, x, y: T.where(T.greater(x, 0.0),
                                                                               x, y)),
    "gather": (lambda x, y: fnn.gather(x, 1, fnn.tensor([[0], [2]])),
               lambda T, x, y: T.gather(x, 1, fnn.tensor([[0], [2]])._data)),
    "astype": (lambda x, y: x.float(), lambda T, x, y: T.astype(x, "float32")),
}


def _recorded(out, x, y):
    """The node of ``out`` as the rule sees it: op, where each saved array comes from,
    the attributes, and which inputs are x and y."""
    node = out._node
    names = {id(x._data): "x", id(y._data): "y", id(out._data): "out"}
    saved = tuple(names.get(id(s), "scalar" if isinstance(s, float) else "other")
                  for s in node.saved)
    inputs = tuple({id(x): "x", id(y): "y"}.get(id(t), "other") if t is not None else None
                   for t in node.inputs)
    return node.op, saved, repr(_plain(node.attrs)), inputs


def _plain(value):
    """``value`` with every tuple (an fnn.Size among them) a plain tuple, so that the reprs
    compare the layout, not whether a shape came from x.shape or x._data.shape."""
    return tuple(_plain(v) for v in value) if isinstance(value, tuple) else value


@pytest.mark.parametrize("name", sorted(RECORDED_ALIKE))
def test_tensor_ops_record_what_the_tensor_ops_record(name):
    """The rules read node.saved and node.attrs by position: TensorOps must lay them out
    as fastnn.ops does, or a second derivative would read the wrong arrays."""
    public, adapted = RECORDED_ALIKE[name]
    x = fnn.tensor(np.abs(A) + 0.5, dtype="float64", requires_grad=True)
    y = fnn.tensor(A, dtype="float64", requires_grad=True)
    adapter = TensorOps(x.device.ops, type(x), attach)
    assert _recorded(adapted(adapter, x, y), x, y) == _recorded(public(x, y), x, y)
