"""Where PyTorch refuses a dtype, fastnn refuses it too, and ``dtype=`` converts first.

A product or convolution of float32 and float64 operands is refused (promoting would run,
and return, the whole product in float64 without a word); the mean, variance and norm of
an integer tensor, an integer softmax and integer log-probabilities are refused; ``dtype=``
on the reductions and on softmax converts the input before the op, as in PyTorch. Each
refusal is checked against PyTorch where it is installed.
"""

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the PyTorch comparisons skip
    torch = TF = None


def _ones(lib, shape, dtype):
    return lib.ones(*shape, dtype=getattr(lib, dtype))


MIXED = {
    "matmul": lambda lib, f, a, b: a @ b,
    "linear": lambda lib, f, a, b: f.linear(a, b),
    "linear bias": lambda lib, f, a, b: f.linear(a, a, b[0]),
    "conv1d": lambda lib, f, a, b: f.conv1d(a.reshape(1, 2, 2), b.reshape(1, 2, 2)),
    "conv1d bias": lambda lib, f, a, b: f.conv1d(a.reshape(1, 2, 2), a.reshape(1, 2, 2),
                                                 b[0, :1]),
    "conv2d": lambda lib, f, a, b: f.conv2d(a.reshape(1, 1, 2, 2), b.reshape(1, 1, 2, 2)),
    "conv_transpose2d": lambda lib, f, a, b: f.conv_transpose2d(a.reshape(1, 1, 2, 2),
                                                                b.reshape(1, 1, 2, 2)),
}


@pytest.mark.parametrize("case", sorted(MIXED))
def test_float32_with_float64_operands_are_refused(case):
    a, b = _ones(fnn, (2, 2), "float32"), _ones(fnn, (2, 2), "float64")
    with pytest.raises(RuntimeError, match="same dtype, got float32 and float64"):
        MIXED[case](fnn, F, a, b)
    # the same operands in one dtype compute
    assert MIXED[case](fnn, F, a, a.float()).dtype == fnn.float32
    if torch is not None:
        with pytest.raises(RuntimeError):
            MIXED[case](torch, TF, _ones(torch, (2, 2), "float32"),
                        _ones(torch, (2, 2), "float64"))


REFUSED = {
    "mean": lambda lib, f, x: x.mean(),
    "mean(dim)": lambda lib, f, x: x.mean(0),
    "var": lambda lib, f, x: x.var(),
    "std": lambda lib, f, x: x.std(0),
    "norm": lambda lib, f, x: x.norm(),
    "softmax": lambda lib, f, x: f.softmax(x, -1),
    "log_softmax": lambda lib, f, x: f.log_softmax(x, 0),
    "nll_loss": lambda lib, f, x: f.nll_loss(x.reshape(3, 1), lib.tensor([0, 0, 0])),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_integer_inputs_pytorch_refuses_are_refused(case, dtype):
    x = fnn.tensor(np.array([1, 2, 4], dtype=dtype))
    with pytest.raises(TypeError, match="float"):
        REFUSED[case](fnn, F, x)
    if torch is not None:
        with pytest.raises((RuntimeError, NotImplementedError)):
            REFUSED[case](torch, TF, torch.tensor(np.array([1, 2, 4], dtype=dtype)))


CONVERTING = {  # name: (fastnn/torch call with dtype=, the float64 reference)
    "sum": (lambda f, x, d: x.sum(dtype=d), lambda a: a.sum()),
    "sum(dim)": (lambda f, x, d: x.sum(1, dtype=d), lambda a: a.sum(1)),
    "mean": (lambda f, x, d: x.mean(dtype=d), lambda a: a.mean()),
    "mean(dim)": (lambda f, x, d: x.mean(0, keepdim=True, dtype=d),
                  lambda a: a.mean(0, keepdims=True)),
    "prod": (lambda f, x, d: x.prod(1, dtype=d), lambda a: a.prod(1)),
    "cumsum": (lambda f, x, d: x.cumsum(1, dtype=d), lambda a: a.cumsum(1)),
    "cumprod": (lambda f, x, d: x.cumprod(0, dtype=d), lambda a: a.cumprod(0)),
    "nansum": (lambda f, x, d: x.nansum(dtype=d), lambda a: np.nansum(a)),
    "nanmean": (lambda f, x, d: x.nanmean(1, dtype=d), lambda a: np.nanmean(a, 1)),
    "softmax": (lambda f, x, d: f.softmax(x, -1, dtype=d),
                lambda a: np.exp(a) / np.exp(a).sum(-1, keepdims=True)),
    "log_softmax": (lambda f, x, d: f.log_softmax(x, dim=0, dtype=d),
                    lambda a: a - np.log(np.exp(a).sum(0, keepdims=True))),
}


@pytest.mark.parametrize("case", sorted(CONVERTING))
@pytest.mark.parametrize("source", ["int32", "float32"])
def test_dtype_converts_the_input_first(case, source):
    call, reference = CONVERTING[case]
    a = np.array([[1, 2, 3], [-2, 0, 5]], dtype=source)
    out = call(F, fnn.tensor(a), fnn.float64)
    assert out.dtype == fnn.float64
    np.testing.assert_allclose(out.numpy(), reference(a.astype(np.float64)), rtol=1e-12)
    if torch is not None and not (case == "nanmean" and source == "int32"):  # torch refuses
        theirs = call(TF, torch.tensor(a), torch.float64)
        assert theirs.dtype == torch.float64
        np.testing.assert_allclose(out.numpy(), theirs.numpy(), rtol=1e-12)


def test_dtype_keeps_the_gradient_of_a_floating_input():
    a = np.array([[0.5, -1.0, 2.0], [3.0, 0.25, -0.5]], dtype=np.float32)
    x = fnn.tensor(a, requires_grad=True)
    w = np.array([[1.0, 2.0, -1.0], [0.5, 0.0, 3.0]])
    (F.log_softmax(x, -1, dtype=fnn.float64) * fnn.tensor(w)).sum().backward()
    assert x.grad.dtype == fnn.float32
    a64 = a.astype(np.float64)
    p = np.exp(a64) / np.exp(a64).sum(-1, keepdims=True)
    expected = w - p * w.sum(-1, keepdims=True)  # d/dx of sum(w * log_softmax(x))
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)
    y = fnn.tensor(a, requires_grad=True)
    y.sum(dtype=fnn.float64).backward()
    np.testing.assert_array_equal(y.grad.numpy(), np.ones_like(a))


def test_dtype_facts_under_pytorchs_names():
    """dtype.is_floating_point, is_signed, is_complex and itemsize, as PyTorch's dtypes
    answer them (code that branches on them ran into an AttributeError)."""
    names = ["float16", "float32", "float64", "int32", "int64", "bool"]
    ours = [(d.is_floating_point, d.is_signed, d.is_complex, d.itemsize)
            for d in (getattr(fnn, n) for n in names)]
    assert ours == [(True, True, False, 2), (True, True, False, 4), (True, True, False, 8),
                    (False, True, False, 4), (False, True, False, 8),
                    (False, False, False, 1)]
    torch = pytest.importorskip("torch")
    assert ours == [(d.is_floating_point, d.is_signed, d.is_complex, d.itemsize)
                    for d in (getattr(torch, n) for n in names)]
