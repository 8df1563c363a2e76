"""fastnn.jit (torch.jit's calls in model code run eagerly), fastnn.version and
torch.nn.attention's sdpa_kernel: results against the eager computation and PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import jit, nn
from fastnn.nn.attention import SDPBackend, sdpa_kernel

X = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + fnn.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def test_script_and_trace_compute_as_eager():
    scripted = jit.script(gelu_tanh)
    x = fnn.tensor(X)
    expected = 0.5 * X * (1 + np.tanh(0.7978845608 * (X + 0.044715 * X ** 3)))
    np.testing.assert_allclose(scripted(x).numpy(), expected, rtol=1e-5, atol=1e-6)
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    traced = jit.trace(model, (x,))
    np.testing.assert_array_equal(traced(x).numpy(), model(x).numpy())
    # a trace keeps training: gradients reach the model's weights
    traced(x).sum().backward()
    assert model[0].weight.grad is not None
    assert jit.freeze(model) is model and jit.optimize_for_inference(model) is model


def test_scripted_helper_matches_pytorch():
    torch = pytest.importorskip("torch")

    def torch_gelu(x):
        return 0.5 * x * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

    theirs = torch.jit.script(torch_gelu)(torch.tensor(X)).numpy()
    np.testing.assert_allclose(jit.script(gelu_tanh)(fnn.tensor(X)).numpy(), theirs,
                               rtol=1e-5, atol=1e-6)
    assert [b.value for b in SDPBackend] == [
        getattr(torch.nn.attention.SDPBackend, b.name).value for b in SDPBackend]


def test_decorators_guards_and_futures():
    class Block(jit.ScriptModule):
        limit: jit.Final[int] = 3

        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.scale = jit.Attribute(2.0, float)

        @jit.script_method
        def forward(self, x):
            if not jit.is_scripting():
                x = self.helper(x)
            return self.lin(x) * self.scale

        @jit.ignore(drop=True)
        def helper(self, x):
            return x + 1

        @jit.export
        def twice(self, x):
            return 2 * x

    block = Block()
    x = fnn.tensor(X)
    expected = (block.lin(x + 1) * 2.0).numpy()
    np.testing.assert_allclose(block(x).numpy(), expected, rtol=1e-6)
    assert isinstance(block, nn.Module) and jit.Final[int] is int
    assert not jit.is_scripting() and not jit.is_tracing()
    assert jit.annotate(list, [1]) == [1] and jit.unused(gelu_tanh) is gelu_tanh
    future = jit.fork(lambda a, b: a * b, x, b=3.0)
    np.testing.assert_allclose(jit.wait(future).numpy(), X * 3.0, rtol=1e-6)


@pytest.mark.parametrize("call", [lambda: jit.save(nn.Linear(2, 2), "m.pt"),
                                  lambda: jit.load("m.pt")])
def test_serialized_programs_raise(call):
    with pytest.raises(NotImplementedError, match="state_dict"):
        call()


def test_version_module():
    assert fnn.version.__version__ == fnn.__version__
    assert fnn.version.cuda is None and fnn.version.hip is None


def test_sdpa_kernel_changes_nothing():
    rng = np.random.default_rng(1)
    q, k, v = (fnn.tensor(rng.normal(size=(1, 2, 5, 4)).astype(np.float32)) for _ in range(3))
    plain = F.scaled_dot_product_attention(q, k, v, is_causal=True).numpy()
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]):
        chosen = F.scaled_dot_product_attention(q, k, v, is_causal=True).numpy()
    np.testing.assert_array_equal(chosen, plain)
    with pytest.raises(TypeError, match="SDPBackend"):
        with sdpa_kernel("flash"):
            pass
