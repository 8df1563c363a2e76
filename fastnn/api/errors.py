"""Exceptions raised by fastnn's public API."""


class BackendError(RuntimeError):
    """A backend is missing, cannot load, or cannot run on this machine."""


class DeviceMismatchError(RuntimeError):
    """An op received tensors that live on two different devices."""


class StateDictError(RuntimeError, ValueError):
    """A state dict does not fit the model it is loaded into: a RuntimeError, as PyTorch's
    ``load_state_dict`` raises (``except RuntimeError`` code keeps working), and a
    ValueError, as fastnn raised before."""


class LinAlgError(RuntimeError):
    """A linear-algebra op met a matrix it cannot handle (a singular one for inv and solve);
    ``fnn.linalg.LinAlgError``, as ``torch.linalg.LinAlgError``."""


class ShapeError(RuntimeError, ValueError):
    """Shapes that do not fit an op (they do not broadcast, view, join or multiply): a
    RuntimeError, as PyTorch raises (``except RuntimeError`` code keeps working), and a
    ValueError, as fastnn raised before."""


class OutOfRangeError(IndexError, ValueError):
    """A dim outside the tensor's dims, or a class index outside the classes: an
    IndexError, as PyTorch's "Dimension out of range" and "Target 7 is out of bounds",
    and a ValueError, as fastnn raised before."""
