"""Products of matrices and vectors, as PyTorch spells them: ``mm``, ``bmm``, ``mv``,
``dot``, ``vdot``, ``outer``, ``addmm``, ``baddbmm``, ``addmv``, ``kron``, ``tensordot``,
``cross`` and ``cdist``.

Each checks PyTorch's shapes at the boundary and lowers to the matmul primitive (or to
broadcast multiplies and a norm), so each gradient is theirs.
"""

from __future__ import annotations

import math
import warnings

from fastnn.api.args import ints
from fastnn.autograd.node_names import shows
from fastnn.ops import elementwise as ew
from fastnn.ops import movement, operands
from fastnn.ops.core import broadcast_shape
from fastnn.ops.joining import stack
from fastnn.ops.nnops import matmul
from fastnn.ops.shaping import axis_index
from fastnn.ops.sorting import check_tensor
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor
from fastnn.ops.viewing import select


def _dims(op: str, names: str, tensors: tuple, ndims: tuple) -> None:
    for name, t, n in zip(names.split(), tensors, ndims):
        check_tensor(op, t)
        if t.ndim != n:
            raise RuntimeError(f"{op}: {name} must be a {n}-d tensor, got shape {t.shape}")


@public(method=True, top=True)
def mm(x: Tensor, mat2: Tensor) -> Tensor:
    """The matrix product of two 2-d tensors, (n, m) @ (m, p) -> (n, p)."""
    _dims("mm", "x mat2", (x, mat2), (2, 2))
    operands.same_dtype("mm", x, mat2)
    if x.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mm: mat1 and mat2 shapes cannot be multiplied ({x.shape[0]}x"
                           f"{x.shape[1]} and {mat2.shape[0]}x{mat2.shape[1]})")
    return matmul(x, mat2)


@public(method=True, top=True)
def bmm(x: Tensor, mat2: Tensor) -> Tensor:
    """Batched matrix products of two 3-d tensors, (b, n, m) @ (b, m, p) -> (b, n, p)."""
    _dims("bmm", "x mat2", (x, mat2), (3, 3))
    operands.same_dtype("bmm", x, mat2)
    if x.shape[0] != mat2.shape[0] or x.shape[2] != mat2.shape[1]:
        raise RuntimeError(f"bmm: batch1 {x.shape} and batch2 {mat2.shape} do not match; "
                           "expected (b, n, m) and (b, m, p)")
    return matmul(x, mat2)


@public(method=True, top=True)
def mv(x: Tensor, vec: Tensor) -> Tensor:
    """The product of a matrix (n, m) and a vector (m,): a vector (n,)."""
    _dims("mv", "x vec", (x, vec), (2, 1))
    operands.same_dtype("mv", x, vec)
    if x.shape[1] != vec.shape[0]:
        raise RuntimeError(f"mv: size mismatch, got matrix {x.shape} and vector {vec.shape}")
    return matmul(x, vec)


@public(method=True, top=True)
def dot(x: Tensor, tensor: Tensor) -> Tensor:
    """The inner product of two 1-d tensors of the same size and dtype (a 0-d tensor)."""
    _dims("dot", "x tensor", (x, tensor), (1, 1))
    operands.same_dtype("dot", x, tensor)
    if x.shape != tensor.shape:
        raise RuntimeError(f"dot: inconsistent tensor size, expected tensors of the same "
                           f"size, got {x.shape[0]} and {tensor.shape[0]}")
    return matmul(x, tensor)


@public(method=True, top=True)
def vdot(x: Tensor, other: Tensor) -> Tensor:
    """The inner product conjugating the first vector (for real tensors, ``dot``)."""
    return dot(x, other)


@public(method=True, top=True, aliases=("ger",))
def outer(x: Tensor, vec2: Tensor) -> Tensor:
    """The outer product of two 1-d tensors: ``out[i, j] = x[i] * vec2[j]``."""
    _dims("outer", "x vec2", (x, vec2), (1, 1))
    return ew.mul(movement.reshape(x, (-1, 1)), movement.reshape(vec2, (1, -1)))


