"""The Module protocol against PyTorch's: traversal generators and their orders, apply(fn),
hooks (call order, replacements, backward gradients), buffers, load_state_dict's result,
Sequential(OrderedDict), dtype/device moves that keep the Parameter objects, and the
tree-wide settings."""

from __future__ import annotations

import types
from collections import OrderedDict

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn, optim


def _torch():
    return pytest.importorskip("torch")


def _pair(torch):
    """The same model in both libraries, with a shared (tied) module, a BatchNorm (buffers)
    and a nested container, float64, with equal weights."""
    shared = nn.Linear(4, 4, dtype=fnn.float64)
    ours = nn.Sequential(OrderedDict([
        ("inp", nn.Linear(3, 4, dtype=fnn.float64)), ("act", nn.Tanh()),
        ("block", nn.Sequential(shared, nn.BatchNorm1d(4, dtype=fnn.float64), nn.Tanh())),
        ("tied", shared), ("out", nn.Linear(4, 2, dtype=fnn.float64)),
    ]))
    tnn = torch.nn
    tshared = tnn.Linear(4, 4)
    theirs = tnn.Sequential(OrderedDict([
        ("inp", tnn.Linear(3, 4)), ("act", tnn.Tanh()),
        ("block", tnn.Sequential(tshared, tnn.BatchNorm1d(4), tnn.Tanh())),
        ("tied", tshared), ("out", tnn.Linear(4, 2)),
    ])).double()
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


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
    np.testing.assert_allclose(ours(fnn.tensor(x)).numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-12)


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
    with pytest.raises(TypeError, match=r"MultiheadAttention: register_full_backward_hook "
                                        r"supports modules called with one tensor input .*"
                                        r"passed 3 tensors"):
        attention(x, x, x)
    lstm = nn.LSTM(4, 3, batch_first=True)
    lstm.register_full_backward_hook(lambda m, gi, go: None)
    with pytest.raises(TypeError, match=r"LSTM: .* returned a tuple"):
        lstm(x)


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


# ---------------------------------------------------------------- buffers and state dicts


class _WithBuffers(nn.Module):
    def __init__(self, lib_nn, make):
        super().__init__()
        self.lin = lib_nn.Linear(2, 2)
        self.register_buffer("kept", make([1.0, 2.0]))
        self.register_buffer("scratch", make([3.0]), persistent=False)


