"""Bad arguments to the creation functions raise errors that say what was wrong."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from fastnn.api import registry


@pytest.mark.parametrize("make,error,match", [
    (lambda: fnn.tensor(None), TypeError, "tensor: data is None"),
    (lambda: fnn.zeros((2, "a")), TypeError,
     r"zeros: sizes must be ints, got str 'a' in \(2, 'a'\)"),
    (lambda: fnn.ones(2.5), TypeError,
     "ones: sizes must be ints or one sequence of ints, got float 2.5"),
    (lambda: fnn.randn((True, 2)), TypeError,
     r"randn: sizes must be ints, got bool True in \(True, 2\)"),
    (lambda: fnn.zeros((2, -1)), ValueError, "negative dimension"),
])
def test_bad_creation_arguments_raise_clear_errors(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_creation_accepts_numpy_integers_and_lists():
    assert fnn.zeros((np.int32(2), 3)).shape == (2, 3)
    assert fnn.ones([2, 3]).shape == (2, 3)
    assert fnn.full(np.int64(4), 1.5).numpy().tolist() == [1.5] * 4


@pytest.mark.parametrize("make", [
    lambda: fnn.tensor([1.0], dtype=fnn.bfloat16),
    lambda: fnn.zeros(3, dtype=fnn.bfloat16),
    lambda: fnn.rand(3, dtype=fnn.bfloat16),
    lambda: fnn.nn.Linear(3, 2, dtype=fnn.bfloat16),
])
def test_a_dtype_the_device_lacks_is_refused_not_relabelled(make, monkeypatch):
    # the NumPy backend without ml_dtypes has no bfloat16: before, such a tensor held
    # float32 data
    record = registry.get_backend("cpu").record
    monkeypatch.setattr(record, "dtypes", [d for d in record.dtypes if d != "bfloat16"])
    with pytest.raises(TypeError, match=r"cpu does not support bfloat16; it supports float32"):
        make()


@pytest.mark.parametrize("make", [lambda: fnn.randn(3, dtype=fnn.int64),
                                  lambda: fnn.rand(3, dtype=fnn.bool_)])
def test_random_tensors_need_a_floating_dtype(make):
    with pytest.raises(TypeError, match=r"dtype must be floating point"):
        make()


def test_full_values():
    with pytest.raises(TypeError, match=r"full: value must be a real number, got NoneType"):
        fnn.full(3, None)
    assert fnn.full(3, 1.7, dtype=fnn.int64).numpy().tolist() == [1, 1, 1]  # as NumPy
    assert fnn.full(2, 1, dtype=fnn.bool_).numpy().tolist() == [True, True]
    with pytest.raises(ValueError, match=r"nan cannot be stored in int64"):
        fnn.full(3, float("nan"), dtype=fnn.int64)


def test_a_copy_of_a_tensor_keeps_its_dtype_and_device():
    t = fnn.tensor(np.arange(3.0), dtype=fnn.float64)
    copy = fnn.tensor(t)
    assert copy.dtype == fnn.float64 and copy.device == t.device
    assert fnn.tensor(t, dtype=fnn.float32).dtype == fnn.float32
    if any(r.name == "opencl" and r.available for r in fnn.backends()):
        assert fnn.tensor(t.to("opencl")).device == "opencl"


def test_axes_out_of_range_no_longer_wrap():
    a = fnn.ones((2, 3))
    with pytest.raises(ValueError, match=r"transpose: axes \(0, 5\) out of range"):
        a.transpose(0, 5)  # was 5 % 2 == 1: a silent identity
    with pytest.raises(ValueError, match=r"transpose: axes \(1, 2\) out of range"):
        a.transpose((1, 2))  # was a silent swap
    assert a.transpose(-1, -2).shape == (3, 2)


@pytest.mark.parametrize("call,match", [
    (lambda a: a.reshape(2.9, 3), r"reshape: shape must be ints, got float 2.9"),
    (lambda a: a.reshape("6"), r"reshape: shape must be ints, got str '6'"),
    (lambda a: a.transpose((0.5, 1)), r"transpose: axes must be ints, got float 0.5"),
    (lambda a: fnn.functional.one_hot(fnn.tensor([0, 1], dtype=fnn.int64), 2.5),
     r"one_hot: num_classes must be an int, got 2.5"),
])
def test_non_integer_sizes_are_refused_not_truncated(call, match):
    with pytest.raises(TypeError, match=match):
        call(fnn.ones((2, 3)))


def test_messages_for_common_pytorch_habits():
    assert fnn.zeros(2, 3).shape == (2, 3)  # sizes as varargs, as PyTorch
    with pytest.raises(TypeError, match=r"an int where a dtype goes; give the sizes first"):
        fnn.full((2, 3), 1.0, 3)
    with pytest.raises(TypeError, match=r"zeros: sizes must be ints, .*; pass dtype= and "
                                        r"device= as keywords"):
        fnn.zeros((2, 3), fnn.float64)
    with pytest.raises(fnn.BackendError, match=r"'float' is neither a device nor a fastnn dtype"):
        fnn.ones(2).to("float")
