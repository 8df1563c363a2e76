"""What PyTorch scripts ask a tensor about itself: ``x.is_cuda``, ``x.get_device()``,
``x.nbytes``, ``x.itemsize``, ``x.is_signed()``, ``x.is_complex()`` ..., and the no-op
answers for features fastnn has no use for (conjugate and negative bits, inference
tensors): each is what PyTorch gives for a real, dense tensor."""

from __future__ import annotations

import warnings

from fastnn.api import dtypes
from fastnn.ops.table import METHODS, public
from fastnn.ops.tensor import Tensor, full
from fastnn.ops.view_layout import base_of
from fastnn.settings import strided


def _fact(name: str, fn, doc: str) -> None:
    """Bind ``fn`` as the read-only property ``Tensor.<name>``."""
    METHODS[name] = property(fn, doc=doc)


_fact("is_cuda", lambda x: x.device.type == "cuda", "Whether x is on a cuda device.")
_fact("is_cpu", lambda x: x.device.type == "cpu", "Whether x is on the cpu.")
_fact("itemsize", lambda x: x.dtype.itemsize, "The size of one element in bytes.")
_fact("nbytes", lambda x: x.numel() * x.dtype.itemsize,
      "The bytes x's elements take (numel * itemsize), as PyTorch's.")


@public(method=True, functional=False)
def get_device(x: Tensor) -> int:
    """The index of x's device, -1 on the cpu (as PyTorch)."""
    return -1 if x.device.type == "cpu" else x.device.index


@public(method=True, functional=False)
def is_signed(x: Tensor) -> bool:
    """Whether x's dtype holds negative values (every fastnn dtype but bool and uint8)."""
    return x.dtype.is_signed


@public(method=True, top=True, functional=False)
def is_complex(x: Tensor) -> bool:
    """False: fastnn has no complex dtypes."""
    return False


@public(method=True, top=True, functional=False, aliases=("is_neg", "is_inference"))
def is_conj(x: Tensor) -> bool:
    """False: fastnn keeps no lazy conjugate or negative bit and no inference tensors."""
    return False


@public(method=True, top=True, functional=False, aliases=("resolve_neg",))
def resolve_conj(x: Tensor) -> Tensor:
    """x itself: a real tensor has no lazy conjugation or negation to materialise."""
    return x


@public(method=True, top=True, functional=False, aliases=("conj_physical",))
def conj(x: Tensor) -> Tensor:
    """x itself: the conjugate of a real tensor (generic code calls it on any tensor)."""
    return x


_fact("real", lambda x: x, "x itself: the real part of a real tensor, as PyTorch's.")


@public(method=True, functional=False)
def pin_memory(x: Tensor, device=None) -> Tensor:
    """x itself: fastnn's host arrays are what a device copy reads from, with no page-locked
    pool to move them to (``x.pin_memory().to(device, non_blocking=True)`` runs as written)."""
    return x


@public(method=True, functional=False)
def share_memory_(x: Tensor) -> Tensor:
    """x itself, with a warning (once): fastnn does not put tensors in memory shared across
    processes, so processes started afterwards get copies and their writes do not come
    back (PyTorch's Hogwild-style training would silently train only the copies)."""
    warn_not_shared()
    return x


def warn_not_shared() -> None:
    """The warning of :func:`share_memory_` (and ``Module.share_memory``), once a process."""
    if not _SAID_NOT_SHARED:
        _SAID_NOT_SHARED.append(True)
        warnings.warn("share_memory_: fastnn tensors are not shared across processes; "
                      "processes started afterwards work on copies and their updates do not "
                      "reach this one (data-parallel training: fastnn.distributed)",
                      UserWarning, stacklevel=3)


_SAID_NOT_SHARED: list = []


@public(method=True, functional=False, aliases=("is_shared",))
def is_pinned(x: Tensor, device=None) -> bool:
    """False: no fastnn tensor is page-locked (or shared across processes)."""
    return False


@public(method=True, top=True, functional=False)
def isreal(x: Tensor) -> Tensor:
    """True everywhere (a bool tensor shaped as x): every fastnn dtype is real."""
    return full(x.shape, True, dtypes.bool_, x.device)


@public(method=("positive", "__pos__"), top=True, functional=False)
def positive(x: Tensor) -> Tensor:
    """x itself (``+x``, as PyTorch's unary plus); TypeError for a bool tensor, as PyTorch."""
    if x.dtype is dtypes.bool_:
        raise TypeError("positive: not defined for bool tensors; use x.int() first")
    return x


@public(method=True, top=True, functional=False)
def is_same_size(x: Tensor, other: Tensor) -> bool:
    """Whether x and other have the same shape."""
    return tuple(x.shape) == tuple(other.shape)


