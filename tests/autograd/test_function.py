"""fnn.autograd.Function: custom gradients, checked against finite differences and PyTorch."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn.autograd.function import once_differentiable
from tests.helpers import finite_difference

try:
    import torch
except ImportError:  # only the comparisons with PyTorch are skipped
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
X = np.array([-1.7, -0.4, 0.2, 0.9, 2.3])


def _leaf(values=X):
    return fnn.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


class StraightClamp(fnn.autograd.Function):
    """Clamp forward, identity backward (a straight-through estimator)."""

    @staticmethod
    def forward(ctx, x, lo, hi):
        return x.clamp(lo, hi)

    @staticmethod
    def backward(ctx, grad):
        return grad, None, None


class ScaledSoftplus(fnn.autograd.Function):
    """scale * log(1 + exp(w * x)), its gradient by hand; scale is a plain number."""

    @staticmethod
    def forward(ctx, x, w, scale):
        ctx.save_for_backward(x, w)
        ctx.scale = scale
        return ((w * x).exp() + 1.0).log() * scale

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        sig = (w * x).sigmoid() * ctx.scale * grad
        return (sig * w if ctx.needs_input_grad[0] else None,
                sig * x if ctx.needs_input_grad[1] else None, None)


class ExpAndDouble(fnn.autograd.Function):
    """Two outputs, exp(x) and 2x; records what backward was given."""

    seen = []

    @staticmethod
    def forward(ctx, x, materialize=True):
        ctx.set_materialize_grads(materialize)
        ctx.save_for_backward(x)
        return x.exp(), x * 2.0

    @staticmethod
    def backward(ctx, grad_exp, grad_double):
        ExpAndDouble.seen.append((grad_exp, grad_double))
        (x,) = ctx.saved_tensors
        total = None
        if grad_exp is not None:
            total = grad_exp * x.exp()
        if grad_double is not None:
            total = grad_double * 2.0 if total is None else total + grad_double * 2.0
        return total, None


class Cube(fnn.autograd.Function):
    """x**3 with backward 3 x**2 grad, built of fastnn ops (so it can be differentiated)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x * x * 3.0


def test_straight_through_clamp_passes_the_gradient_unchanged():
    x = _leaf()
    y = StraightClamp.apply(x, -1.0, 1.0)
    np.testing.assert_array_equal(y.numpy(), np.clip(X, -1, 1))
    assert y.grad_fn.name() == "StraightClampBackward"
    (y * y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * np.clip(X, -1, 1))


def test_hand_written_gradient_matches_finite_differences():
    w_values = np.array([0.5, -1.5, 2.0, 0.25, -0.75])

    def reference(x, w):
        return 1.5 * np.log1p(np.exp(w * x))

    x, w = _leaf(), _leaf(w_values)
    out = ScaledSoftplus.apply(x, w, 1.5)
    np.testing.assert_allclose(out.numpy(), reference(X, w_values), rtol=1e-12)
    fd_x, weights = finite_difference(reference, [X, w_values], 0)
    fd_w, _ = finite_difference(reference, [X, w_values], 1)
    (out * fnn.tensor(weights)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), fd_x, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(w.grad.numpy(), fd_w, rtol=1e-6, atol=1e-8)


def test_needs_input_grad_follows_requires_grad_and_grad_mode():
    seen = []

    class Probe(fnn.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, scale):
            seen.append(ctx.needs_input_grad)
            return x * w * scale

        @staticmethod
        def backward(ctx, grad):
            return grad, None, None

    x, w = _leaf(), fnn.tensor(X)
    Probe.apply(x, w, 2.0).sum().backward()
    with fnn.no_grad():
        out = Probe.apply(x, w, 2.0)
    assert seen == [(True, False, False), (False, False, False)]
    assert not out.requires_grad
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(5))


