"""Exceptions raised by fastnn's public API."""


class BackendError(RuntimeError):
    """A backend is missing, cannot load, or cannot run on this machine."""


class DeviceMismatchError(RuntimeError):
    """An op received tensors that live on two different devices."""


class LinAlgError(RuntimeError):
    """A linear-algebra op met a matrix it cannot handle (a singular one for inv and solve);
    ``fnn.linalg.LinAlgError``, as ``torch.linalg.LinAlgError``."""
