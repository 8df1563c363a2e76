"""Data-set loaders: the arrays match their sources, splits and scaling are as documented."""

import importlib.machinery
import importlib.util
import os
import subprocess
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


@pytest.mark.skipif(importlib.util.find_spec("tslearn") is None, reason="needs tslearn")
def test_trace_shapes_and_labels():
    data = load("trace")
    assert data.name == "trace" and data.input_shape == (1, 275) and data.num_classes == 4
    assert data.x_train.dtype == np.float32 and data.y_train.dtype == np.int64
    for x, y in ((data.x_train, data.y_train), (data.x_test, data.y_test)):
        assert x.shape == (100, 1, 275) and y.shape == (100,)
        assert set(np.unique(y).tolist()) == {0, 1, 2, 3}  # every class in both parts
        assert np.isfinite(x).all()
    # one global scale from the training part (reference: float64 over the raw file)
    assert abs(float(data.x_train.astype(np.float64).mean())) < 1e-6
    assert abs(float(data.x_train.astype(np.float64).std()) - 1.0) < 1e-5


@pytest.mark.skipif(importlib.util.find_spec("tslearn") is None, reason="needs tslearn")
def test_trace_reads_a_tslearn_that_cannot_import(tmp_path):
    """As after `pip install --no-deps tslearn`: the package is there, its imports are not."""
    fake = tmp_path / "tslearn"
    (fake / ".cached_datasets").mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named numba')\n")
    (fake / ".cached_datasets" / "Trace.npz").write_bytes(trace_path().read_bytes())
    code = ("import sys; from fastnn.data import load; d = load('trace'); "
            "assert 'tslearn' not in sys.modules; print(d.x_train.shape, d.num_classes)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["(100,", "1,", "275)", "4"]


def test_missing_tslearn_says_install_it_without_its_dependencies(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "tslearn" else real(name, *a))
    with pytest.raises(MissingDataError, match=r'pip install --no-deps "tslearn>=0.6"'):
        load("trace")


def test_tslearn_without_the_file_says_reinstall(monkeypatch, tmp_path):
    real = importlib.util.find_spec
    empty = importlib.machinery.ModuleSpec("tslearn", None, is_package=True)
    empty.submodule_search_locations = [str(tmp_path)]
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: empty if name == "tslearn" else real(name, *a))
    with pytest.raises(MissingDataError, match=r"no .cached_datasets/Trace.npz.*--no-deps"):
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