def test_non_persistent_buffers_stay_out_of_state_dict_as_pytorchs():
    torch = _torch()

    class Theirs(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(2, 2)
            self.register_buffer("kept", torch.tensor([1.0, 2.0]))
            self.register_buffer("scratch", torch.tensor([3.0]), persistent=False)

    ours, theirs = _WithBuffers(nn, fnn.tensor), Theirs()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    ours.double()
    assert ours.scratch.dtype is fnn.float64  # moved with the module all the same
    del ours.scratch
    assert [n for n, _ in ours.named_buffers()] == ["kept"]
    with pytest.raises(TypeError, match=r"register_buffer: buffer 'x' must be a fastnn "
                                        r"Tensor or None, got list"):
        ours.register_buffer("x", [1.0])
    with pytest.raises(KeyError, match=r"'lin' is already an attribute"):
        ours.register_buffer("lin", fnn.zeros((1,)))


def test_load_state_dict_strict_and_not_as_pytorchs():
    torch = _torch()
    ours, theirs = _pair(torch)
    sd = {k: v.numpy() for k, v in theirs.state_dict().items()}
    result = ours.load_state_dict(sd)
    assert result == (theirs.load_state_dict(theirs.state_dict()))
    assert repr(result) == "<All keys matched successfully>"
    partial = dict(sd)
    del partial["out.bias"], partial["block.1.running_var"]
    partial["extra.weight"] = np.zeros(2)
    tpartial = {k: torch.tensor(v) for k, v in partial.items()}
    before = ours.out.bias.numpy().copy()
    partial["inp.weight"] = sd["inp.weight"] * 0 + 7
    result = ours.load_state_dict(partial, strict=False)
    tresult = theirs.load_state_dict(tpartial, strict=False)
    assert result.missing_keys == tresult.missing_keys
    assert result.unexpected_keys == tresult.unexpected_keys
    assert (ours.inp.weight.numpy() == 7).all()  # what matched was loaded
    np.testing.assert_array_equal(ours.out.bias.numpy(), before)  # the rest left alone
    with pytest.raises(ValueError, match=r"missing keys \['block.1.running_var', 'out.bias'\], "
                                         r"unexpected keys \['extra.weight'\]"):
        ours.load_state_dict(partial)
    wrong = dict(sd, **{"out.weight": np.zeros((3, 4))})
    with pytest.raises(ValueError, match=r"out.weight: checkpoint \(3, 4\), model \(2, 4\)"):
        ours.load_state_dict(wrong, strict=False)  # a shape mismatch raises, strict or not


# ---------------------------------------------------------------- containers


def test_sequential_from_an_ordered_dict_names_its_layers_as_pytorchs():
    torch = _torch()
    ours = nn.Sequential(OrderedDict([("conv", nn.Conv2d(1, 2, 3)), ("bn", nn.BatchNorm2d(2)),
                                      ("act", nn.ReLU())]))
    theirs = torch.nn.Sequential(OrderedDict([("conv", torch.nn.Conv2d(1, 2, 3)),
                                              ("bn", torch.nn.BatchNorm2d(2)),
                                              ("act", torch.nn.ReLU())]))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours.conv is ours[0] and isinstance(ours[1:], nn.Sequential)
    assert [n for n, _ in ours[1:].named_children()] == ["bn", "act"]
    assert repr(ours).startswith("Sequential(\n  (conv): Conv2d(")
    x = fnn.randn((2, 1, 5, 5))
    _, grads = ours.reverse(x, fnn.ones((2, 2, 3, 3)))
    assert set(grads) == {"conv.weight", "conv.bias", "bn.weight", "bn.bias"}


# ---------------------------------------------------------------- dtypes and devices


def test_to_keeps_the_parameter_objects_as_pytorch_and_an_older_optimizer_steps_them():
    torch = _torch()
    theirs = torch.nn.Linear(3, 2)
    before = list(theirs.parameters())
    theirs.double()
    assert all(a is b for a, b in zip(before, theirs.parameters()))  # what torch does
    model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    params = list(model.parameters())
    opt = optim.Adam(model.parameters(), lr=0.1)
    y = model(fnn.randn((4, 3)))
    (y * y).sum().backward()  # not y.sum(): BatchNorm would make its gradient 0
    assert model.double() is model
    assert all(a is b for a, b in zip(params, model.parameters(), strict=True))
    assert all(p.dtype is fnn.float64 and p.grad.dtype is fnn.float64 for p in params)
    assert model[1].running_mean.dtype is fnn.float64
    assert model[1].num_batches_tracked.dtype is fnn.int64  # integer buffers keep theirs
    old = params[0].numpy().copy()
    opt.step()
    assert params[0].dtype is fnn.float64 and (params[0].numpy() != old).all()
    assert model.float() is model and params[0].dtype is fnn.float32
    assert model.half() is model and params[0].dtype is fnn.float16
    assert model.to("cpu", fnn.float64) is model and params[0].dtype is fnn.float64
    assert model.to(fnn.zeros((1,), dtype=fnn.float32)) is model
    assert params[0].dtype is fnn.float32 and params[0].device == "cpu"


def test_to_another_device_keeps_the_parameter_objects():
    if not any(r.name == "opencl" and r.available for r in fnn.backends()):
        pytest.skip("needs a second device (opencl)")
    model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    params = list(model.parameters())
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = fnn.randn((4, 3))
    y = model(x)
    (y * y).sum().backward()
    opt.step()
    assert model.to("opencl") is model
    assert all(a is b for a, b in zip(params, model.parameters(), strict=True))
    assert params[0].device == "opencl" and model[1].running_var.device == "opencl"
    old = params[0].numpy().copy()
    y = model(x.to("opencl"))
    (y * y).sum().backward()
    opt.step()  # the optimizer made before still steps them, on their new device
    assert params[0].device == "opencl" and (params[0].numpy() != old).all()


# ---------------------------------------------------------------- tree-wide settings


def test_train_eval_requires_grad_and_zero_grad_return_and_recurse_as_pytorchs():
    calls = []

    class Custom(nn.Module):
        def forward(self, x):
            return x

        def train(self, mode=True):  # PyTorch calls each child's own train()
            calls.append(mode)
            return super().train(mode)

    model = nn.Sequential(nn.Linear(2, 2), Custom(), nn.Dropout(0.5))
    assert model.eval() is model and calls == [False]
    assert not any(m.training for m in model.modules())
    assert model.train() is model and calls == [False, True]
    assert model.requires_grad_(False) is model
    assert not any(p.requires_grad for p in model.parameters())
    model.requires_grad_()
    model(fnn.randn((3, 2))).sum().backward()
    grads = [p.grad for p in model.parameters()]
    model.zero_grad(set_to_none=False)
    assert [p.grad for p in model.parameters()] == grads  # the same tensors, zeroed
    assert all((p.grad.numpy() == 0).all() for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())
