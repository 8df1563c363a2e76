"""``fastnn train --plot PATH``: the loss and accuracy curves of a run, as a PNG.

matplotlib is optional (the ``plot`` extra): ``require_matplotlib`` says how to install
it before the training starts, not after it ends.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

PLOT_HINT = "pip install 'fastnn-core[plot]' (or: pip install matplotlib)"


def require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise SystemExit(f"fastnn train: --plot needs matplotlib, which is not installed; "
                         f"install it with: {PLOT_HINT}") from None


def figure(history, title: str):
    """Loss (left) and train/held-out accuracy (right) per epoch of ``history`` (its
    ``loss``, ``train_acc`` and ``test_acc`` lists); a matplotlib Figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    epochs = np.arange(1, len(history.loss) + 1)
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(9, 3.5))
    ax_loss.plot(epochs, history.loss)
    ax_loss.set(xlabel="epoch", ylabel="training loss", title=title)
    ax_acc.plot(epochs, history.train_acc, label="train")
    ax_acc.plot(epochs, history.test_acc, label="held out")
    ax_acc.set(xlabel="epoch", ylabel="accuracy", ylim=(0, 1))
    ax_acc.legend()
    for ax in (ax_loss, ax_acc):  # epochs are whole: no 1.25 on a run of 3
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout()
    return fig


def plot(history, path: Path, title: str) -> None:
    """Write ``figure(history, title)`` to ``path`` as a PNG."""
    import matplotlib.pyplot as plt

    fig = figure(history, title)
    try:
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)
