"""MultiheadAttention's packed self-attention (one q/k/v GEMM, the fused attention hook)
against its composite path and PyTorch, and the fused node under create_graph."""

import copy

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn

rng = np.random.default_rng(3)


def _run(layer, x, grad, **kwargs):
    xt = fnn.tensor(x, requires_grad=True)
    out = layer(xt, xt, xt, **kwargs)[0]
    out.backward(fnn.tensor(grad))
    return out.numpy(), xt.grad.numpy(), {n: p.grad.numpy() for n, p in
                                          layer.named_parameters()}


@pytest.mark.parametrize("shape, batch_first", [((5, 3, 8), False), ((3, 5, 8), True),
                                                ((7, 8), False), ((1, 1, 8), True)])
@pytest.mark.parametrize("causal", [False, True])
def test_packed_self_attention_equals_the_composite(shape, batch_first, causal):
    layer = nn.MultiheadAttention(8, 2, batch_first=batch_first, dtype=fnn.float64)
    twin = copy.deepcopy(layer)
    x, g = rng.standard_normal(shape), rng.standard_normal(shape)
    mask = None
    if causal:
        length = shape[1] if batch_first and len(shape) == 3 else shape[0]
        mask = fnn.tensor(np.triu(np.ones((length, length), bool), 1))
    fused = _run(layer, x, g, need_weights=False, is_causal=causal)
    # weights asked for, or a mask given: the composite path
    composed = _run(twin, x, g, need_weights=True, attn_mask=mask, is_causal=causal)
    np.testing.assert_allclose(fused[0], composed[0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(fused[1], composed[1], rtol=1e-12, atol=1e-14)
    for name in fused[2]:
        np.testing.assert_allclose(fused[2][name], composed[2][name], rtol=1e-10, atol=1e-14,
                                   err_msg=name)


def test_packed_self_attention_matches_torch():
    torch = pytest.importorskip("torch")
    ours = nn.MultiheadAttention(8, 2, batch_first=True)
    theirs = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = rng.standard_normal((3, 6, 8)).astype(np.float32)
    xt, xf = torch.tensor(x, requires_grad=True), fnn.tensor(x, requires_grad=True)
    want = theirs(xt, xt, xt, need_weights=False)[0]
    got = ours(xf, xf, xf, need_weights=False)[0]
    want.square().sum().backward()
    (got * got).sum().backward()
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(xf.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours.in_proj_weight.grad.numpy(),
                               theirs.in_proj_weight.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shared", [False, True])
def test_fused_attention_differentiates_twice(shared):
    torch = pytest.importorskip("torch")
    q, k, v = (rng.standard_normal((2, 3, 4)) for _ in range(3))
    if shared:  # q = k = v: one tensor, three uses
        def attend(lib, t):
            layer_in = t.reshape(2, 3, 4)
            return (layer_in,) * 3
    else:
        def attend(lib, t):
            return tuple(t.reshape(3, 2, 3, 4)[i] for i in range(3))
    data = q if shared else np.stack([q, k, v])
    results = []
    for lib, f in ((fnn, F), (torch, torch.nn.functional)):
        t = lib.tensor(data, requires_grad=True)
        out = f.scaled_dot_product_attention(*attend(lib, t), is_causal=True)
        (grad,) = (fnn.autograd.grad if lib is fnn else torch.autograd.grad)(
            (out * out).sum(), t, create_graph=True)
        (grad * grad).sum().backward()
        results.append((out.detach().numpy(), t.grad.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-10)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-8, atol=1e-12)


def test_packed_mha_differentiates_twice():
    layer = nn.MultiheadAttention(4, 2, dtype=fnn.float64)
    x = fnn.tensor(rng.standard_normal((3, 2, 4)), requires_grad=True)
    twin = copy.deepcopy(layer)
    xs = []
    for use, weights in ((layer, False), (twin, True)):
        xt = fnn.tensor(x.numpy(), requires_grad=True)
        out = use(xt, xt, xt, need_weights=weights)[0]
        (grad,) = fnn.autograd.grad((out * out).sum(), xt, create_graph=True)
        (grad * grad).sum().backward()
        xs.append(xt.grad.numpy())
    np.testing.assert_allclose(xs[0], xs[1], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("extra", [{}, {"kdim": 3, "vdim": 5}])
def test_cross_attention_through_the_hook_equals_the_composite(extra):
    layer = nn.MultiheadAttention(8, 2, dtype=fnn.float64, **extra)
    twin = copy.deepcopy(layer)
    q = rng.standard_normal((4, 2, 8))
    k = rng.standard_normal((6, 2, extra.get("kdim", 8)))
    v = rng.standard_normal((6, 2, extra.get("vdim", 8)))
    results = []
    for use, weights in ((layer, False), (twin, True)):
        ts = [fnn.tensor(a, requires_grad=True) for a in (q, k, v)]
        out = use(*ts, need_weights=weights)[0]
        (out * out).sum().backward()
        results.append([out.numpy()] + [t.grad.numpy() for t in ts])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("mask_shape", [(6,), (1, 6), (4, 6), (2, 1, 4, 6)])
def test_the_attention_hook_takes_every_mask_shape_the_spec_allows(mask_shape):
    """A mask broadcastable to (..., L, S), a 1-d (S,) one too, gives the composite's result."""
    from fastnn.api.composite_attention import attention
    from fastnn.api.registry import get_backend

    ops = get_backend("cpu").ops
    q, k, v = (rng.standard_normal(s) for s in ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 7)))
    mask = rng.random(mask_shape) < 0.6
    mask[..., 0] = True  # at least one key per query, as the spec requires
    got = ops.attention(q, k, v, mask, 0.4)
    want = attention(ops, q, k, v, mask, 0.4)
    for mine, theirs in zip(got, want):
        np.testing.assert_allclose(ops.to_numpy(mine), ops.to_numpy(theirs), rtol=1e-12)
