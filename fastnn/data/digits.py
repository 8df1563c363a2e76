"""The handwritten digits that ship inside scikit-learn: 1,797 images of 8x8 pixels, 10 classes.

The same data as ``sklearn.datasets.load_digits()``, read straight from the
file that function reads (``sklearn/datasets/data/digits.csv.gz``: 64 pixel
columns then the label) when it is where we expect: importing scikit-learn
takes 1-2 s, reading the file 15 ms. Falls back to ``load_digits`` otherwise.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fastnn.data.base import ClassificationData, package_file, split, standardise

RELATIVE_PATH = Path("datasets") / "data" / "digits.csv.gz"


def digits_arrays() -> tuple[np.ndarray, np.ndarray]:
    """(images (1797, 64) float64 in 0..16, labels (1797,) int64) from scikit-learn."""
    path, _ = package_file("sklearn", RELATIVE_PATH, "digits", "scikit-learn")
    if path is not None:
        table = np.loadtxt(path, delimiter=",")
        return table[:, :-1], table[:, -1].astype(np.int64)
    from sklearn.datasets import load_digits as sklearn_digits  # the file moved: ask sklearn

    bunch = sklearn_digits()
    return np.asarray(bunch.data, dtype=np.float64), np.asarray(bunch.target, dtype=np.int64)


def load_digits(test_fraction: float = 0.25, split_seed: int = 0) -> ClassificationData:
    """Digits as flat 64-feature vectors, split with a fixed seed and standardised per pixel.

    The split does not depend on the training seed, so every run is scored on
    the same held-out images.
    """
    x, y = digits_arrays()
    train, test = split(len(x), test_fraction, split_seed)
    x_train, x_test = standardise(x[train], x[test], axis=0)
    return ClassificationData("digits", x_train, y[train], x_test, y[test], num_classes=10)
