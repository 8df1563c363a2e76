"""``fnn.linalg``: the norms of ``torch.linalg`` (``vector_norm``, ``matrix_norm``, ``norm``),
``cross`` (dim=-1 by default), the products ``vecdot``, ``matmul``, and the inverses, solves
and determinants ``inv``, ``inv_ex``, ``solve``, ``solve_ex``, ``det``, ``slogdet``
(:mod:`fastnn.ops.linalg_solve`; a singular matrix raises :class:`LinAlgError`), and the
decompositions ``qr``, ``eigh``, ``eigvalsh``, ``svd``, ``svdvals``
(:mod:`fastnn.ops.linalg_decomp`: eigenvalues ascending, singular values descending,
vectors unique only up to sign), what derives from them (``pinv``, ``matrix_rank``,
``lstsq``, ``cond``) and the composites ``matrix_power``, ``multi_dot``,
``solve_triangular``, ``vander``, ``diagonal`` (:mod:`fastnn.ops.linalg_more`), the LU
factorisation ``lu_factor``, ``lu_factor_ex``, ``lu``, ``lu_solve``
(:mod:`fastnn.ops.linalg_lu`), ``matrix_exp``, ``householder_product``, ``tensorinv``,
``tensorsolve`` (:mod:`fastnn.ops.linalg_matfun`), ``ldl_factor``, ``ldl_factor_ex``,
``ldl_solve`` (:mod:`fastnn.ops.linalg_ldl`, computed on the host). ``eig`` and
``eigvals`` raise: their results are complex, which fastnn has no dtype for
(``eigh``/``eigvalsh`` for symmetric matrices).

The norms are composites of abs, sums and extrema. The spectral ones (``ord=2``, ``-2``,
``"nuc"``) are singular values (``svdvals``, the ``linalg_svd`` hook), with the SVD's
gradient (``u v^T`` for one of them).
"""

from __future__ import annotations

import numbers

from fastnn.api import dtypes
from fastnn.api.args import ints
from fastnn.api.errors import LinAlgError
from fastnn.autograd.node_names import shows
from fastnn.ops import elementwise as ew
from fastnn.ops import movement
from fastnn.ops.linalg_cholesky import cholesky, cholesky_ex
from fastnn.ops.linalg_decomp import eigh, eigvalsh, qr, svd, svdvals
from fastnn.ops.linalg_derived import cond, lstsq, matrix_rank, pinv
from fastnn.ops.linalg_derived import spectral as _spectral
from fastnn.ops.linalg_ldl import ldl_factor, ldl_factor_ex, ldl_solve
from fastnn.ops.linalg_lu import lu, lu_factor, lu_factor_ex, lu_solve
from fastnn.ops.linalg_matfun import (
    eig,
    eigvals,
    householder_product,
    matrix_exp,
    tensorinv,
    tensorsolve,
)
from fastnn.ops.linalg_more import diagonal, matrix_power, multi_dot, solve_triangular, vander
from fastnn.ops.linalg_solve import det, inv, inv_ex, slogdet, solve, solve_ex
from fastnn.ops.products import cross as _cross
from fastnn.ops.reduction import amin
from fastnn.ops.reduction import norm as _vector
from fastnn.ops.shaping import axis_index
from fastnn.ops.sorting import check_tensor
from fastnn.ops.tensor import Tensor

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig",
           "eigh", "eigvals", "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor",
           "ldl_factor_ex", "ldl_solve", "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve",
           "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot",
           "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd",
           "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm"]

_INF = float("inf")


def _float(op: str, x: Tensor, dtype) -> Tensor:
    check_tensor(op, x)
    if dtype is not None:
        x = x.to(dtypes.as_dtype(dtype))
    if not x._dtype.is_floating:
        raise RuntimeError(f"linalg.{op}: expected a floating-point tensor, got "
                           f"{x._dtype.name}; convert with .float() or pass dtype=")
    return x


@shows("LinalgVectorNormBackward0")
def vector_norm(x: Tensor, ord=2, dim=None, keepdim=False, *, dtype=None) -> Tensor:
    """The vector ``ord``-norm over ``dim`` (an int, a tuple, or None for all elements):
    ``sum(|x|**ord)**(1/ord)``; ``inf``/``-inf`` the largest/smallest ``|x|``, 0 the
    number of non-zeros."""
    x = _float("vector_norm", x, dtype)
    if isinstance(ord, bool) or not isinstance(ord, numbers.Real):
        raise TypeError(f"linalg.vector_norm: ord must be a real number, got {ord!r}")
    if dim is not None:
        dim = ints("linalg.vector_norm", "dim", dim)
    if not x.numel() and dim is None and (ord < 0 or ord == _INF):
        raise RuntimeError(f"linalg.vector_norm: cannot compute the {ord} norm of an empty "
                           "tensor (there is no maximum or minimum)")
    return _vector(x, ord, dim, keepdim)


