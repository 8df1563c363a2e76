"""``fastnn.version``, as ``torch.version`` (scripts print it in their environment
report): ``__version__``, and ``cuda`` / ``hip`` / ``git_version`` / ``debug`` as a CPU
build of PyTorch reports them (fastnn's CUDA is a backend, not the build: its CUDA
runtime is ``fnn.backends()``'s concern)."""

from fastnn import __version__

cuda = None
hip = None
git_version = "unknown"
debug = False

__all__ = ["__version__", "cuda", "debug", "git_version", "hip"]
