"""PyTorch's method spellings (new_*, dim, type, element_size, nelement, the dtype
shortcuts) and fnn.is_tensor / fnn.numel, against PyTorch."""

import numpy as np
import pytest

import fastnn as fnn

torch = pytest.importorskip("torch")

NEW = [
    ("new_zeros varargs", lambda x: x.new_zeros(2, 3)),
    ("new_zeros tuple", lambda x: x.new_zeros((2, 3))),
    ("new_ones", lambda x: x.new_ones(4)),
    ("new_empty", lambda x: x.new_empty(1, 2)),
    ("new_full", lambda x: x.new_full((2, 2), 3.5)),
    ("new_tensor", lambda x: x.new_tensor([[1, 2]])),
    ("new_zeros dtype", lambda x: x.new_zeros(2, dtype=fnn.int64 if isinstance(x, fnn.Tensor)
                                              else torch.int64)),
]


@pytest.mark.parametrize("name, make", NEW, ids=[n[0] for n in NEW])
@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_new_tensors_as_torch(name, make, dtype, device):
    ours = make(fnn.zeros(3, dtype=getattr(fnn, dtype), device=device))
    theirs = make(torch.zeros(3, dtype=getattr(torch, dtype)))
    assert ours.shape == tuple(theirs.shape) and ours.device == device
    assert ours.dtype.name == str(theirs.dtype).split(".")[1]
    if name != "new_empty":
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_new_zeros_requires_grad():
    assert fnn.zeros(2).new_zeros(2, requires_grad=True).requires_grad


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int64", "bool"])
def test_sizes_and_type_names_as_torch(dtype):
    ours = fnn.zeros(2, 3, dtype=getattr(fnn, dtype))
    theirs = torch.zeros(2, 3, dtype=getattr(torch, dtype))
    assert ours.dim() == theirs.dim() == 2
    assert ours.nelement() == theirs.nelement() and fnn.numel(ours) == torch.numel(theirs)
    assert ours.element_size() == theirs.element_size()
    assert ours.type() == theirs.type().replace("torch.", "fastnn.")
    assert ours.is_floating_point() == theirs.is_floating_point()
    assert fnn.is_tensor(ours) and not fnn.is_tensor(np.zeros(2))


def test_type_converts():
    x = fnn.tensor([1.5, -2.0])
    assert x.type(fnn.float64).dtype is fnn.float64
    assert x.type("torch.LongTensor").tolist() == torch.tensor([1.5, -2.0]).type(
        "torch.LongTensor").tolist()
    assert x.type("fastnn.IntTensor").dtype is fnn.int32
    assert x.type("torch.ShortTensor").dtype is fnn.int16
    assert x.type(fnn.LongTensor).tolist() == torch.tensor([1.5, -2.0]).type(
        torch.LongTensor).tolist()  # a legacy class, as older scripts pass it
    assert x.type(fnn.FloatTensor).dtype is fnn.float32
    with pytest.raises(TypeError, match="type: unknown tensor type 'torch.ComplexFloatTensor'"):
        x.type("torch.ComplexFloatTensor")


def test_dtype_shortcuts():
    x = fnn.tensor([1.5, 0.0])
    for method, dtype in [("long", fnn.int64), ("int", fnn.int32), ("bool", fnn.bool),
                          ("half", fnn.float16), ("double", fnn.float64),
                          ("float", fnn.float32)]:
        assert getattr(x, method)().dtype is dtype


def test_dtype_is_the_class_of_the_dtypes_as_torch_dtype():
    """isinstance(d, torch.dtype) (a check in user code and type hints) holds for every
    dtype; fnn.dtype was missing (an AttributeError)."""
    assert all(isinstance(d, fnn.dtype) for d in (fnn.float32, fnn.int64, fnn.bool, fnn.half))
    assert not isinstance("float32", fnn.dtype)
    assert isinstance(torch.float32, torch.dtype)


@pytest.mark.parametrize("dtype,value", [
    ("int64", 2.5), ("int64", True), ("bool", 5), ("bool", 0.0), ("float32", True),
    ("float16", float("-inf")), ("uint8", 7), ("float64", -1),
])
@pytest.mark.parametrize("in_place", [False, True])
def test_masked_fill_keeps_x_dtype_as_torch(dtype, value, in_place):
    """x.masked_fill(mask, v) has x's dtype, v converted to it, as PyTorch (an int64 x filled
    with 2.5 became float32, a bool x filled with 5 int64, and a bool value was refused)."""
    results = []
    for lib in (fnn, torch):
        x = lib.tensor([1, 0, 3]).to(getattr(lib, dtype))
        mask = lib.tensor([True, False, True])
        out = x.masked_fill_(mask, value) if in_place else x.masked_fill(mask, value)
        results.append((str(out.dtype).rpartition(".")[2], out.numpy().tolist()))
    assert results[0] == results[1]


def test_masked_fill_value_tensor_is_0_d_as_torch():
    x, mask = fnn.zeros(3), fnn.tensor([True, False, True])
    np.testing.assert_array_equal(x.masked_fill(mask, fnn.tensor(2)).numpy(), [2, 0, 2])
    with pytest.raises(RuntimeError, match="0-d value tensor"):
        x.masked_fill(mask, fnn.tensor([2.0]))
    with pytest.raises(RuntimeError):
        torch.zeros(3).masked_fill(torch.tensor([True, False, True]), torch.tensor([2.0]))


def test_in_asks_whether_any_element_equals_as_torchs():
    """``2.0 in x`` compared x's rows with Python's fallback and raised for a 2-d x."""
    for lib in (fnn, torch):
        x = lib.arange(6.0).reshape(2, 3)
        assert 2.0 in x and 7 not in x and lib.tensor([3.0, 4.0, 5.0]) in x
        assert lib.tensor([9.0, 4.0, 9.0]) in x and True not in lib.tensor([False])
        with pytest.raises(RuntimeError, match="only supports Tensor or scalar"):
            _ = "a" in x
