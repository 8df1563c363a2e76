"""PyTorch's legacy constructors (``torch.Tensor(data)``, ``torch.FloatTensor(...)``), the
version counter ``x._version``, and cumsum's accumulation, as PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn

try:
    import torch
except ImportError:  # pragma: no cover - the assertions below hold without it
    torch = None


def _same(ours, theirs):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).rpartition(".")[2]


@pytest.mark.parametrize("name, args, dtype, shape, values", [
    ("Tensor", ([1, 2],), "float32", (2,), [1.0, 2.0]),
    ("Tensor", (np.array([1.5, 2.5]),), "float32", (2,), [1.5, 2.5]),
    ("Tensor", (2, 3), "float32", (2, 3), None),
    ("Tensor", (), "float32", (0,), []),
    ("FloatTensor", ([[1, 2]],), "float32", (1, 2), [[1.0, 2.0]]),
    ("DoubleTensor", ([1],), "float64", (1,), [1.0]),
    ("LongTensor", ([1, 2],), "int64", (2,), [1, 2]),
    ("IntTensor", (3,), "int32", (3,), None),
    ("BoolTensor", ([True, False],), "bool", (2,), [True, False]),
    ("HalfTensor", ([0.5],), "float16", (1,), [0.5]),
])
def test_legacy_constructors(name, args, dtype, shape, values):
    t = getattr(fnn, name)(*args)
    assert isinstance(t, fnn.Tensor) and t.dtype.name == dtype and t.shape == shape
    if values is not None:
        assert t.tolist() == values
    if torch is not None:
        _same(t, getattr(torch, name)(*args))


def test_size_argument_default_dtype_and_aliasing():
    assert fnn.Tensor(fnn.Size([2, 4])).shape == (2, 4)
    with _dtype64():
        assert fnn.Tensor([1.0]).dtype is fnn.float64  # torch.Tensor follows the default
    x = fnn.tensor([1.0, 2.0])
    y = fnn.Tensor(x)  # the same storage, as PyTorch's
    y[0] = 5.0
    assert x.tolist() == [5.0, 2.0]
    with pytest.raises(TypeError, match="expected a float32 tensor"):
        fnn.Tensor(fnn.tensor([1, 2]))
    with pytest.raises(ValueError, match="non-negative"):
        fnn.Tensor(-1)
    with pytest.raises(TypeError, match="unexpected keyword"):
        fnn.Tensor([1.0], dtype=fnn.float64)


class _dtype64:
    def __enter__(self):
        self.old = fnn.get_default_dtype()
        fnn.set_default_dtype(fnn.float64)

    def __exit__(self, *exc):
        fnn.set_default_dtype(self.old)


def test_isinstance_asks_the_dtype():
    x = fnn.tensor([1.0])
    assert isinstance(x, fnn.FloatTensor) and not isinstance(x, fnn.LongTensor)
    assert isinstance(fnn.tensor([1]), fnn.LongTensor)
    assert not isinstance([1.0], fnn.FloatTensor)


@pytest.mark.parametrize("kind", ["DoubleTensor", "torch.DoubleTensor"])
def test_set_default_tensor_type_sets_the_default_dtype_as_pytorchs(kind):
    """torch.set_default_tensor_type(torch.DoubleTensor), the older spelling of
    set_default_dtype that PINN scripts start with, was missing (an AttributeError)."""
    with _dtype64():
        fnn.set_default_dtype(fnn.float32)
        fnn.set_default_tensor_type(getattr(fnn, kind) if "." not in kind else kind)
        made = [fnn.tensor([1.0]), fnn.zeros(2), fnn.Tensor([1]), fnn.nn.Linear(2, 2).weight]
        assert [t.dtype for t in made] == [fnn.float64] * 4
        fnn.set_default_tensor_type("torch.FloatTensor")
        assert fnn.get_default_dtype() is fnn.float32
        if torch is not None:
            import warnings

            old = torch.get_default_dtype()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.set_default_tensor_type(getattr(torch, kind) if "." not in kind else kind)
            try:
                assert torch.tensor([1.0]).dtype == torch.float64
            finally:
                torch.set_default_dtype(old)
    for bad, match in ((fnn.LongTensor, "floating-point"), ("torch.IntTensor", "floating-point"),
                       (fnn.float64, "legacy tensor type")):
        with pytest.raises(TypeError, match=match):
            fnn.set_default_tensor_type(bad)


def test_version_counts_in_place_writes():
    x = fnn.zeros(3)
    v = x[1:]
    before = x._version
    v.add_(1.0)
    assert x._version > before and v._version == x._version
    after = x._version
    y = x + 1  # an out-of-place op writes nothing
    assert x._version == after and y._version == 0


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_cumsum_of_a_long_run_accumulates_in_double(dtype):
    """A float32 running sum rounded at each step drifts (1e6 * 0.1 ends near 100958);
    PyTorch's CPU cumsum sums in double."""
    n = 1_000_000 if dtype == "float32" else 4096
    x = fnn.full((n,), 0.1, dtype=dtype)
    got = x.cumsum(0).numpy()
    want = np.cumsum(np.full(n, np.float64(np.array(0.1, dtype))))
    rtol = 1e-6 if dtype == "float32" else 1e-3
    np.testing.assert_allclose(got[-1], want[-1], rtol=rtol)
    np.testing.assert_allclose(got[::997], want[::997].astype(dtype), rtol=rtol)


def test_variable_is_a_detached_leaf_sharing_storage():
    from fastnn.autograd import Variable

    x = fnn.tensor([1.0, 2.0])
    v = Variable(x, requires_grad=True)
    assert v is not x and v.requires_grad and not x.requires_grad and v.is_leaf
    (v * 3).sum().backward()
    assert v.grad.tolist() == [3.0, 3.0]
    with fnn.no_grad():
        v[0] = 10.0  # the same storage, as PyTorch's
    assert x.tolist() == [10.0, 2.0]
    y = fnn.ones(2, requires_grad=True) * 2
    assert Variable(y).grad_fn is None and not Variable(y).requires_grad
    assert isinstance(x, Variable) and not isinstance([1.0], Variable)
    with pytest.raises(TypeError, match="must be a Tensor"):
        Variable([1.0])
    if torch is not None:
        from torch.autograd import Variable as TorchVariable

        ref = TorchVariable(torch.ones(2), requires_grad=True)
        assert ref.is_leaf and ref.requires_grad


def test_set_default_tensor_type_as_torchs():
    """Older scripts call torch.set_default_tensor_type(torch.DoubleTensor) or with the
    name 'torch.DoubleTensor'; fastnn had no such function."""
    torch = pytest.importorskip("torch")
    try:
        for lib in (fnn, torch):
            lib.set_default_tensor_type(lib.DoubleTensor)
            assert str(lib.ones(2).dtype).endswith("float64")
            assert str(lib.nn.Linear(2, 2).weight.dtype).endswith("float64")
            lib.set_default_tensor_type("torch.FloatTensor")
            assert str(lib.ones(2).dtype).endswith("float32")
            with pytest.raises(TypeError):
                lib.set_default_tensor_type(lib.LongTensor)
    finally:
        fnn.set_default_dtype(fnn.float32)
        torch.set_default_dtype(torch.float32)
