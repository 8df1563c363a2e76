"""Data-set loaders: the arrays match their sources, splits and scaling are as documented."""

import importlib.util
import sys

import numpy as np
import pytest

from fastnn.data import MissingDataError, load
from fastnn.data.trace import trace_path


def test_digits_match_sklearn_and_split_cleanly():
    sklearn_datasets = pytest.importorskip("sklearn.datasets")
    reference = sklearn_datasets.load_digits()
    data = load("digits")
    assert data.num_classes == 10 and data.input_shape == (64,)
    assert len(data.x_train) + len(data.x_test) == 1797 and len(data.x_test) == 449
    x = np.concatenate([data.x_train, data.x_test]).astype(np.float64)
    y = np.concatenate([data.y_train, data.y_test])
    # undo the standardisation with the training part's statistics (float64 reference)
    train_rows = _rows_of(reference.data, data, "train")
    mean, std = train_rows.mean(axis=0), train_rows.std(axis=0)
    std = np.where(std > 1e-8, std, 1.0)
    raw = x * std + mean
    order = np.lexsort(np.column_stack([raw.round(3), y]).T)
    ref_order = np.lexsort(np.column_stack([reference.data, reference.target]).T)
    np.testing.assert_allclose(raw[order], reference.data[ref_order], atol=1e-4)
    np.testing.assert_array_equal(y[order], reference.target[ref_order])
    np.testing.assert_allclose(data.x_train.mean(axis=0), 0.0, atol=1e-5)
    varying = train_rows.std(axis=0) > 1e-8
    np.testing.assert_allclose(data.x_train.std(axis=0)[varying], 1.0, rtol=1e-4)


def _rows_of(all_rows, data, part):
    from fastnn.data.base import split

    train, test = split(len(all_rows), 0.25, 0)
    return all_rows[train if part == "train" else test]


@pytest.mark.skipif(importlib.util.find_spec("sklearn") is None, reason="needs scikit-learn")
def test_digits_split_is_fixed():
    a, b = load("digits"), load("digits")
    np.testing.assert_array_equal(a.x_test, b.x_test)
    other = load("digits", split_seed=1)
    assert not np.array_equal(a.y_test, other.y_test)


@pytest.mark.skipif(importlib.util.find_spec("tslearn") is None, reason="needs tslearn")
def test_trace_matches_the_npz_file():
    data = load("trace")
    with np.load(trace_path()) as npz:
        raw_train, raw_test = npz["X_train"][:, :, 0], npz["X_test"][:, :, 0]
        labels_train, labels_test = npz["y_train"], npz["y_test"]
    assert data.x_train.shape == (100, 1, 275) and data.x_test.shape == (100, 1, 275)
    assert data.num_classes == 4
    mean, std = raw_train.mean(), raw_train.std()
    np.testing.assert_allclose(data.x_train[:, 0, :], (raw_train - mean) / std, atol=1e-5)
    np.testing.assert_allclose(data.x_test[:, 0, :], (raw_test - mean) / std, atol=1e-5)
    np.testing.assert_array_equal(data.y_train, labels_train - labels_train.min())
    np.testing.assert_array_equal(data.y_test, labels_test - labels_train.min())


def test_missing_tslearn_names_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "tslearn" else real(name, *a))
    with pytest.raises(MissingDataError, match=r"tslearn.*fastnn-core\[examples\]"):
        load("trace")


def test_missing_sklearn_names_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "sklearn" else real(name, *a))
    monkeypatch.setitem(sys.modules, "sklearn", None)
    with pytest.raises(MissingDataError, match=r"scikit-learn.*fastnn-core\[examples\]"):
        load("digits")


def test_unknown_data_set_lists_the_known_ones():
    with pytest.raises(ValueError, match="choose one of digits, trace"):
        load("mnist")