def test_unused_output_gets_zeros_or_none():
    for materialize in (True, False):
        ExpAndDouble.seen.clear()
        x = _leaf()
        a, b = ExpAndDouble.apply(x, materialize)
        assert a.requires_grad and b.requires_grad
        (b * b).sum().backward()
        ((grad_exp, grad_double),) = ExpAndDouble.seen
        if materialize:
            np.testing.assert_array_equal(grad_exp.numpy(), np.zeros(5))
        else:
            assert grad_exp is None
        np.testing.assert_array_equal(grad_double.numpy(), 4 * X)
        np.testing.assert_allclose(x.grad.numpy(), 8 * X, rtol=1e-15)


def test_both_outputs_reach_one_backward_call():
    ExpAndDouble.seen.clear()
    x = _leaf()
    a, b = ExpAndDouble.apply(x)
    (a.sum() + (b * b).sum()).backward()
    assert len(ExpAndDouble.seen) == 1
    np.testing.assert_allclose(x.grad.numpy(), np.exp(X) + 8 * X, rtol=1e-14)
    x2 = _leaf()
    a, b = ExpAndDouble.apply(x2)
    (grad,) = fnn.autograd.grad(a.sum() + b.sum(), x2)
    np.testing.assert_allclose(grad.numpy(), np.exp(X) + 2, rtol=1e-14)


def test_setup_context_style():
    class Square(fnn.autograd.Function):
        @staticmethod
        def forward(x, scale):
            return x * x * scale

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, scale = inputs
            ctx.save_for_backward(x)
            ctx.scale = scale

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * x * (2.0 * ctx.scale), None

    x = _leaf()
    Square.apply(x, 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * X, rtol=1e-15)


@needs_torch
def test_a_function_with_a_jvp_rule_works_under_fnn_func_as_pytorchs():
    """PyTorch's torch.func-ready Function saves for its jvp with ctx.save_for_forward;
    fastnn had no such method (an AttributeError at apply). fastnn's forward mode
    differentiates backward, so the values agree without calling jvp."""

    def define(lib):
        class MyExp(lib.autograd.Function):
            generate_vmap_rule = True

            @staticmethod
            def forward(x):
                return lib.exp(x)

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(output)
                ctx.save_for_forward(output)

            @staticmethod
            def backward(ctx, grad):
                (y,) = ctx.saved_tensors
                return grad * y

            @staticmethod
            def jvp(ctx, tangent):
                (y,) = ctx.saved_tensors
                return tangent * y

        return MyExp

    def run(lib):
        fn, x = define(lib).apply, lib.tensor(X)
        return [lib.func.grad(lambda z: fn(z).sum())(x), lib.func.vmap(fn)(x[:, None]),
                lib.func.jvp(fn, (x,), (lib.ones_like(x),))[1], lib.func.jacfwd(fn)(x)]

    for ours, theirs in zip(run(fnn), run(torch)):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-14)
    with pytest.raises(TypeError, match="save_for_forward: argument 0"):
        fnn.autograd.function.FunctionCtx().save_for_forward(1.0)


def _scaled_linear(lib, seen):
    """PyTorch's 'Extending' LinearFunction, setup_context style, with defaults."""
    class ScaledLinear(lib.autograd.Function):
        @staticmethod
        def forward(input, weight, bias=None, scale=2.0):
            out = input.mm(weight.t()) * scale
            return out if bias is None else out + bias

        @staticmethod
        def setup_context(ctx, inputs, output):
            input, weight, bias, scale = inputs  # the defaults are there too
            ctx.save_for_backward(input, weight)
            ctx.scale = scale
            seen.append((len(inputs), ctx.needs_input_grad))

        @staticmethod
        def backward(ctx, grad):
            input, weight = ctx.saved_tensors
            seen.append(ctx.needs_input_grad)
            grad_bias = grad.sum(0) if ctx.needs_input_grad[2] else None
            return (grad.mm(weight) * ctx.scale, grad.t().mm(input) * ctx.scale,
                    grad_bias, None)

    return ScaledLinear


