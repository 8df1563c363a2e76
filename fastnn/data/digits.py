"""The handwritten digits that ship inside scikit-learn: 1,797 images of 8x8 pixels, 10 classes."""

from __future__ import annotations

import numpy as np

from fastnn.data.base import EXTRA_HINT, Dataset, MissingDataError, split, standardise


def load_digits(test_fraction: float = 0.25, split_seed: int = 0) -> Dataset:
    """Digits as flat 64-feature vectors, split with a fixed seed and standardised per pixel.

    The split does not depend on the training seed, so every run is scored on
    the same held-out images.
    """
    try:
        from sklearn.datasets import load_digits as sklearn_digits
    except ImportError as exc:
        raise MissingDataError(
            f"the digits data set is read from scikit-learn, which is not installed "
            f"({exc}); install it with: {EXTRA_HINT}"
        ) from None
    bunch = sklearn_digits()
    x = np.asarray(bunch.data, dtype=np.float64)
    y = np.asarray(bunch.target, dtype=np.int64)
    train, test = split(len(x), test_fraction, split_seed)
    x_train, x_test = standardise(x[train], x[test], axis=0)
    return Dataset("digits", x_train, y[train], x_test, y[test], num_classes=10)
