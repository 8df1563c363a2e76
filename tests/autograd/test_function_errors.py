"""fnn.autograd.Function: clear errors for a wrong backward, NaNs and in-place writes; and
the tape node on every device (cpu, opencl where present)."""

import numpy as np
import pytest

import fastnn as fnn
from tests.autograd.test_function import Cube, ExpAndDouble, X, _leaf


def _bad(returns):
    class Broken(fnn.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            return x * scale

        @staticmethod
        def backward(ctx, grad):
            return returns(grad)

    return Broken


@pytest.mark.parametrize("returns, message", [
    (lambda g: g, "returned 1 gradients, expected 2"),
    (lambda g: (g, None, g), "returned 3 gradients, expected 2"),
    (lambda g: (g[:2], None),
     r"returned a gradient of shape \(2,\) for argument 0, which has shape \(5,\)"),
    (lambda g: (g, g), "returned a gradient for argument 1, which is not a Tensor"),
])
def test_wrong_gradients_raise_naming_the_function(returns, message):
    x = _leaf()
    y = _bad(returns).apply(x, 2.0)
    with pytest.raises(RuntimeError, match="Broken.backward " + message):
        y.sum().backward()


def test_a_broadcastable_gradient_is_summed_to_the_input_shape():
    x = fnn.tensor(np.ones((1, 3)), dtype="float64", requires_grad=True)
    y = _bad(lambda g: (g * 2.0, None)).apply(x.expand(4, 3) * 1.0, 1.0)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((1, 3), 8.0))
    x = fnn.tensor(np.ones((4, 3)), dtype="float64", requires_grad=True)
    z = _bad(lambda g: (g.sum(0, keepdim=True), None)).apply(x, 1.0)  # (1, 3): wrong way
    with pytest.raises(RuntimeError, match=r"shape \(1, 3\) for argument 0"):
        z.sum().backward()


def test_anomaly_mode_names_the_function():
    class NanGrad(fnn.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, grad):  # made without an op, which anomaly mode would name
            return fnn.full(grad.shape, float("nan"), dtype=fnn.float64)

    x = _leaf()
    with fnn.autograd.detect_anomaly():
        y = NanGrad.apply(x).sum()
        with pytest.raises(FloatingPointError, match="NanGrad"):
            y.backward()


def test_in_place_write_into_a_saved_tensor_and_mark_dirty_are_refused():
    x = _leaf()
    h = x * 1.0
    y = Cube.apply(h)
    h.add_(1.0)
    with pytest.raises(RuntimeError, match="Cube: saved tensor 0"):
        y.sum().backward()

    class Dirty(fnn.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x * 1.0

    with pytest.raises(RuntimeError, match="marked as dirty .* not returned"):
        Dirty.apply(_leaf() * 1.0)
    with pytest.raises(RuntimeError, match="apply"):
        Cube()


def test_mark_dirty_gives_the_written_input_the_call_s_history_as_pytorch():
    torch = pytest.importorskip("torch")

    def run(lib):
        class ReluInPlace(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.clamp_(min=0)
                ctx.mark_dirty(x)
                ctx.save_for_backward(x)
                return x

            @staticmethod
            def backward(ctx, grad):
                (y,) = ctx.saved_tensors
                return grad * (y > 0).float()

        x = lib.tensor([-1.0, 2.0, 3.0], requires_grad=True)
        a = x * 2.0
        b = ReluInPlace.apply(a)
        assert b is a and a.requires_grad
        (b * b).sum().backward()
        with pytest.raises(RuntimeError, match="leaf .* in-place operation"):
            ReluInPlace.apply(lib.ones(2, requires_grad=True))
        return x.grad.numpy()

    np.testing.assert_allclose(run(fnn), run(torch))


def _devices():
    out = ["cpu"]
    if any(r.name == "opencl" and r.available for r in fnn.backends()):
        out.append("opencl")
    return out


@pytest.mark.parametrize("device", _devices())
def test_two_outputs_and_double_backward_on_each_device(device):
    x = fnn.tensor(X, dtype=fnn.float32, device=device, requires_grad=True)
    a, b = ExpAndDouble.apply(x)
    (a.sum() + (b * b).sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(X) + 8 * X, rtol=1e-5)
    (grad,) = fnn.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    (second,) = fnn.autograd.grad(grad.sum(), x)
    assert second.device == x.device
    np.testing.assert_allclose(second.numpy(), 6 * X, rtol=1e-5)