def _plane(op: str, x: Tensor, dim) -> tuple:
    dim = ints(f"linalg.{op}", "dim", dim)
    if len(dim) != 2:
        raise RuntimeError(f"linalg.{op}: dim must name 2 dims, got {dim}")
    if x.ndim < 2:
        raise RuntimeError(f"linalg.{op}: needs a tensor of at least 2 dims, got {x.shape}")
    a, b = axis_index(op, dim[0], x.ndim), axis_index(op, dim[1], x.ndim)
    if a == b:
        raise RuntimeError(f"linalg.{op}: dims must differ, got {dim}")
    return a, b


def _singular(x: Tensor, a: int, b: int, keepdim: bool, which) -> Tensor:
    """The largest, smallest or sum of the singular values of the (a, b) planes."""
    rest = [d for d in range(x.ndim) if d not in (a, b)]
    values = _spectral(movement.transpose(x, tuple(rest + [a, b])), which)
    if keepdim:
        shape = list(x.shape)
        shape[a] = shape[b] = 1
        values = movement.reshape(values, tuple(shape))
    return values


def matrix_norm(x: Tensor, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None) -> Tensor:
    """The matrix norm of the (dim[0], dim[1]) planes: ``"fro"`` (Frobenius), ``"nuc"``
    (sum of singular values), ``inf``/``-inf`` (max/min row sum of ``|x|``), ``1``/``-1``
    (max/min column sum), ``2``/``-2`` (largest/smallest singular value)."""
    x = _float("matrix_norm", x, dtype)
    a, b = _plane("matrix_norm", x, dim)
    if ord == "fro":
        return _vector(x, 2, (a, b), keepdim)
    if ord == "nuc" or ord in (2, -2):
        which = "all" if ord == "nuc" else "max" if ord == 2 else "min"
        return _singular(x, a, b, keepdim, which)
    if ord in (_INF, -_INF, 1, -1):
        inner, outer = (b, a) if abs(ord) == _INF else (a, b)
        sums = movement.sum(ew.abs(x), inner, True)
        pick = movement.max(sums, outer, True) if ord > 0 else amin(sums, outer, True)
        if keepdim:
            return pick
        return movement.reshape(pick, tuple(n for d, n in enumerate(x.shape)
                                            if d not in (a, b)))
    raise RuntimeError(f"linalg.matrix_norm: ord must be 'fro', 'nuc', inf, -inf, 1, -1, 2 "
                       f"or -2, got {ord!r}")


def norm(x: Tensor, ord=None, dim=None, keepdim=False, *, dtype=None) -> Tensor:
    """A vector or a matrix norm, as torch.linalg.norm: with ``ord=None`` the 2-norm of the
    flattened tensor (or over ``dim``: one dim a vector norm, two the Frobenius norm);
    with ``ord``, a 1-d input (or one dim) takes a vector norm and a 2-d input (or two
    dims) a matrix norm."""
    check_tensor("linalg.norm", x)
    dims = None if dim is None else ints("linalg.norm", "dim", dim)
    if ord is None:
        if dims is not None and len(dims) == 2:
            return matrix_norm(x, "fro", dims, keepdim, dtype=dtype)
        return vector_norm(x, 2, dims, keepdim, dtype=dtype)
    if dims is None:
        if x.ndim not in (1, 2):
            raise RuntimeError(f"linalg.norm: with ord={ord!r} and no dim the input must be "
                               f"1-d or 2-d, got shape {x.shape}")
        dims = tuple(range(x.ndim))
    if len(dims) == 2:
        return matrix_norm(x, ord, dims, keepdim, dtype=dtype)
    if len(dims) == 1 and not isinstance(ord, str):
        return vector_norm(x, ord, dims, keepdim, dtype=dtype)
    raise RuntimeError(f"linalg.norm: ord={ord!r} does not fit dim={dim!r}")


def cross(x: Tensor, other: Tensor, *, dim=-1) -> Tensor:
    """The 3-vector cross product along ``dim`` (default the last; inputs broadcast)."""
    return _cross(x, other, dim)


def vecdot(x: Tensor, y: Tensor, *, dim=-1) -> Tensor:
    """The dot product of vectors along ``dim`` (inputs broadcast)."""
    return movement.sum(ew.mul(x, y), dim)


def matmul(x: Tensor, other: Tensor) -> Tensor:
    """The matrix product (as ``fnn.matmul``)."""
    from fastnn.ops.nnops import matmul as _matmul

    return _matmul(x, other)