@public(method=True, functional=False)
def bfloat16(x: Tensor) -> Tensor:
    """x as bfloat16 (where its backend lists the dtype)."""
    return x.to(dtypes.bfloat16)


@public(top=True, functional=False)
def typename(obj) -> str:
    """A tensor's type name as PyTorch spells it (``'fastnn.FloatTensor'``), else the
    object's class as ``module.qualname`` (a builtin's bare name)."""
    if isinstance(obj, Tensor):
        return obj.type()
    cls = type(obj)
    return cls.__qualname__ if cls.__module__ == "builtins" else \
        f"{cls.__module__}.{cls.__qualname__}"


_fact("retains_grad", lambda x: x._node is not None and getattr(x, "_hooks", None) is not None
      and x._hooks.retain, "Whether retain_grad() was called on this non-leaf tensor (False "
      "for a leaf, as PyTorch's).")


def _version(x: Tensor) -> int:
    storage = base_of(x)._storage
    return 0 if storage is None else storage.version


_fact("_version", _version, "A number that grows at each in-place write to x's storage "
      "(PyTorch's version counter: compare two readings; the steps are fastnn's write "
      "clock, shared by all tensors, not one per write of x).")
_fact("is_sparse", lambda x: False, "False: fastnn's tensors are dense.")
_fact("layout", lambda x: strided, "``fnn.strided``: fastnn's tensors are dense.")
_fact("output_nr", lambda x: 0, "0: which output of its op x is (PyTorch's; fastnn's "
      "multi-output ops make separate nodes).")
for _device_type in ("mps", "xpu", "xla", "ipu", "mtia", "maia", "vulkan", "mkldnn",
                     "nested", "sparse_csr"):
    _fact(f"is_{_device_type}", lambda x: False, f"False: fastnn has no {_device_type} "
          f"tensors.")


def _unsupported_dtype(method: str, dtype: str):
    def convert(x: Tensor, memory_format=None) -> Tensor:
        raise TypeError(f"{method}(): {dtype} is not a fastnn dtype (fastnn's: "
                        f"{', '.join(dtypes.names())}); fastnn has no complex dtypes")

    convert.__name__ = convert.__qualname__ = method
    convert.__doc__ = f"PyTorch's conversion to {dtype}, which fastnn does not have: raises."
    METHODS[method] = convert


for _method, _dtype in (("cfloat", "complex64"), ("cdouble", "complex128"),
                        ("chalf", "complex32")):
    _unsupported_dtype(_method, _dtype)
_fact("is_quantized", lambda x: False, "False: fastnn has no quantized tensors.")
_fact("is_meta", lambda x: False, "False: fastnn has no meta device.")


@public(method=True, functional=False)
def cuda(x: Tensor, device=None, non_blocking: bool = False, memory_format=None) -> Tensor:
    """x on a CUDA device (``None``: ``"cuda"``, an int ``n``: ``"cuda:n"``), as PyTorch's:
    x itself when it is there already, else a copy; where no CUDA backend is usable, the
    error names the backend's install step."""
    return x.to("cuda" if device is None else
                f"cuda:{device}" if isinstance(device, int) else device)


@public(method=("adjoint",), top=True, functional=False)
def adjoint(x: Tensor) -> Tensor:
    """The conjugate transpose of the last two dims, a view: ``x.mT`` for fastnn's real
    dtypes (``x.mH`` too)."""
    if x.ndim < 2:
        raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. "
                           f"Got {x.ndim}-D tensor.")
    return x.mT


_fact("mH", adjoint, "The conjugate transpose of the last two dims (x.mT for real dtypes).")


def _H(x: Tensor) -> Tensor:
    if x.ndim == 0:
        return x  # (as PyTorch's)
    if x.ndim != 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{x.ndim}-D tensor." + (" For batches of matrices, consider "
                                                   "using tensor.mH" if x.ndim > 2 else ""))
    return x.T


_fact("H", _H, "The conjugate transpose of a matrix (x.T for real dtypes), a view.")


def _format(x: Tensor, spec: str) -> str:
    """``f"{loss:.4f}"``: a 0-d tensor formats as its number, as PyTorch's."""
    if x.ndim == 0:
        return x.item().__format__(spec)
    return object.__format__(x, spec)


METHODS["__format__"] = _format


def _index(x: Tensor) -> int:
    """A one-element integer (or bool) tensor as a Python int wherever Python wants an
    index (``data[i:i + n]`` with ``i`` from ``for i in torch.randint(...)``), as
    PyTorch's."""
    if x._dtype.is_floating or x.numel() != 1:
        raise TypeError(f"only integer tensors of a single element can be converted to "
                        f"an index (got {x._dtype.name}, shape {x.shape})")
    return int(x.item())


METHODS["__index__"] = _index
