"""fnn.utils.checkpoint: the gradients of a checkpointed block equal the plain ones, bit for bit."""

import warnings

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn
from fastnn.utils.checkpoint import checkpoint, checkpoint_sequential

try:
    import torch
except ImportError:  # only the comparison with PyTorch is skipped
    torch = None

X = np.random.default_rng(7).standard_normal((6, 4))


def _mlp(dropout=0.3):
    fnn.manual_seed(11)
    return nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Dropout(dropout), nn.Linear(16, 8),
                         nn.ReLU(), nn.Dropout(dropout), nn.Linear(8, 3)).to(fnn.float64)


def _run(model, forward, x_requires_grad=True):
    """Output, loss gradients (.grad of x and of every parameter), and the next draw."""
    for p in model.parameters():
        p.grad = None
    x = fnn.tensor(X, dtype=fnn.float64, requires_grad=x_requires_grad)
    fnn.manual_seed(5)
    out = forward(model, x)
    weights = fnn.randn(*out.shape, dtype=fnn.float64)
    (out * weights).sum().backward()
    grads = [p.grad.numpy() for p in model.parameters()]
    if x_requires_grad:
        grads.append(x.grad.numpy())
    return out.numpy(), grads, fnn.rand(3).numpy()


def _assert_same(a, b):
    out_a, grads_a, next_a = a
    out_b, grads_b, next_b = b
    np.testing.assert_array_equal(out_a, out_b)
    assert len(grads_a) == len(grads_b)
    for ga, gb in zip(grads_a, grads_b):
        np.testing.assert_array_equal(ga, gb)
    np.testing.assert_array_equal(next_a, next_b)  # the generator goes on as without it


@pytest.mark.parametrize("use_reentrant", [True, False, None])
def test_checkpoint_equals_the_plain_call_with_dropout(use_reentrant):
    model = _mlp()
    plain = _run(model, lambda m, x: m(x))
    checked = _run(model, lambda m, x: checkpoint(m, x, use_reentrant=use_reentrant))
    _assert_same(plain, checked)
    model.eval()
    without_dropout = model(fnn.tensor(X, dtype=fnn.float64)).numpy()
    assert not np.allclose(plain[0], without_dropout)  # dropout did act


def test_part_of_the_model_checkpointed():
    model = _mlp()

    def forward(m, x):
        h = m[0](x)
        h = checkpoint(lambda t: m[3](m[2](m[1](t))), h, use_reentrant=False)
        return m[6](m[5](m[4](h)))

    _assert_same(_run(model, lambda m, x: m(x)), _run(model, forward))


@pytest.mark.parametrize("segments", [1, 2, 3, 7])
def test_checkpoint_sequential_equals_the_plain_call(segments):
    model = _mlp()
    plain = _run(model, lambda m, x: m(x))
    checked = _run(model, lambda m, x: checkpoint_sequential(m, segments, x,
                                                             use_reentrant=False))
    _assert_same(plain, checked)


def test_without_preserving_the_generator_dropout_draws_other_masks():
    model = _mlp(dropout=0.5)
    plain = _run(model, lambda m, x: m(x))
    checked = _run(model, lambda m, x: checkpoint(m, x, use_reentrant=False,
                                                  preserve_rng_state=False))
    np.testing.assert_array_equal(plain[0], checked[0])
    assert any(not np.array_equal(a, b) for a, b in zip(plain[1], checked[1]))


def test_parameters_get_gradients_when_the_input_needs_none():
    model = _mlp()
    plain = _run(model, lambda m, x: m(x), x_requires_grad=False)
    checked = _run(model, lambda m, x: checkpoint(m, x, use_reentrant=False),
                   x_requires_grad=False)
    _assert_same(plain, checked)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = checkpoint(model, fnn.tensor(X, dtype=fnn.float64), use_reentrant=True)
    assert not out.requires_grad  # as PyTorch's reentrant variant, with its warning
    assert any("requires_grad" in str(w.message) for w in caught)


def test_use_reentrant_not_given_is_pytorchs_default_the_reentrant_variant():
    # PyTorch warns and runs the reentrant variant: a block whose input needs no grad
    # leaves its parameters without gradients, and keyword arguments are refused
    def run(lib, ck, **kwargs):
        lib.manual_seed(0)
        layer = lib.nn.Linear(4, 3).double()
        x = lib.tensor(X)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = ck(layer, x, **kwargs)
        said = any("use_reentrant" in str(w.message) for w in caught)
        return said, out.requires_grad

    from fastnn.utils.checkpoint import checkpoint as ours

    assert run(fnn, ours) == (True, False)
    assert run(fnn, ours, use_reentrant=False) == (False, True)
    with pytest.warns(UserWarning, match="use_reentrant"), pytest.raises(ValueError):
        ours(lambda t, scale: t * scale, fnn.tensor(X, requires_grad=True), scale=2.0)
    with pytest.warns(UserWarning, match="use_reentrant"):
        checkpoint_sequential(_mlp(), 2, fnn.tensor(X, dtype=fnn.float64))
    if torch is not None:
        from torch.utils.checkpoint import checkpoint as theirs

        assert run(torch, theirs) == (True, False)
        assert run(torch, theirs, use_reentrant=False)[1] is True