@needs_torch
@pytest.mark.parametrize("call", [
    lambda fn, x, w, b: fn.apply(x, w),
    lambda fn, x, w, b: fn.apply(x, w, b),
    lambda fn, x, w, b: fn.apply(x, w, bias=b, scale=3.0),
    lambda fn, x, w, b: fn.apply(x, weight=w, scale=0.5),
])
def test_setup_context_gets_every_argument_defaults_included(call):
    rng = np.random.default_rng(0)
    arrays = rng.standard_normal((3, 4)), rng.standard_normal((2, 4)), rng.standard_normal(2)
    results = []
    for lib in (torch, fnn):
        seen = []
        x, w, b = (lib.tensor(a, requires_grad=True) for a in arrays)
        call(_scaled_linear(lib, seen), x, w, b).sum().backward()
        results.append((seen, [t.grad.numpy() if t.grad is not None else None
                               for t in (x, w, b)]))
    (t_seen, t_grads), (seen, grads) = results
    assert seen == t_seen
    for mine, want in zip(grads, t_grads):
        assert (mine is None) == (want is None)
        if want is not None:
            np.testing.assert_allclose(mine, want, rtol=1e-14)

def test_non_differentiable_outputs_do_not_require_grad():
    class SortValues(fnn.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            order = fnn.tensor(np.argsort(x.numpy()))
            flag = x * 0.0
            ctx.mark_non_differentiable(order, flag)
            return x * 2.0, order, flag

        @staticmethod
        def backward(ctx, grad, grad_order, grad_flag):
            return grad * 2.0

    x = _leaf()
    y, order, flag = SortValues.apply(x)
    assert y.requires_grad and not order.requires_grad and not flag.requires_grad
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(5, 2.0))


def test_returning_an_input_as_is_gives_a_new_tensor():
    class Identity(fnn.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 3.0

    x = _leaf()
    y = Identity.apply(x)
    assert y is not x and y.grad_fn is not None and x.is_leaf
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(5, 3.0))


def test_double_backward_through_a_custom_function():
    x = _leaf()
    (grad,) = fnn.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(grad.numpy(), 3 * X * X, rtol=1e-15)
    (second,) = fnn.autograd.grad((grad * grad).sum(), x)
    np.testing.assert_allclose(second.numpy(), 36 * X ** 3, rtol=1e-14)
    y = _leaf()
    Cube.apply(y).sum().backward(create_graph=True)
    y.grad.sum().backward(inputs=[y])  # d/dy sum(3 y^2) added to the first .grad
    np.testing.assert_allclose(y.grad.numpy(), 3 * X * X + 6 * X, rtol=1e-14)


def test_a_saved_output_keeps_its_history_for_double_backward():
    class Exp(fnn.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = x.exp()
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, grad):
            (out,) = ctx.saved_tensors
            return grad * out

    x = _leaf()
    (grad,) = fnn.autograd.grad(Exp.apply(x).sum(), x, create_graph=True)
    (second,) = fnn.autograd.grad(grad.sum(), x)
    np.testing.assert_allclose(second.numpy(), np.exp(X), rtol=1e-15)
    x = _leaf()
    Exp.apply(x).sum().backward()  # the output is gone by then: its data is used
    np.testing.assert_allclose(x.grad.numpy(), np.exp(X), rtol=1e-15)


class Sinh(fnn.autograd.Function):
    """The double-backward tutorial's sinh: exp(x) and exp(-x) returned as outputs so that
    saving them keeps their history, and dropped by the caller."""

    @staticmethod
    def forward(ctx, x):
        expx, expnegx = x.exp(), (-x).exp()
        ctx.save_for_backward(expx, expnegx)
        return (expx - expnegx) / 2, expx, expnegx

    @staticmethod
    def backward(ctx, grad_out, grad_exp, grad_negexp):
        expx, expnegx = ctx.saved_tensors
        return grad_out * (expx + expnegx) / 2 + grad_exp * expx - grad_negexp * expnegx


