"""Integer and bool inputs: the result's dtype says what its data holds."""

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F


def _softmax(a, axis=-1):
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_softmax_family_on_integers_needs_a_dtype_as_in_pytorch(dtype):
    a = np.array([[1, 2, 4], [0, -3, 5]], dtype=dtype)
    ref = _softmax(a.astype(np.float64))
    for fn in (F.softmax, F.log_softmax):
        with pytest.raises(TypeError, match=f"{fn.__name__}: defined on floating tensors.*dtype="):
            fn(fnn.tensor(a), -1)
    cases = {
        "softmax": (F.softmax(fnn.tensor(a), -1, dtype=fnn.float32), ref),
        "log_softmax": (F.log_softmax(fnn.tensor(a), axis=-1, dtype="float32"), np.log(ref)),
        "rms_div": (F.rms_div(fnn.tensor(a)),
                    a / np.sqrt((a.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-6)),
    }
    for name, (out, expected) in cases.items():
        assert out.dtype == fnn.float32, name
        assert out.numpy().dtype == np.float32, name
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-7, err_msg=name)


def test_sum_of_bool_counts_as_int64():
    mask = fnn.tensor(np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])) > 0
    total, per_row = mask.sum(), mask.sum(axis=1)
    assert total.dtype == fnn.int64 and total.item() == 4
    assert per_row.dtype == fnn.int64
    assert per_row.numpy().dtype == np.int64
    np.testing.assert_array_equal(per_row.numpy(), [2, 2])
