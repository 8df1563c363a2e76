"""The Module protocol against PyTorch's, part one: traversal generators and their orders,
apply(fn), and hooks (call order, replacements, backward gradients); part two, buffers and
the rest, is test_module_state.py."""

from __future__ import annotations

import types

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn, optim
from tests.nn.module_pair import tied_pair as _pair
from tests.nn.module_pair import torch_or_skip as _torch

# ---------------------------------------------------------------- traversal


def test_traversals_are_generators_in_pytorchs_order():
    torch = _torch()
    ours, theirs = _pair(torch)
    for name in ("parameters", "named_parameters", "buffers", "named_buffers", "children",
                 "named_children", "modules", "named_modules"):
        assert isinstance(getattr(ours, name)(), types.GeneratorType), name
    assert next(ours.parameters()) is ours.inp.weight

    def names(pairs):
        return [n for n, _ in pairs]

    assert names(ours.named_modules()) == names(theirs.named_modules())
    assert names(ours.named_children()) == names(theirs.named_children())
    assert names(ours.named_parameters()) == names(theirs.named_parameters())
    assert names(ours.named_buffers()) == names(theirs.named_buffers())
    assert list(ours.state_dict()) == list(theirs.state_dict())  # tied weights: both names
    for kw in (dict(prefix="m"), dict(recurse=False), dict(prefix="x", recurse=False),
               dict(remove_duplicate=False)):
        assert names(ours.named_parameters(**kw)) == names(theirs.named_parameters(**kw)), kw
        assert names(ours.block.named_buffers(**kw)) == names(theirs.block.named_buffers(**kw))
    for kw in (dict(prefix="top"), dict(remove_duplicate=False)):
        assert names(ours.named_modules(**kw)) == names(theirs.named_modules(**kw)), kw
    assert len(list(ours.parameters())) == len(list(theirs.parameters())) == 8
    assert list(ours.parameters(recurse=False)) == []
    assert len(list(ours.modules())) == len(list(theirs.modules()))


def test_a_parameter_assigned_again_keeps_its_place_as_pytorchs():
    """``m.weight = Parameter(...)`` replaces the parameter where it stood (it moved to the
    end: named_parameters(), state_dict() and a later optimizer's order changed); a new
    name, or one freed by ``del`` or ``= None``, goes last, as in PyTorch."""
    torch = _torch()
    results = []
    for lib in (fnn, torch):
        m = lib.nn.Linear(2, 3)
        m.weight = lib.nn.Parameter(lib.ones(3, 2))
        first = [n for n, _ in m.named_parameters()]
        m.extra = lib.nn.Parameter(lib.ones(1))
        m.bias = None
        m.bias = lib.nn.Parameter(lib.zeros(3))
        results.append((first, [n for n, _ in m.named_parameters()], list(m.state_dict())))
    assert results[0] == results[1]
    assert results[0][0] == ["weight", "bias"]


def test_apply_fn_visits_children_first_and_returns_the_module():
    torch = _torch()
    ours, theirs = _pair(torch)
    seen, their_seen = [], []
    assert ours.apply(lambda m: seen.append(type(m).__name__)) is ours
    theirs.apply(lambda m: their_seen.append(type(m).__name__))
    assert seen == their_seen  # a shared module is visited once per parent, as in PyTorch


def test_apply_fn_initialises_and_apply_optimizer_still_updates():
    model = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 2))

    def init(m):
        if isinstance(m, nn.Linear):
            m.load_state_dict({"weight": np.full(m.weight.shape, 0.5),
                               "bias": m.bias.numpy()})

    model.apply(init)
    assert all((p.numpy() == 0.5).all() for n, p in model.named_parameters() if "weight" in n)
    opt = optim.SGD(model.parameters(), lr=1.0)
    x = fnn.ones((1, 3))
    _, grads = model.reverse(x, fnn.ones((1, 2)))
    assert model.apply(opt, grads) is None
    assert (model[0].weight.numpy() != 0.5).all()
    with pytest.raises(TypeError, match=r"Sequential.apply: give a function of a module .*got "
                                        r"one int"):
        model.apply(3)


# ---------------------------------------------------------------- forward hooks


