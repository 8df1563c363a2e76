"""arange, linspace, eye, empty, *_like and randint: values and dtypes as PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn


@pytest.mark.parametrize("args", [(5,), (1, 4), (0, 1, 0.25), (1.0, 3), (10, 0, -3),
                                  (0, 0.3, 0.1), (-2.5, 2.5, 0.5), (3, 3)])
def test_arange_as_torch(args):
    torch = pytest.importorskip("torch")
    ours, theirs = fnn.arange(*args), torch.arange(*args)
    assert ours.dtype.name == str(theirs.dtype).split(".")[1]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("kwargs", [{"end": 4}, {"start": 1, "end": 4},
                                    {"start": 0.5, "end": 3, "step": 0.5}, {"end": 2.5}])
def test_arange_by_keyword_as_torch(kwargs):
    torch = pytest.importorskip("torch")
    ours, theirs = fnn.arange(**kwargs), torch.arange(**kwargs)
    assert ours.dtype.name == str(theirs.dtype).split(".")[1]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(TypeError, match="arange: missing the end"):
        fnn.arange()


def test_arange_dtype_device_and_errors(device):
    x = fnn.arange(4, dtype=fnn.float64, device=device)
    assert x.dtype is fnn.float64 and x.device.type == device
    np.testing.assert_array_equal(x.numpy(), np.arange(4.0))
    with pytest.raises(ValueError, match="step must be nonzero"):
        fnn.arange(0, 3, 0)
    with pytest.raises(TypeError, match="end must be a real number"):
        fnn.arange(0, "3")


def test_linspace_eye_empty_like(device):
    np.testing.assert_allclose(fnn.linspace(0, 1, 5, device=device).numpy(),
                               np.linspace(0, 1, 5, dtype=np.float32))
    np.testing.assert_array_equal(fnn.eye(2, 3, device=device).numpy(), np.eye(2, 3))
    assert fnn.empty((2, 3), device=device).shape == (2, 3)
    x = fnn.ones((2, 3), dtype=fnn.float64, device=device)
    for like in (fnn.zeros_like(x), fnn.ones_like(x), fnn.full_like(x, 7), fnn.empty_like(x),
                 fnn.randn_like(x, seed=1), fnn.rand_like(x, seed=1)):
        assert like.shape == x.shape and like.dtype is fnn.float64 and like.device == x.device
    assert fnn.full_like(x, 7).numpy().tolist() == [[7.0] * 3] * 2
    assert fnn.zeros_like(x, dtype=fnn.int64).dtype is fnn.int64


def test_randint():
    x = fnn.randint(3, 9, (1000,), seed=0)
    assert x.dtype is fnn.int64 and x.numpy().min() >= 3 and x.numpy().max() <= 8
    assert fnn.randint(5, (2, 3)).shape == (2, 3)
    np.testing.assert_array_equal(fnn.randint(0, 5, (4,), seed=2).numpy(),
                                  fnn.randint(0, 5, (4,), seed=2).numpy())
    with pytest.raises(ValueError, match="high .* must be greater than low"):
        fnn.randint(3, 3, (2,))


# ---------------------------------------------------------------- sizes as varargs

SIZED = [
    ("zeros", lambda m, *s: m.zeros(*s)), ("ones", lambda m, *s: m.ones(*s)),
    ("empty", lambda m, *s: m.empty(*s)), ("randn", lambda m, *s: m.randn(*s)),
    ("rand", lambda m, *s: m.rand(*s)),
]


@pytest.mark.parametrize("name, make", SIZED, ids=[s[0] for s in SIZED])
@pytest.mark.parametrize("sizes", [(2, 3), ((2, 3),), ([1, 3, 4, 4],), (1, 3, 4, 4), (5,),
                                   ((),), (0, 2)])
def test_sizes_as_varargs_or_one_tuple_as_torch(name, make, sizes):
    torch = pytest.importorskip("torch")
    ours, theirs = make(fnn, *sizes), make(torch, *sizes)
    assert ours.shape == tuple(theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).split(".")[1]


SIZE_KEYWORD = {  # PyTorch's size= keyword (the GAT example's torch.empty(size=(n, m)))
    "empty(size=)": lambda m: m.empty(size=(2, 3)),
    "zeros(size=, dtype=)": lambda m: m.zeros(size=[2, 3], dtype=m.float64),
    "ones(size=Size)": lambda m: m.ones(size=m.ones(4, 1).shape),
    "rand(size=)": lambda m: m.rand(size=(2,)),
    "randn(size=)": lambda m: m.randn(size=(1, 3, 2)),
    "new_zeros(size=)": lambda m: m.ones(2).new_zeros(size=(3, 1)),
    "new_ones(size=)": lambda m: m.ones(2, dtype=m.int64).new_ones(size=(3,)),
    "new_empty(size=)": lambda m: m.ones(2).new_empty(size=(2, 2)),
}


@pytest.mark.parametrize("case", sorted(SIZE_KEYWORD))
def test_the_size_keyword_as_torch(case):
    torch = pytest.importorskip("torch")
    ours, theirs = SIZE_KEYWORD[case](fnn), SIZE_KEYWORD[case](torch)
    assert ours.shape == tuple(theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).split(".")[1]
    if "rand" not in case and "empty" not in case:
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_sizes_given_twice_are_refused():
    with pytest.raises(TypeError, match=r"zeros: .*size="):  # both ways at once
        fnn.zeros(2, size=(2,))


def test_full_keeps_the_tuple_and_takes_the_dtype_from_the_value():
    torch = pytest.importorskip("torch")
    for value in (7, 1.5, True):
        ours, theirs = fnn.full((2, 3), value), torch.full((2, 3), value)
        assert ours.dtype.name == str(theirs.dtype).split(".")[1]
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    for value in (7, 1.5, True, np.float64(2.5)):  # a 0-d tensor: the number it holds
        ours = fnn.full((2,), fnn.tensor(value))
        theirs = torch.full((2,), torch.tensor(value))
        assert ours.dtype.name == str(theirs.dtype).split(".")[1]
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())

    # PyTorch's keywords: Hugging Face makes its causal masks with
    # torch.full((L, L), fill_value=torch.finfo(dtype).min, dtype=dtype)
    low = float(np.finfo(np.float32).min)
    for lib in (fnn, torch):
        made = [lib.full((2, 3), fill_value=low, dtype=lib.float32),
                lib.full(size=(2,), fill_value=7)]
        if lib is fnn:
            ours = made
        else:
            theirs = made
    for mine, want in zip(ours, theirs):
        assert mine.dtype.name == str(want.dtype).split(".")[1]
        np.testing.assert_array_equal(mine.numpy(), want.numpy())
    with pytest.raises(TypeError, match="give value or fill_value"):
        fnn.full((2,), 1.0, fill_value=2.0)
    with pytest.raises(TypeError, match="missing the argument value"):
        fnn.full((2,))


@pytest.mark.parametrize("make", [
    lambda lib: [np.float64(1.5), 2.0], lambda lib: [np.int32(1), np.int32(2)],
    lambda lib: [np.float16(1), 2], lambda lib: [np.float16(1), 2.5],
    lambda lib: [np.uint8(3), np.int8(1)], lambda lib: [True, np.int16(2)],
    lambda lib: [(1, 2), (np.float64(2), 3)], lambda lib: [np.array([1, 2], np.int32), [3, 4]],
    lambda lib: [lib.tensor(1.5, dtype=lib.float64), 2.0], lambda lib: [1, 2.0],
    lambda lib: [lib.tensor(1, dtype=lib.int32), 2], lambda lib: [[], []], lambda lib: [True],
])
def test_tensor_of_a_list_keeps_its_numpy_and_tensor_leaves_dtypes_as_torch(make):
    """torch.tensor([np.float64(1.5), 2.0]) is float64: a NumPy scalar or array, or a tensor,
    inside a list keeps its dtype, promoted with the Python leaves (it was float32)."""
    torch = pytest.importorskip("torch")
    ours, theirs = fnn.tensor(make(fnn)), torch.tensor(make(torch))
    assert ours.dtype.name == str(theirs.dtype).split(".")[1]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_scalar_tensor_as_torch():
    """fnn.scalar_tensor was missing: a 0-d tensor of the default float dtype, 3 -> 3.0."""
    torch = pytest.importorskip("torch")
    for value, kwargs in [(3, {}), (True, {}), (2.5, {"dtype": "float64"}),
                          (7, {"dtype": "int64"})]:
        ours = fnn.scalar_tensor(value, **{k: getattr(fnn, v) for k, v in kwargs.items()})
        theirs = torch.scalar_tensor(value, **{k: getattr(torch, v) for k, v in kwargs.items()})
        assert ours.shape == () and ours.dtype.name == str(theirs.dtype).split(".")[1]
        assert ours.item() == theirs.item()


def test_bad_sizes_name_the_op():
    with pytest.raises(ValueError, match=r"randn: negative dimension in shape \(2, -1\)"):
        fnn.randn(2, -1)
    with pytest.raises(TypeError, match=r"ones: sizes must be ints, got float 2.5 in \(2.5, 3"):
        fnn.ones(2.5, 3)
    with pytest.raises(TypeError, match="zeros: sizes must be ints or one sequence"):
        fnn.zeros(object())


# ---------------------------------------------------------------- the default float dtype

@pytest.fixture
def float64_default():
    fnn.set_default_dtype(fnn.float64)
    yield
    fnn.set_default_dtype(fnn.float32)


def test_default_dtype_reaches_every_float_factory(float64_default):
    torch = pytest.importorskip("torch")
    assert fnn.get_default_dtype() is fnn.float64
    made = [fnn.tensor(1.5), fnn.tensor([1, 2.5]), fnn.zeros(2), fnn.ones(2), fnn.empty(2),
            fnn.randn(2), fnn.rand(2), fnn.full((2,), 0.5), fnn.arange(0.5, 2),
            fnn.linspace(0, 1, 3), fnn.eye(2)]
    assert all(t.dtype is fnn.float64 for t in made), [t.dtype for t in made]
    # integers and bools, and NumPy arrays, keep their own dtypes, as in PyTorch
    assert fnn.tensor([1, 2]).dtype is fnn.int64 and fnn.arange(3).dtype is fnn.int64
    assert fnn.tensor(np.zeros(2, np.float32)).dtype is fnn.float32
    torch_default = torch.get_default_dtype()
    assert str(torch_default) == "torch.float32"


PROMOTIONS = {
    "int * float": lambda L: L.tensor([1, 2]) * 1.5,
    "int / int": lambda L: L.tensor([1, 2]) / L.tensor([2, 2]),
    "int / 2": lambda L: L.tensor([1, 2]) / 2,
    "bool + float": lambda L: L.tensor([True, False]) + 0.5,
    "sqrt of int": lambda L: L.tensor([1, 2]).sqrt(),
    "exp of int": lambda L: L.tensor([1, 2]).exp(),
    "sigmoid of int": lambda L: L.tensor([1, 2]).sigmoid(),
    "logsumexp of int": lambda L: L.tensor([1, 2]).logsumexp(0),
    "where int, float": lambda L: L.where(L.tensor([True, False]), L.tensor([1, 2]), 0.5),
    "clamp int, float": lambda L: L.tensor([1, 2]).clamp(min=1.5),
    "float32 * float": lambda L: L.tensor([1.0], dtype=L.float32) * 1.5,
}


@pytest.mark.parametrize("name", PROMOTIONS)
def test_an_integer_promoted_to_float_takes_the_default_dtype(name):
    """Under set_default_dtype(float64), int_tensor * 1.5, int / int, exp of an int ... are
    float64 in PyTorch; fastnn made them float32 (and repr printed the default float's
    dtype= and not float32's)."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in (fnn, torch):
        lib.set_default_dtype(lib.float64)
        try:
            out = PROMOTIONS[name](lib)
            results.append((str(out.dtype).rpartition(".")[2], repr(out).replace("torch.", "")))
        finally:
            lib.set_default_dtype(lib.float32)
    assert results[0] == results[1]


def test_default_dtype_must_be_floating():
    assert fnn.get_default_dtype() is fnn.float32
    with pytest.raises(TypeError, match="set_default_dtype: only floating dtypes"):
        fnn.set_default_dtype(fnn.int64)
    assert fnn.get_default_dtype() is fnn.float32


# ---------------------------------------------------------------- sharing NumPy memory

def test_from_numpy_shares_memory_both_ways():
    a = np.arange(6.0).reshape(2, 3)
    t = fnn.from_numpy(a)
    assert t.dtype is fnn.float64 and t.device == "cpu" and t.shape == (2, 3)
    a[0, 0] = 100.0
    assert t[0, 0].item() == 100.0
    t.numpy()[1, 2] = -1.0
    assert a[1, 2] == -1.0
    flags = fnn.from_numpy(np.array([True, False]))
    assert flags.dtype is fnn.bool
    with pytest.raises(TypeError, match="from_numpy: expected a NumPy array, got list"):
        fnn.from_numpy([1.0])
    with pytest.raises(TypeError, match="unsupported dtype 'uint16'"):
        fnn.from_numpy(np.zeros(2, np.uint16))


def test_as_tensor_shares_when_it_can_and_copies_when_it_must(device):
    a = np.arange(4, dtype=np.float32)
    shared = fnn.as_tensor(a, device="cpu")
    a[0] = 9.0
    assert shared[0].item() == 9.0
    converted = fnn.as_tensor(a, dtype=fnn.float64, device="cpu")  # another dtype: a copy
    a[1] = 5.0
    assert converted.dtype is fnn.float64 and converted[1].item() == 1.0
    elsewhere = fnn.as_tensor(a, device=device)
    np.testing.assert_array_equal(elsewhere.numpy(), a)
    same = fnn.tensor([1.0, 2.0], device=device)
    assert fnn.as_tensor(same) is same
    assert fnn.as_tensor(same, dtype=fnn.float64).dtype is fnn.float64
    assert fnn.as_tensor([1, 2]).dtype is fnn.int64
    frozen = np.ones(2)
    frozen.flags.writeable = False
    assert fnn.as_tensor(frozen).numpy().flags.writeable  # a read-only array is copied


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "randn", "rand"])
def test_sizes_by_pytorchs_keyword_size(name):
    """torch.randn(size=(B, T)) raised TypeError (the sizes were varargs only)."""
    torch = pytest.importorskip("torch")
    for size in ((2, 3), [4], ()):
        ours = getattr(fnn, name)(size=size, dtype=fnn.float64)
        theirs = getattr(torch, name)(size=size, dtype=torch.float64)
        assert ours.shape == tuple(theirs.shape) and ours.dtype == fnn.float64
    with pytest.raises(TypeError, match=f"{name}: give the sizes as arguments or as size="):
        getattr(fnn, name)(2, size=(2,))


@pytest.mark.parametrize("name, args", [("zeros_like", ()), ("ones_like", ()),
                                        ("empty_like", ()), ("full_like", (2.5,)),
                                        ("rand_like", ()), ("randn_like", ())])
def test_like_functions_take_memory_format_as_torch(name, args):
    """torch.zeros_like(x, memory_format=torch.preserve_format) (what code copied from
    PyTorch's own optimizers writes) raised a TypeError in fastnn."""
    torch = pytest.importorskip("torch")
    ours = getattr(fnn, name)(fnn.ones(2, 3), *args, memory_format=fnn.preserve_format)
    theirs = getattr(torch, name)(torch.ones(2, 3), *args, memory_format=torch.preserve_format)
    assert ours.shape == tuple(theirs.shape) and ours.dtype == fnn.float32
    if name not in ("empty_like", "rand_like", "randn_like"):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(TypeError, match=f"{name}: memory_format must be one of"):
        getattr(fnn, name)(fnn.ones(2), *args, memory_format="C")
