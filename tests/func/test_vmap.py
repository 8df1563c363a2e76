"""fnn.func.vmap against torch.func.vmap: in_dims, out_dims, nesting, per-sample
gradients, randomness and torch's errors."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn import func as ffunc
from fastnn import nn
from tests.func.helpers import B43, X3, Y23, assert_tree_close, ours, theirs

torch = pytest.importorskip("torch")
TF = torch.func


def test_in_dims_int_none_negative_and_nested_match_torch():
    batch, other = np.arange(24.0).reshape(2, 3, 4) / 7, np.arange(12.0).reshape(4, 3) / 5
    cases = [
        (lambda a, b: a.sum(0) * b[:, 0], (1, None), (batch, other)),
        (lambda a, b: a @ b.T, (-1, None), (batch, other)),
        (lambda a, b: a * b, (0, 1), (B43, B43.T.copy())),
    ]
    for f, in_dims, args in cases:
        got = ffunc.vmap(f, in_dims=in_dims)(*(ours(a) for a in args))
        want = TF.vmap(f, in_dims=in_dims)(*(theirs(torch, a) for a in args))
        assert_tree_close(got, want)
    def f(p, s):
        return p["w"] * p["v"][0] + s

    in_dims = ({"w": 0, "v": None}, None)  # a dict of in_dims, a non-tensor argument
    got = ffunc.vmap(f, in_dims=in_dims)({"w": ours(B43), "v": ours(Y23)}, 2.0)
    want = TF.vmap(f, in_dims=in_dims)({"w": theirs(torch, B43), "v": theirs(torch, Y23)}, 2.0)
    assert_tree_close(got, want)


def test_out_dims_tuple_outputs_and_kwargs_match_torch():
    def f(x, scale=1.0):
        return x * scale, {"s": x.sum(), "m": x[:2]}

    for out_dims in (0, -1, (1, {"s": 0, "m": -1}), (-2, 0)):
        got = ffunc.vmap(f, out_dims=out_dims)(ours(B43), scale=3.0)
        want = TF.vmap(f, out_dims=out_dims)(theirs(torch, B43), scale=3.0)
        assert_tree_close(got, want)
    got = ffunc.vmap(lambda x, w: (x * 2, w), in_dims=(0, None), out_dims=(0, None))(
        ours(B43), ours(X3))
    assert_tree_close(got, (ours(B43 * 2), ours(X3)))


def _shapes(tree):
    if isinstance(tree, (tuple, list)):
        return [_shapes(t) for t in tree]
    if isinstance(tree, dict):
        return {k: _shapes(v) for k, v in tree.items()}
    return (tuple(tree.shape), str(tree.dtype).split(".")[-1]) if hasattr(tree, "shape") \
        else tree


def test_a_batch_of_size_0_gives_empty_outputs_as_torchs():
    """A size-0 batch (an empty last chunk, a filtered batch) raised in fastnn; PyTorch's
    vmap returns empty outputs of the right shapes and dtypes. The default generator is left
    where it was."""
    cases = [
        (lambda lib: lambda v: v * 2, {}, (0, 3)),
        (lambda lib: lambda v: (v.sum(), v.long()), dict(out_dims=(0, 1)), (0, 3)),
        (lambda lib: lambda v: {"a": v[:2], "b": v.max()}, {}, (0, 3)),
        (lambda lib: lambda v: v.sum(), dict(in_dims=1), (3, 0)),
        (lambda lib: lambda v: (v, 5), dict(out_dims=(0, None)), (0, 3)),
        (lambda lib: lib.func.vmap(lambda v: v @ lib.ones(3, 2)), {}, (2, 0, 3)),
        (lambda lib: lib.func.grad(lambda v: (v ** 2).sum()), {}, (0, 3)),
        (lambda lib: lambda v: v + lib.rand(3), dict(randomness="different"), (0, 3)),
    ]
    for make, kwargs, shape in cases:
        fnn.manual_seed(0)
        got = ffunc.vmap(make(fnn), **kwargs)(fnn.ones(*shape))
        assert fnn.rand(2).tolist() == (fnn.manual_seed(0), fnn.rand(2))[1].tolist()
        want = TF.vmap(make(torch), **kwargs)(torch.ones(*shape))
        assert _shapes(got) == _shapes(want)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        ffunc.vmap(lambda v: v + fnn.rand(3))(fnn.ones(0, 3))


def test_fnn_vmap_is_func_vmap_as_torch_vmap_is_torch_func_vmap():
    assert fnn.vmap is ffunc.vmap and torch.vmap is TF.vmap


def test_nested_vmap_is_an_outer_product_of_maps():
    a, b = np.arange(3.0), np.arange(4.0) + 1
    outer = ffunc.vmap(ffunc.vmap(lambda u, v: u * v + u, in_dims=(None, 0)), in_dims=(0, None))
    np.testing.assert_allclose(outer(ours(a), ours(b)).numpy(), a[:, None] * b + a[:, None])
    tout = TF.vmap(TF.vmap(lambda u, v: u * v + u, in_dims=(None, 0)), in_dims=(0, None))
    assert_tree_close(outer(ours(a), ours(b)), tout(theirs(torch, a), theirs(torch, b)))


def _mlp_pair():
    fnn.manual_seed(0)
    torch.manual_seed(0)
    theirs_model = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(),
                                       torch.nn.Linear(5, 2)).double()
    ours_model = nn.Sequential(nn.Linear(3, 5, dtype=fnn.float64), nn.Tanh(),
                               nn.Linear(5, 2, dtype=fnn.float64))
    params = {k: v.detach() for k, v in theirs_model.named_parameters()}
    return ours_model, theirs_model, params


def test_per_sample_gradients_of_an_mlp_match_torch_and_a_loop():
    ours_model, theirs_model, tparams = _mlp_pair()
    params = {k: ours(v.numpy()) for k, v in tparams.items()}
    targets = np.array([0, 1, 1, 0])

    def loss(call, cross_entropy, model):
        def f(p, x, t):
            out = call(model, p, (x.unsqueeze(0),))
            return cross_entropy(out, t.unsqueeze(0))
        return f

    ours_loss = loss(ffunc.functional_call, fnn.functional.cross_entropy, ours_model)
    theirs_loss = loss(TF.functional_call, torch.nn.functional.cross_entropy, theirs_model)
    x, t = ours(B43), fnn.tensor(targets, dtype=fnn.int64)
    got = ffunc.vmap(ffunc.grad(ours_loss), in_dims=(None, 0, 0))(params, x, t)
    want = TF.vmap(TF.grad(theirs_loss), in_dims=(None, 0, 0))(
        tparams, theirs(torch, B43), torch.tensor(targets))
    assert_tree_close(got, want, rtol=1e-9)
    assert got["0.weight"].shape == (4, 5, 3)
    assert not any(g.requires_grad for g in got.values())
    for i in range(4):  # and the gradient of each sample's loss on its own
        one = {k: v.detach().requires_grad_(True) for k, v in params.items()}
        ours_loss(one, x[i], t[i]).backward()
        for k in one:
            np.testing.assert_allclose(got[k][i].numpy(), one[k].grad.numpy(), rtol=1e-10)


def test_vmap_of_grad_keeps_the_graph_of_parameters_that_require_grad():
    w = ours(X3, requires_grad=True)
    tw = theirs(torch, X3, requires_grad=True)
    per_sample = ffunc.vmap(ffunc.grad(lambda x: (fnn.sin(x * w) ** 2).sum()))(ours(B43))
    tper = TF.vmap(TF.grad(lambda x: (torch.sin(x * tw) ** 2).sum()))(theirs(torch, B43))
    assert per_sample.requires_grad
    (per_sample ** 2).sum().backward()
    (tper ** 2).sum().backward()
    assert_tree_close(w.grad, tw.grad)



def test_errors_use_torchs_wording():
    x, y = ours(B43), ours(Y23)

    def f(a, b=None):
        return a

    cases = [
        (dict(), (x, y), "Expected all tensors to have the same size in the mapped dimension, "
                         "got sizes \\[4, 2\\] for the mapped dimension"),
        (dict(in_dims=(0, 0)), (x, 2.0), "Got in_dim=0 for an input but the input is of type "
                                         "<class 'float'>. We cannot vmap over non-Tensor"),
        (dict(in_dims=2), (x,), "Got in_dim=2 for some input, but that input is a Tensor of "
                                "dimensionality 2 so expected in_dim to satisfy -2 <= in_dim "
                                "< 2."),
        (dict(in_dims=[0]), (x,), "expected `in_dims` to be int or a \\(potentially nested\\) "
                                  "tuple matching the structure of inputs"),
        (dict(in_dims=(0, 0, 0)), (x, y), "in_dims is not compatible with the structure of "
                                          "`inputs`"),
        (dict(in_dims=(0.5,)), (x,), "Got in_dim=0.5 for an input but in_dim must be either "
                                     "an integer dimension or None."),
        (dict(), (), "got no inputs. Maybe you forgot to add inputs"),
    ]
    for kwargs, args, message in cases:
        for vmap, lib_args in ((ffunc.vmap, args), (TF.vmap, tuple(
                torch.tensor(a.numpy()) if isinstance(a, fnn.Tensor) else a for a in args))):
            with pytest.raises(ValueError, match=message):
                vmap(f, **kwargs)(*lib_args)
    with pytest.raises(ValueError, match="Expected at least one Tensor to vmap over"):
        ffunc.vmap(f, in_dims=(None,))(x)
    with pytest.raises(ValueError, match="must only return Tensors, got type <class 'float'>"):
        ffunc.vmap(lambda a: 1.0)(x)
    with pytest.raises(ValueError, match="can not return a BatchedTensor when out_dim is None"):
        ffunc.vmap(lambda a: a * 2, out_dims=None)(x)
    with pytest.raises(ValueError, match="out_dims is not compatible with the structure"):
        ffunc.vmap(lambda a: (a, a), out_dims=(0, 0, 0))(x)
    with pytest.raises(ValueError, match="`out_dims` must be an int, None or a python"):
        ffunc.vmap(f, out_dims="0")
    with pytest.raises(ValueError, match="chunk_size should be None or greater than 0"):
        ffunc.vmap(f, chunk_size=0)


def test_ensembling_with_stack_module_state_matches_torch():
    fnn.manual_seed(0)
    torch.manual_seed(0)
    tmodels = [torch.nn.Linear(3, 2).double() for _ in range(4)]
    models = [nn.Linear(3, 2, dtype=fnn.float64) for _ in range(4)]
    for mine, theirs_model in zip(models, tmodels):
        mine.load_state_dict({k: ours(v.detach().numpy())
                              for k, v in theirs_model.state_dict().items()})
    params, buffers = ffunc.stack_module_state(models)
    tparams, tbuffers = TF.stack_module_state(tmodels)
    assert params["weight"].shape == (4, 2, 3) and params["weight"].requires_grad
    assert params["weight"]._node is None and buffers == {}

    def wrapper(call, base):
        return lambda p, b, x: call(base, (p, b), (x,))

    out = ffunc.vmap(wrapper(ffunc.functional_call, models[0]), in_dims=(0, 0, None))(
        params, buffers, ours(B43))
    tout = TF.vmap(wrapper(TF.functional_call, tmodels[0]), in_dims=(0, 0, None))(
        tparams, tbuffers, theirs(torch, B43))
    assert_tree_close(out, tout)
    (out ** 2).sum().backward()
    (tout ** 2).sum().backward()
    assert_tree_close(params["weight"].grad, tparams["weight"].grad)
    models[1].eval()
    with pytest.raises(RuntimeError, match="same training/eval mode"):
        ffunc.stack_module_state(models)
    with pytest.raises(RuntimeError, match="Expected at least one model, got 0"):
        ffunc.stack_module_state([])