def _blend(op: str, base: Tensor, product: Tensor, beta, alpha) -> Tensor:
    """beta * base + alpha * product (base broadcast to product's shape; beta = 0 ignores
    base's values, NaN included, as PyTorch)."""
    check_tensor(op, base)
    if broadcast_shape(op, base.shape, product.shape) != product.shape:
        raise RuntimeError(f"{op}: input of shape {base.shape} does not broadcast to the "
                           f"product's shape {product.shape}")
    scaled = product if alpha == 1 else ew.mul(product, alpha)
    if beta == 0:
        return scaled
    return ew.add(base if beta == 1 else ew.mul(base, beta), scaled)


@public(method=True, top=True)
def addmm(x: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * x + alpha * (mat1 @ mat2)``, x broadcast to the product's shape."""
    return _blend("addmm", x, mm(mat1, mat2), beta, alpha)


@public(method=True, top=True)
def baddbmm(x: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * x + alpha * bmm(batch1, batch2)``."""
    return _blend("baddbmm", x, bmm(batch1, batch2), beta, alpha)


@public(method=True, top=True)
def addbmm(x: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * x + alpha * sum over the batch of bmm(batch1, batch2)``."""
    if batch1.ndim != 3 or batch2.ndim != 3:
        raise RuntimeError(f"addbmm: batch1 and batch2 must be 3-D tensors, got "
                           f"{batch1.ndim}-D and {batch2.ndim}-D")
    return _blend("addbmm", x, bmm(batch1, batch2).sum(0), beta, alpha)


@public(method=True, top=True)
def addr(x: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * x + alpha * outer(vec1, vec2)``."""
    return _blend("addr", x, outer(vec1, vec2), beta, alpha)


@public(method=True, top=True)
def addmv(x: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * x + alpha * mv(mat, vec)``."""
    return _blend("addmv", x, mv(mat, vec), beta, alpha)


@public(method=True, top=True)
def kron(x: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product: for each dim, blocks of ``other`` scaled by ``x``'s
    entries (the shorter shape padded with leading 1s)."""
    check_tensor("kron", x)
    check_tensor("kron", other)
    n = max(x.ndim, other.ndim)
    sa = (1,) * (n - x.ndim) + x.shape
    sb = (1,) * (n - other.ndim) + other.shape
    a = movement.reshape(x, tuple(v for s in sa for v in (s, 1)))
    b = movement.reshape(other, tuple(v for s in sb for v in (1, s)))
    return movement.reshape(ew.mul(a, b), tuple(p * q for p, q in zip(sa, sb)))


@public(top=True)
def tensordot(a: Tensor, b: Tensor, dims=2) -> Tensor:
    """Sum of products over ``dims``: an int (a's last ``dims`` dims with b's first), or a
    pair of dim lists, one per tensor."""
    check_tensor("tensordot", a)
    check_tensor("tensordot", b)
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0 or dims > min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot: dims={dims} must be in [0, {min(a.ndim, b.ndim)}]")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        if len(dims) != 2:
            raise RuntimeError(f"tensordot: dims must be an int or two lists, got {dims!r}")
        da = [axis_index("tensordot", d, a.ndim) for d in ints("tensordot", "dims", dims[0])]
        db = [axis_index("tensordot", d, b.ndim) for d in ints("tensordot", "dims", dims[1])]
    if len(da) != len(db):
        raise RuntimeError(f"tensordot: both dim lists need the same length, got {da} and {db}")
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j]:
            raise RuntimeError(f"tensordot: contracted dimensions need the same size, got "
                               f"{a.shape[i]} (a dim {i}) and {b.shape[j]} (b dim {j})")
    keep_a = [d for d in range(a.ndim) if d not in da]
    keep_b = [d for d in range(b.ndim) if d not in db]
    k = math.prod(a.shape[d] for d in da)
    rows = math.prod(a.shape[d] for d in keep_a)
    cols = math.prod(b.shape[d] for d in keep_b)
    left = movement.reshape(movement.transpose(a, tuple(keep_a + da)), (rows, k))
    right = movement.reshape(movement.transpose(b, tuple(db + keep_b)), (k, cols))
    out = matmul(left, right)
    return movement.reshape(out, tuple(a.shape[d] for d in keep_a) +
                            tuple(b.shape[d] for d in keep_b))


@public(method=True, top=True)
def cross(x: Tensor, other: Tensor, dim=None) -> Tensor:
    """The 3-vector cross product along ``dim`` (inputs broadcast); with no dim, the first
    dim of size 3 (deprecated in PyTorch, which warns: give dim)."""
    check_tensor("cross", x)
    check_tensor("cross", other)
    shape = broadcast_shape("cross", x.shape, other.shape)
    x, other = movement.broadcast_to(x, shape), movement.broadcast_to(other, shape)
    if dim is None:
        warnings.warn("cross: using cross without specifying dim is deprecated; give dim "
                      "(torch.linalg.cross uses dim=-1)", UserWarning, stacklevel=2)
        found = [d for d, n in enumerate(shape) if n == 3]
        if not found:
            raise RuntimeError(f"cross: no dimension of size 3 in the inputs {shape}")
        dim = found[0]
    a = axis_index("cross", dim, len(shape))
    if shape[a] != 3:
        raise RuntimeError(f"cross: dimension {a} does not have size 3 (shape {shape})")
    x0, x1, x2 = (select(x, a, i) for i in range(3))
    y0, y1, y2 = (select(other, a, i) for i in range(3))
    parts = [ew.sub(ew.mul(x1, y2), ew.mul(x2, y1)), ew.sub(ew.mul(x2, y0), ew.mul(x0, y2)),
             ew.sub(ew.mul(x0, y1), ew.mul(x1, y0))]
    return stack(parts, a)


@public(top=True)
@shows("CdistBackward0")
def cdist(x1: Tensor, x2: Tensor, p=2.0, compute_mode=None) -> Tensor:
    """The p-norm distance between each row of ``x1`` (..., P, M) and each row of ``x2``
    (..., R, M): shape (..., P, R); batch dims broadcast. For p=2 with more than 25 rows
    (or ``compute_mode="use_mm_for_euclid_dist"``) one matmul, as PyTorch."""
    from fastnn.ops.reduction import norm

    check_tensor("cdist", x1)
    check_tensor("cdist", x2)
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist: x1 and x2 need at least 2 dims, got {x1.shape} and "
                           f"{x2.shape}")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"cdist: x1 and x2 must have the same number of columns, got "
                           f"{x1.shape[-1]} and {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError(f"cdist: p must be non-negative, got {p}")
    if not x1._dtype.is_floating or not x2._dtype.is_floating:
        raise RuntimeError(f"cdist: only floating-point dtypes are supported, got "
                           f"{x1._dtype.name} and {x2._dtype.name}")
    modes = (None, "use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
             "donot_use_mm_for_euclid_dist")
    if compute_mode not in modes:
        raise ValueError(f"cdist: compute_mode must be one of {modes[1:]}, got "
                         f"{compute_mode!r}")
    big = x1.shape[-2] > 25 or x2.shape[-2] > 25
    if p == 2 and (compute_mode == modes[2] or (compute_mode in modes[:2] and big)):
        return _euclidean_mm(x1, x2)
    a = movement.reshape(x1, x1.shape[:-1] + (1, x1.shape[-1]))
    b = movement.reshape(x2, x2.shape[:-2] + (1,) + x2.shape[-2:])
    return norm(ew.sub(a, b), float(p), -1)


def _euclidean_mm(x1: Tensor, x2: Tensor) -> Tensor:
    """Euclidean distances as ``sqrt(|a|^2 + |b|^2 - 2 a.b)`` with one matmul (PyTorch's
    path for more than 25 rows: much less memory than the differences, slightly less
    exact for near points). A zero distance passes no gradient, as the 2-norm's."""
    from fastnn.ops.mathops import clamp

    sq1 = movement.sum(ew.mul(x1, x1), -1, True)
    sq2 = movement.sum(ew.mul(x2, x2), -1, True)
    order = tuple(range(x2.ndim - 2)) + (x2.ndim - 1, x2.ndim - 2)
    cross_term = matmul(ew.mul(x1, -2.0), movement.transpose(x2, order))  # -2 a.b
    squared = clamp(ew.add(ew.add(sq1, movement.transpose(sq2, order)), cross_term),
                    min=0.0)
    if not (x1._requires_grad or x2._requires_grad):
        return ew.sqrt(squared)
    zero = ew.compare("equal", squared, 0.0)
    safe = ew.where(zero, 1.0, squared)
    return ew.where(zero, 0.0, ew.sqrt(safe))