def _record_hooks(model, log):
    handles = []
    for name, mod in model.named_modules():
        handles.append(mod.register_forward_pre_hook(
            lambda m, args, name=name: log.append(("pre", name))))
        handles.append(mod.register_forward_hook(
            lambda m, args, out, name=name: log.append(("fwd", name))))
    return handles


def test_forward_hooks_run_in_pytorchs_order_and_remove():
    torch = _torch()
    ours, theirs = _pair(torch)
    ours_log, their_log = [], []
    handles = _record_hooks(ours, ours_log)
    _record_hooks(theirs, their_log)
    x = np.random.default_rng(0).standard_normal((5, 3))
    ours(fnn.tensor(x))
    theirs(torch.tensor(x))
    assert ours_log == their_log
    for handle in handles:
        handle.remove()
    handles[0].remove()  # twice does nothing
    ours_log.clear()
    ours(fnn.tensor(x))
    assert ours_log == []


def test_hooks_replace_args_and_output_as_pytorchs():
    torch = _torch()
    ours, theirs = _pair(torch)
    for model in (ours, theirs):
        model.inp.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
        model.act.register_forward_pre_hook(lambda m, args: args[0] + 1)  # not a tuple
        model.out.register_forward_hook(lambda m, args, out: out - args[0].sum())
        model.block.register_forward_hook(lambda m, args, out: None)  # None keeps it
    x = np.random.default_rng(1).standard_normal((5, 3))
    # atol: an output that cancels to 3e-3 differs by 4e-15 where a BLAS (its thread count
    # set by an earlier test) sums in another order
    np.testing.assert_allclose(ours(fnn.tensor(x)).numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-12,
                               atol=1e-13)


def test_prepend_with_kwargs_and_context_manager():
    layer = nn.Linear(2, 2)
    log = []
    layer.register_forward_pre_hook(lambda m, a: log.append("first"))
    layer.register_forward_pre_hook(lambda m, a: log.append("prepended"), prepend=True)

    def with_kwargs(m, args, kwargs, out):
        log.append(("kw", sorted(kwargs)))

    layer.register_forward_hook(with_kwargs, with_kwargs=True)
    with layer.register_forward_hook(lambda m, a, out: out * 0):
        assert (layer(fnn.ones((1, 2))).numpy() == 0).all()
    assert log == ["prepended", "first", ("kw", [])]
    assert (layer(fnn.ones((1, 2))).numpy() != 0).any()  # removed at the block's end
    with pytest.raises(TypeError, match=r"register_forward_hook: hook must be callable"):
        layer.register_forward_hook(3)


def test_hooks_see_each_layer_of_a_fused_linear_activation_pair():
    model = nn.Sequential(nn.Linear(3, 4), nn.Activation("relu"))
    x = fnn.randn((2, 3))
    plain = model(x).numpy()
    seen = []
    model[0].register_forward_hook(lambda m, args, out: seen.append(out.shape))
    np.testing.assert_allclose(model(x).numpy(), plain, rtol=1e-6)
    assert seen == [(2, 4)]


# ---------------------------------------------------------------- backward hooks


def _backward_log(model, names, log):
    for name in names:
        mod = dict(model.named_modules())[name]

        def hook(m, grad_input, grad_output, name=name):
            log.append((name, [None if g is None else np.array(g.detach().numpy()
                                                                if hasattr(g, "detach")
                                                                else g.numpy())
                               for g in grad_input],
                        [np.array(g.detach().numpy() if hasattr(g, "detach") else g.numpy())
                         for g in grad_output]))

        mod.register_full_backward_hook(hook)


def test_full_backward_hooks_get_pytorchs_gradients_in_pytorchs_order():
    torch = _torch()
    ours, theirs = _pair(torch)
    names = ["inp", "act", "block", "block.1", "out", ""]
    ours_log, their_log = [], []
    _backward_log(ours, names, ours_log)
    _backward_log(theirs, names, their_log)
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    F.mse_loss(ours(fnn.tensor(x)), fnn.tensor(y)).backward()
    torch.nn.functional.mse_loss(theirs(torch.tensor(x)), torch.tensor(y)).backward()
    assert [entry[0] for entry in ours_log] == [entry[0] for entry in their_log]
    for (name, gi, go), (_, tgi, tgo) in zip(ours_log, their_log):
        assert len(gi) == len(tgi) == 1 and len(go) == len(tgo) == 1, name
        assert (gi[0] is None) == (tgi[0] is None), name  # the input needs no gradient
        if gi[0] is not None:
            np.testing.assert_allclose(gi[0], tgi[0], rtol=1e-10, atol=1e-14, err_msg=name)
        np.testing.assert_allclose(go[0], tgo[0], rtol=1e-10, atol=1e-14, err_msg=name)


