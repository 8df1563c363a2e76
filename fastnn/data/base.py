"""The ClassificationData record that the data-set loaders return, and their helpers."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import numpy as np

EXTRA_HINT = "pip install 'fastnn-core[examples]' (or: pip install -e '.[examples]' in the repo)"


class MissingDataError(RuntimeError):
    """A data set's source package or file is not installed."""


@dataclass
class ClassificationData:
    """A classification data set split into a training part and a held-out part (what
    :func:`fastnn.data.load` returns; :class:`fastnn.data.Dataset` is PyTorch's base class)."""

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    num_classes: int

    @property
    def input_shape(self) -> tuple:
        """Shape of one sample: ``(features,)`` or ``(channels, length)``."""
        return tuple(self.x_train.shape[1:])

    def __repr__(self) -> str:
        return (
            f"ClassificationData({self.name!r}, train={self.x_train.shape}, "
            f"test={self.x_test.shape}, classes={self.num_classes})"
        )


def package_file(package: str, relative: Path, what: str, distribution: str | None = None,
                 hint: str = EXTRA_HINT) -> tuple[Path | None, list]:
    """Find the data file ``relative`` inside the installed ``package`` without importing it.

    Returns (the path, or None when the package lacks the file; the folders
    searched). MissingDataError naming ``what``, the ``distribution`` to
    install (default: the package name) and the install ``hint`` when the
    package is not installed.
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise MissingDataError(
            f"the {what} data set is read from {distribution or package}, which is not installed; "
            f"install it with: {hint}"
        )
    roots = list(spec.submodule_search_locations)
    for root in roots:
        path = Path(root) / relative
        if path.is_file():
            return path, roots
    return None, roots


def standardise(x_train: np.ndarray, x_test: np.ndarray, axis) -> tuple[np.ndarray, np.ndarray]:
    """(x - mean) / std with the training part's statistics over ``axis``.

    NOTE: features that are constant in the training part (std 0, e.g. the
    always-blank corner pixels of the digits) are only centred, not divided.
    """
    mean = x_train.mean(axis=axis, keepdims=True)
    std = x_train.std(axis=axis, keepdims=True)
    std = np.where(std > 1e-8, std, 1.0)
    return ((x_train - mean) / std).astype(np.float32), ((x_test - mean) / std).astype(np.float32)


def split(n: int, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Train and held-out indices of a seeded random permutation of ``range(n)``."""
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    order = np.random.default_rng(seed).permutation(n)
    n_test = int(round(n * test_fraction))
    return np.sort(order[n_test:]), np.sort(order[:n_test])