def test_pytorchs_non_reentrant_options_are_taken():
    # context_fn (one context around the forward, one around the recomputation),
    # determinism_check, debug and early_stop are PyTorch's keyword options, not
    # arguments of the block
    import contextlib

    seen, phase = [], [None]

    @contextlib.contextmanager
    def entered(name):
        phase[0] = name
        try:
            yield
        finally:
            phase[0] = None

    def block(t):
        seen.append(phase[0])
        return t.tanh()

    x = fnn.tensor(X, requires_grad=True)
    out = checkpoint(block, x, use_reentrant=False, determinism_check="none", debug=False,
                     early_stop=True, context_fn=lambda: (entered("forward"), entered("again")))
    out.sum().backward()
    assert seen == ["forward", "again"]
    np.testing.assert_allclose(x.grad.numpy(), 1 - np.tanh(X) ** 2, rtol=1e-6)
    with pytest.raises(ValueError, match="use_reentrant=False"):
        checkpoint(block, x, use_reentrant=True, debug=True)
    with pytest.raises(ValueError, match="determinism_check"):
        checkpoint(block, x, use_reentrant=False, determinism_check="strict")


def test_autograd_grad_with_respect_to_parameters():
    model = _mlp()
    params = list(model.parameters())
    x = fnn.tensor(X, dtype=fnn.float64)
    found = []
    for forward in (model, lambda t: checkpoint(model, t, use_reentrant=False)):
        fnn.manual_seed(5)
        grads = fnn.autograd.grad(forward(x).sum(), params)
        found.append([g.numpy() for g in grads])
        assert all(p.grad is None for p in params)
    for a, b in zip(*found):
        np.testing.assert_array_equal(a, b)


def test_double_backward_through_a_checkpoint():
    model = _mlp(dropout=0.0)
    found = []
    for wrap in (False, True):
        for p in model.parameters():
            p.grad = None
        x = fnn.tensor(X, dtype=fnn.float64, requires_grad=True)
        out = checkpoint(model, x, use_reentrant=False) if wrap else model(x)
        (grad_x,) = fnn.autograd.grad(out.sum(), x, create_graph=True)
        (grad_x * grad_x).sum().backward()  # a gradient penalty
        found.append([None if p.grad is None else p.grad.numpy() for p in model.parameters()])
    assert [a is None for a in found[0]] == [b is None for b in found[1]]
    assert sum(a is not None for a in found[0]) == 4  # the weights and the tanh bias
    for a, b in zip(*found):
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("blocks", ["one", "nested", "sequential"])
def test_a_gradient_penalty_reaches_the_layers_before_the_checkpoint(blocks):
    # the penalty's gradient flows back through grad_x into the history of the block's
    # input (the layer before it, and x itself): a second-order pass through the
    # recomputed graph must go on into that history, as without the checkpoint
    model = _mlp(dropout=0.0)
    fnn.manual_seed(3)
    pre = nn.Linear(4, 4).to(fnn.float64)
    found = []
    for wrap in (None, blocks):
        for p in [*model.parameters(), *pre.parameters()]:
            p.grad = None
        x = fnn.tensor(X, dtype=fnn.float64, requires_grad=True)
        h = pre(x)
        if wrap is None:
            out = model(h)
        elif wrap == "one":
            out = checkpoint(model, h, use_reentrant=False)
        elif wrap == "nested":
            inner = checkpoint(lambda t: model[1](model[0](t)), h, use_reentrant=False)
            out = checkpoint(model[2:], inner, use_reentrant=False)
        else:
            out = checkpoint_sequential(model, 3, h, use_reentrant=False)
        (grad_x,) = fnn.autograd.grad(out.sum(), x, create_graph=True)
        (((grad_x * grad_x).sum(1) - 1) ** 2).mean().backward()
        found.append([x.grad.numpy(), pre.weight.grad.numpy(),
                      *(p.grad.numpy() for p in model.parameters() if p.grad is not None)])
    assert len(found[0]) == len(found[1])
    for a, b in zip(*found):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_a_hook_on_a_parameter_sees_its_whole_gradient():
    w = fnn.tensor(np.arange(12.0).reshape(4, 3) / 10, dtype=fnn.float64, requires_grad=True)
    x = fnn.tensor(X, dtype=fnn.float64, requires_grad=True)
    seen = []
    w.register_hook(lambda g: seen.append(g.numpy().copy()))
    out = checkpoint(lambda t: (t @ w).tanh(), x, use_reentrant=False) + x @ w
    out.sum().backward()
    t = np.tanh(X @ w.numpy())
    expected = X.T @ (1 - t * t) + X.T @ np.ones((6, 3))
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], expected, rtol=1e-13)
    np.testing.assert_allclose(w.grad.numpy(), expected, rtol=1e-13)