def test_a_backward_hook_replaces_the_input_gradient_as_pytorchs():
    torch = _torch()
    ours, theirs = _pair(torch)
    for model in (ours, theirs):
        model.block.register_full_backward_hook(lambda m, gi, go: (gi[0] * 3,))
    x = np.random.default_rng(3).standard_normal((5, 3))
    ours(fnn.tensor(x)).sum().backward()
    theirs(torch.tensor(x)).sum().backward()
    tgrads = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():  # the layers before "block" see 3x the gradient
        np.testing.assert_allclose(p.grad.numpy(), tgrads[name].grad.numpy(), rtol=1e-10,
                                   atol=1e-14, err_msg=name)


def test_backward_hooks_on_a_module_with_two_inputs_or_outputs_are_refused():
    attention = nn.MultiheadAttention(4, 2, batch_first=True)
    attention.register_full_backward_hook(lambda m, gi, go: None)
    x = fnn.randn((2, 3, 4), requires_grad=True)
    with pytest.raises(TypeError, match=r"MultiheadAttention: full backward \(pre-\)hooks "
                                        r"support modules called with one tensor input .*"
                                        r"passed 3 tensors"):
        attention(x, x, x)
    lstm = nn.LSTM(4, 3, batch_first=True)
    lstm.register_full_backward_hook(lambda m, gi, go: None)
    with pytest.raises(TypeError, match=r"LSTM: .* returned a tuple"):
        lstm(x)


def test_full_backward_pre_hooks_change_the_gradient_that_flows_as_pytorchs():
    """register_full_backward_pre_hook: hook(module, grad_output) as the output's gradient
    arrives; what it returns flows into the module's backward (the input's gradient and
    the parameters'), and the full backward hook then sees the changed grad_output."""
    torch = _torch()
    results = []
    for lib in (fnn, torch):
        layer = lib.nn.Linear(3, 2)
        with lib.no_grad():
            layer.weight.copy_(lib.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]]))
        seen = []
        layer.register_full_backward_pre_hook(lambda m, go: (go[0] * 10,))
        layer.register_full_backward_pre_hook(
            lambda m, go, seen=seen: seen.append(go[0].sum().item()))
        layer.register_full_backward_hook(
            lambda m, gi, go, seen=seen: seen.append(go[0].sum().item()))
        x = lib.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
        layer(x).sum().backward()
        results.append((seen, x.grad.tolist(), layer.weight.grad.tolist()))
    assert results[0] == results[1]
    assert results[0][0] == [20.0, 20.0]
    bad = nn.Linear(3, 2)
    bad.register_full_backward_pre_hook(lambda m, go: (go[0][:, :1],))
    with pytest.raises(ValueError, match=r"pre-hook must return None or \(grad_output,\)"):
        bad(fnn.ones((1, 3), requires_grad=True)).sum().backward()


def test_a_backward_hook_returning_a_wrong_shape_is_named():
    layer = nn.Linear(3, 2)
    layer.register_full_backward_hook(lambda m, gi, go: (fnn.zeros((1,)),))
    x = fnn.randn((4, 3), requires_grad=True)
    with pytest.raises(ValueError, match=r"Linear: a full backward hook must return None or "
                                         r"\(grad_input,\) with one float32 Tensor of shape "
                                         r"\(4, 3\)"):
        layer(x).sum().backward()


def test_backward_hooks_are_not_called_under_no_grad_and_are_removable():
    layer = nn.Linear(3, 2)
    calls = []
    handle = layer.register_full_backward_hook(lambda m, gi, go: calls.append(1))
    with fnn.no_grad():
        layer(fnn.randn((4, 3)))
    handle.remove()
    layer(fnn.randn((4, 3))).sum().backward()
    assert calls == []
