"""TensorBoard logging, as ``torch.utils.tensorboard``: ``from fastnn.utils.tensorboard
import SummaryWriter``. It writes TensorBoard's event files with the ``tensorboard``
package (``pip install tensorboard``, or fastnn's ``tensorboard`` extra), which PyTorch's
needs too; without it the import fails, naming the install."""

try:
    import tensorboard  # noqa: F401
except ImportError as exc:  # (as PyTorch's: the import itself says what is missing)
    raise ImportError("fastnn.utils.tensorboard writes TensorBoard's files with the "
                      "tensorboard package: pip install tensorboard") from exc

from fastnn.utils.tensorboard.writer import FileWriter, SummaryWriter

__all__ = ["FileWriter", "SummaryWriter"]