def test_tuple_outputs_keyword_arguments_and_no_grad():
    w = fnn.tensor(np.ones((4, 2)), dtype=fnn.float64, requires_grad=True)
    x = fnn.tensor(X, dtype=fnn.float64, requires_grad=True)

    def block(t, scale=1.0):
        h = t @ w
        return h * scale, h.exp()

    a, b = checkpoint(block, x, use_reentrant=False, scale=3.0)
    (a.sum() + b.sum()).backward()
    h = X @ np.ones((4, 2))
    np.testing.assert_allclose(x.grad.numpy(), (3 + np.exp(h)) @ np.ones((2, 4)), rtol=1e-13)
    np.testing.assert_allclose(w.grad.numpy(), X.T @ (3 + np.exp(h)), rtol=1e-13)
    with pytest.raises(ValueError, match="keyword arguments"):
        checkpoint(block, x, use_reentrant=True, scale=3.0)
    with fnn.no_grad():
        a, _ = checkpoint(block, x, use_reentrant=False)
    assert not a.requires_grad


@pytest.mark.parametrize("pack", [
    lambda h, e: {"hidden": h, "extra": (e, None, 3)},
    lambda h, e: [h, [e]],
    lambda h, e: (h, (e, "cache")),
], ids=["dict", "list", "nested_tuple"])
def test_nested_outputs_all_get_gradients(pack):
    # PyTorch's non-reentrant checkpoint takes any nesting of outputs (a layer returning
    # a dict or (hidden, (k, v))); a tensor left out of the node had no gradient, silently
    w = fnn.tensor(np.ones((4, 2)), dtype=fnn.float64, requires_grad=True)
    found = []
    for wrap in (False, True):
        w.grad = None
        x = fnn.tensor(X, dtype=fnn.float64, requires_grad=True)

        def block(t):
            h = t @ w
            return pack(h.tanh(), h.exp())

        out = checkpoint(block, x, use_reentrant=False) if wrap else block(x)
        flat = [out["hidden"], out["extra"][0]] if isinstance(out, dict) else [
            out[0], out[1][0]]
        assert type(out) is type(pack(1, 2))
        (flat[0].sum() + (flat[1] ** 2).sum()).backward()
        found.append([x.grad.numpy(), w.grad.numpy()])
    for a, b in zip(*found):
        np.testing.assert_array_equal(a, b)


def test_a_tensor_keyword_argument_with_history_is_an_input():
    def block(t, shift):
        return (t * shift).sin()

    x = fnn.tensor(X, dtype=fnn.float64, requires_grad=True)
    found = []
    for wrap in (False, True):
        x.grad = None
        shift = x * 2.0  # not a leaf: its gradient must reach x once, through the node
        out = checkpoint(block, x, use_reentrant=False, shift=shift) if wrap else block(x, shift)
        (out.sum() + shift.sum()).backward()
        found.append(x.grad.numpy())
    np.testing.assert_array_equal(found[0], found[1])
    np.testing.assert_allclose(found[0], 4 * X * np.cos(2 * X * X) + 2, rtol=1e-13)