def test_saved_outputs_the_caller_dropped_keep_their_history():
    x = _leaf()
    (grad,) = fnn.autograd.grad(Sinh.apply(x)[0].sum(), x, create_graph=True)
    np.testing.assert_allclose(grad.numpy(), np.cosh(X), rtol=1e-14)
    (second,) = fnn.autograd.grad(grad.sum(), x)
    np.testing.assert_allclose(second.numpy(), np.sinh(X), rtol=1e-14)
    assert fnn.autograd.gradgradcheck(lambda t: Sinh.apply(t)[0], (_leaf(),))
    x = _leaf()
    Sinh.apply(x)[0].sum().backward()  # no graph kept: the data alone serves
    np.testing.assert_allclose(x.grad.numpy(), np.cosh(X), rtol=1e-14)


@needs_torch
def test_saved_dropped_outputs_against_torch():
    class TorchSinh(torch.autograd.Function):
        forward, backward = Sinh.forward, Sinh.backward

    t = torch.tensor(X, requires_grad=True)
    (grad,) = torch.autograd.grad(TorchSinh.apply(t)[0].sum(), t, create_graph=True)
    (theirs,) = torch.autograd.grad(grad.sum(), t)
    x = _leaf()
    (grad,) = fnn.autograd.grad(Sinh.apply(x)[0].sum(), x, create_graph=True)
    (ours,) = fnn.autograd.grad(grad.sum(), x)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-14)


def test_retain_graph_and_freed_graph():
    x = _leaf()
    y = Cube.apply(x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * X * X, rtol=1e-15)
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


def test_hooks_see_and_replace_the_gradients():
    x = _leaf()
    seen = []
    x.register_hook(lambda g: seen.append(g.numpy().copy()))
    a, b = ExpAndDouble.apply(x)
    b.register_hook(lambda g: g * 10.0)
    (a.sum() + b.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(X) + 20.0, rtol=1e-14)
    np.testing.assert_allclose(seen[0], np.exp(X) + 20.0, rtol=1e-14)


def test_once_differentiable_runs_once_and_refuses_a_second_time():
    class Square(fnn.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * x * 2.0

    x = _leaf()
    (grad,) = fnn.autograd.grad(Square.apply(x).sum(), x)
    np.testing.assert_array_equal(grad.numpy(), 2 * X)
    (grad,) = fnn.autograd.grad((Square.apply(x) * x).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable"):
        grad.sum().backward()


# ---------------------------------------------------------------- against PyTorch


@needs_torch
def test_against_torch_autograd_function():
    class TorchClamp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, lo, hi):
            return x.clamp(lo, hi)

        @staticmethod
        def backward(ctx, grad):
            return grad, None, None

    class TorchCube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * x * x * 3.0

    tx = torch.tensor(X, requires_grad=True)
    t_clamp = TorchClamp.apply(tx, -1.0, 1.0)
    (t_grad,) = torch.autograd.grad((TorchCube.apply(t_clamp) * t_clamp).sum(), tx,
                                    create_graph=True)
    (t_second,) = torch.autograd.grad((t_grad * t_grad).sum(), tx)
    x = _leaf()
    clamp = StraightClamp.apply(x, -1.0, 1.0)
    (grad,) = fnn.autograd.grad((Cube.apply(clamp) * clamp).sum(), x, create_graph=True)
    (second,) = fnn.autograd.grad((grad * grad).sum(), x)
    np.testing.assert_allclose(grad.numpy(), t_grad.detach().numpy(), rtol=1e-14)
    np.testing.assert_allclose(second.numpy(), t_second.numpy(), rtol=1e-14)


def test_grad_fn_prints_as_pytorchs():
    out = Sinh.apply(_leaf())[0]
    text = repr(out.grad_fn)
    assert text.startswith("<fastnn.autograd.function.SinhBackward object at 0x")
    assert out.grad_fn.name() == "SinhBackward"
    if torch is not None:
        class TorchSinh(torch.autograd.Function):
            forward, backward = Sinh.forward, Sinh.backward

        theirs = repr(TorchSinh.apply(torch.tensor(X, requires_grad=True))[0].grad_fn)
        assert theirs.split(" object")[0].replace("TorchSinh", "Sinh") == \
            text.split(" object")[0].replace("fastnn.", "torch.")
