"""A Linear's output (nn.Linear, F.linear) may be written in place afterwards, as after
PyTorch's addmm, which keeps nothing of its output: the bias add saves nothing."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn

F64 = fnn.float64


@pytest.mark.parametrize("write", [
    lambda z: nn.ReLU(inplace=True)(z), lambda z: z.relu_(), lambda z: z.mul_(3.0),
    lambda z: z.add_(1.0)], ids=["ReLU(inplace)", "relu_", "mul_", "add_"])
@pytest.mark.parametrize("functional", [False, True], ids=["Linear", "F.linear"])
def test_a_linear_output_may_be_written_in_place_as_in_pytorch(write, functional):
    """PyTorch's addmm keeps nothing of its output, so torchvision's Linear then
    ReLU(inplace=True) trains; the bias add saved its output here and refused it."""
    import fastnn.functional as F

    fnn.manual_seed(0)
    layer, head = nn.Linear(5, 7, dtype=F64), nn.Linear(7, 2, dtype=F64)
    x = np.random.default_rng(2).normal(size=(4, 5))

    def run(written):
        xt = fnn.tensor(x, dtype=F64, requires_grad=True)
        z = F.linear(xt, layer.weight, layer.bias) if functional else layer(xt)
        z = write(z) if written else write(z.clone())
        (head(z) ** 2).sum().backward()
        grads = [p.grad.numpy().copy() for p in (layer.weight, layer.bias)] + [xt.grad.numpy()]
        layer.zero_grad()
        head.zero_grad()
        return grads

    for got, want in zip(run(True), run(False)):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