@pytest.mark.parametrize("as_keyword", [False, True])
def test_tensors_with_history_inside_tuple_and_dict_arguments_are_inputs(as_keyword):
    # a block given (k, v) or {"scale": s} built outside it (a cache, a mask) where those
    # tensors also feed the loss elsewhere: PyTorch's non-reentrant variant takes them; the
    # recomputation reached into their history and freed it before the outer pass needed it
    w = fnn.tensor(np.ones((4, 4)) * 0.3, dtype=fnn.float64, requires_grad=True)

    def block(t, kv, extra=None):
        k, v = kv
        return ((t @ w) * k + v) * extra["scale"]

    found = []
    for wrap in (False, True):
        w.grad = None
        x = fnn.tensor(X, dtype=fnn.float64, requires_grad=True)
        kv, extra = (x.tanh(), x * 3.0), {"scale": x.sum() * 0.1}
        if as_keyword:
            args, kwargs = (x,), {"kv": kv, "extra": extra}
        else:
            args, kwargs = (x, kv, extra), {}
        out = checkpoint(block, *args, use_reentrant=False, **kwargs) if wrap else block(
            *args, **kwargs)
        ((out ** 2).sum() + kv[0].sum() + extra["scale"] * 2).backward()
        found.append([x.grad.numpy(), w.grad.numpy()])
    for a, b in zip(*found):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_a_function_that_computes_something_else_the_second_time_is_caught():
    calls = []

    def changing(t):
        calls.append(1)
        return t[: len(calls) + 1] * 2.0

    x = fnn.tensor(X, dtype=fnn.float64, requires_grad=True)
    out = checkpoint(changing, x, use_reentrant=False)
    with pytest.raises(RuntimeError, match="recomputed forward"):
        out.sum().backward()
    with pytest.raises(ValueError, match="segments"):
        checkpoint_sequential(_mlp(), 0, x)


@pytest.mark.parametrize("device", ["cpu", "opencl"])
def test_checkpoint_on_each_device(device):
    if device != "cpu" and not any(r.name == device and r.available for r in fnn.backends()):
        pytest.skip(f"no {device} device")
    model = _mlp().to(fnn.float32).to(device)
    found = []
    for wrap in (False, True):
        for p in model.parameters():
            p.grad = None
        fnn.manual_seed(5)
        x = fnn.tensor(X, dtype=fnn.float32, device=device)
        out = checkpoint(model, x, use_reentrant=False) if wrap else model(x)
        (out * out).sum().backward()
        found.append([out.numpy()] + [p.grad.numpy() for p in model.parameters()])
    for a, b in zip(*found):
        np.testing.assert_array_equal(a, b)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_against_torch_checkpoint():
    from torch.utils.checkpoint import checkpoint as torch_checkpoint

    model = _mlp(dropout=0.0)
    ref = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 8),
                              torch.nn.ReLU(), torch.nn.Linear(8, 3)).double()
    linears = [m for m in model if isinstance(m, nn.Linear)]
    with torch.no_grad():
        for mine, theirs in zip(linears, [m for m in ref if isinstance(m, torch.nn.Linear)]):
            theirs.weight.copy_(torch.from_numpy(mine.weight.numpy()))
            theirs.bias.copy_(torch.from_numpy(mine.bias.numpy()))
    tx = torch.tensor(X, requires_grad=True)
    (torch_checkpoint(ref, tx, use_reentrant=False) ** 2).sum().backward()
    x = fnn.tensor(X, dtype=fnn.float64, requires_grad=True)
    (checkpoint(model, x, use_reentrant=False) ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-14)
    for mine, theirs in zip(linears, [m for m in ref if isinstance(m, torch.nn.Linear)]):
        np.testing.assert_allclose(mine.weight.grad.numpy(), theirs.weight.grad.numpy(),
                                   rtol=1e-12, atol=1e-14)


def test_a_frozen_block_gives_an_output_that_requires_no_grad_as_pytorchs():
    """A LoRA model merged for eval has no parameter that requires grad; its checkpointed
    blocks' output required grad (PyTorch's does not: nothing in it does)."""
    model = _mlp(0.0).requires_grad_(False)
    x = fnn.tensor(X)
    for use_reentrant in (False, None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = checkpoint(model, x, use_reentrant=use_reentrant)
            method = checkpoint(model.forward, x, use_reentrant=use_reentrant)
        assert not out.requires_grad and out.grad_fn is None and not method.requires_grad
        np.testing.assert_array_equal(out.numpy(), model(x).numpy())
    model[0].weight.requires_grad_(True)  # one parameter that does: recorded
    assert checkpoint(model, x, use_reentrant=False).requires_grad
    lora = fnn.zeros(4, 4, dtype=fnn.float64, requires_grad=True)  # not used when merged
    for merged in (True, False):
        block = (lambda t: model(t)) if merged else (lambda t: model(t @ lora))
        model[0].weight.requires_grad_(False)
        out = checkpoint(block, x, use_reentrant=False)
        assert out.requires_grad is not merged
    out.sum().backward()  # the recorded node still differentiates
    assert lora.grad is not None and lora.grad.shape == (4, 4)
    if torch is not None:
        frozen = torch.nn.Linear(4, 3).double().requires_grad_(False)
        assert not torch.utils.checkpoint.checkpoint(frozen, torch.tensor(X),
                                                     use_reentrant=False).requires_grad
