"""UCR "Trace": 200 series of length 275 in 4 classes (100 train, 100 test).

Read from the file that the tslearn wheel ships,
``tslearn/.cached_datasets/Trace.npz``, found without importing tslearn. So
tslearn's own dependencies (numba, llvmlite, pandas, statsmodels: ~350 MB)
are not needed: ``pip install --no-deps tslearn`` installs the file alone
(tslearn itself will then not import, which fastnn never does).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fastnn.data.base import ClassificationData, MissingDataError, package_file, standardise

RELATIVE_PATH = Path(".cached_datasets") / "Trace.npz"
TRACE_HINT = ('pip install --no-deps "tslearn>=0.6" (fastnn reads only the Trace.npz file that '
              "tslearn's wheel ships, so tslearn's dependencies are not needed)")


def trace_path() -> Path:
    """Where the installed tslearn keeps Trace.npz; MissingDataError when it does not."""
    path, roots = package_file("tslearn", RELATIVE_PATH, "Trace", "the tslearn package",
                               hint=TRACE_HINT)
    if path is not None:
        return path
    raise MissingDataError(
        f"tslearn is installed but has no {RELATIVE_PATH} under {roots}; reinstall a "
        'tslearn wheel that ships it: pip install --force-reinstall --no-deps "tslearn>=0.6"'
    )


def load_trace() -> ClassificationData:
    """Trace as (N, 1, 275) float32 series with labels 0..3, using the file's own split.

    Standardised with one mean and std over all training values (the series
    are already z-normalised one by one; this only fixes the global scale).
    """
    path = trace_path()
    with np.load(path, allow_pickle=False) as npz:
        missing = {"X_train", "y_train", "X_test", "y_test"} - set(npz.files)
        if missing:
            raise MissingDataError(f"{path} lacks the arrays {sorted(missing)}")
        # stored as (N, length, 1); conv1d wants (N, channels, length)
        x_train = np.transpose(npz["X_train"], (0, 2, 1)).astype(np.float64)
        x_test = np.transpose(npz["X_test"], (0, 2, 1)).astype(np.float64)
        y_train, y_test = npz["y_train"], npz["y_test"]
    labels = np.unique(y_train)
    # map whatever labels the file uses (1..4) onto 0..C-1
    y_train = np.searchsorted(labels, y_train).astype(np.int64)
    y_test = np.searchsorted(labels, y_test).astype(np.int64)
    x_train, x_test = standardise(x_train, x_test, axis=None)
    return ClassificationData("trace", x_train, y_train, x_test, y_test, num_classes=len(labels))
