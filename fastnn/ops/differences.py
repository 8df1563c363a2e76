"""PyTorch's ``torch.gradient``: the derivative of sampled values by finite differences,
as NumPy's ``np.gradient``.

Along one dim with samples f_0 .. f_{n-1} a spacing h apart, the interior values are the
central differences (f_{i+1} - f_{i-1}) / 2h; the two ends are one-sided, of first order
((f_1 - f_0) / h) or, with ``edge_order=2``, of second order
((-3 f_0 + 4 f_1 - f_2) / 2h). At points x_0 .. x_{n-1} (``spacing`` a list of 1-D
tensors) the same second-order formulas use the uneven steps d_i = x_{i+1} - x_i.
Composed of slices and arithmetic, so gradients flow; integer inputs give the default
float dtype.
"""

from __future__ import annotations

import numbers

from fastnn.api import dtypes
from fastnn.ops import elementwise as ew
from fastnn.ops.joining import cat
from fastnn.ops.shaping import axis_index
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor
from fastnn.ops.viewing import narrow


def _steps(op: str, spacing, dims: tuple, x: Tensor) -> list:
    """One spacing per dim of ``dims``: a float, or the 1-d tensor of sample points."""
    if isinstance(spacing, numbers.Real) and not isinstance(spacing, bool):
        return [float(spacing)] * len(dims)
    if isinstance(spacing, Tensor) and spacing.ndim == 0:
        return [float(spacing.item())] * len(dims)
    spacing = list(spacing) if isinstance(spacing, (list, tuple)) else None
    if spacing is None or len(spacing) != len(dims):
        raise RuntimeError(f"{op}: expected spacing to be unspecified, a scalar, or a list of "
                           f"length {len(dims)} (one per dim of dim={dims}), got {spacing!r}")
    out = []
    for d, s in zip(dims, spacing):
        if isinstance(s, Tensor) and s.ndim == 1:
            if s.shape[0] != x.shape[d]:
                raise RuntimeError(f"{op}: expected each tensor of spacing to have {x.shape[d]} "
                                   f"points (the size of dim {d}), got {s.shape[0]}")
            out.append(s)
        elif isinstance(s, Tensor) and s.ndim == 0:
            out.append(float(s.item()))
        elif isinstance(s, numbers.Real) and not isinstance(s, bool):
            out.append(float(s))
        else:
            raise RuntimeError(f"{op}: each spacing must be a number or a 1-d tensor of sample "
                               f"points, got {s!r}")
    return out


def _shaped(v: Tensor, dim: int, ndim: int) -> Tensor:
    """A 1-d tensor of coefficients along ``dim`` of an ndim-d tensor (to broadcast)."""
    return v.reshape(tuple(-1 if a == dim else 1 for a in range(ndim)))


def _along(f: Tensor, dim: int, step, edge_order: int) -> Tensor:
    n = f.shape[dim]

    def part(start, length):
        return narrow(f, dim, start, length)

    if not isinstance(step, Tensor):  # an even spacing h
        inner = ew.div(ew.sub(part(2, n - 2), part(0, n - 2)), 2.0 * step)
        if edge_order == 1:
            first = ew.div(ew.sub(part(1, 1), part(0, 1)), step)
            last = ew.div(ew.sub(part(n - 1, 1), part(n - 2, 1)), step)
        else:
            first = ew.div(ew.add(ew.add(ew.mul(part(0, 1), -1.5), ew.mul(part(1, 1), 2.0)),
                                  ew.mul(part(2, 1), -0.5)), step)
            last = ew.div(ew.add(ew.add(ew.mul(part(n - 3, 1), 0.5), ew.mul(part(n - 2, 1),
                                                                            -2.0)),
                                 ew.mul(part(n - 1, 1), 1.5)), step)
        return cat([first, inner, last], dim)
    dx = ew.sub(narrow(step, 0, 1, n - 1), narrow(step, 0, 0, n - 1))  # (types promote)
    d1, d2 = narrow(dx, 0, 0, n - 2), narrow(dx, 0, 1, n - 2)
    total = ew.add(d1, d2)
    a = ew.div(ew.neg(d2), ew.mul(d1, total))
    b = ew.div(ew.sub(d2, d1), ew.mul(d1, d2))
    c = ew.div(d1, ew.mul(d2, total))
    k = f.ndim
    inner = ew.add(ew.add(ew.mul(part(0, n - 2), _shaped(a, dim, k)),
                          ew.mul(part(1, n - 2), _shaped(b, dim, k))),
                   ew.mul(part(2, n - 2), _shaped(c, dim, k)))
    if edge_order == 1:
        first = ew.div(ew.sub(part(1, 1), part(0, 1)), _shaped(narrow(dx, 0, 0, 1), dim, k))
        last = ew.div(ew.sub(part(n - 1, 1), part(n - 2, 1)),
                      _shaped(narrow(dx, 0, n - 2, 1), dim, k))
        return cat([first, inner, last], dim)
    first = _three(part(0, 1), part(1, 1), part(2, 1), narrow(dx, 0, 0, 1),
                   narrow(dx, 0, 1, 1), dim, k, True)
    last = _three(part(n - 3, 1), part(n - 2, 1), part(n - 1, 1), narrow(dx, 0, n - 3, 1),
                  narrow(dx, 0, n - 2, 1), dim, k, False)
    return cat([first, inner, last], dim)


def _three(f0, f1, f2, d1, d2, dim, k, at_start: bool) -> Tensor:
    """The second-order one-sided difference at the first (or last) of three samples."""
    total = ew.add(d1, d2)
    if at_start:
        a = ew.div(ew.neg(ew.add(ew.mul(d1, 2.0), d2)), ew.mul(d1, total))
        b = ew.div(total, ew.mul(d1, d2))
        c = ew.div(ew.neg(d1), ew.mul(d2, total))
    else:
        a = ew.div(d2, ew.mul(d1, total))
        b = ew.div(ew.neg(total), ew.mul(d1, d2))
        c = ew.div(ew.add(ew.mul(d2, 2.0), d1), ew.mul(d2, total))
    return ew.add(ew.add(ew.mul(f0, _shaped(a, dim, k)), ew.mul(f1, _shaped(b, dim, k))),
                  ew.mul(f2, _shaped(c, dim, k)))


@public(top=True, functional=False)
def gradient(input: Tensor, *, spacing=1, dim=None, edge_order=1) -> tuple:  # noqa: A002
    """The derivative of ``input``'s samples along each dim of ``dim`` (default: every
    dim), one tensor per dim: central differences inside, one-sided ones of order
    ``edge_order`` (1 or 2) at the ends. ``spacing``: a number (the same step on every
    dim), one number per dim, or one 1-d tensor of sample points per dim."""
    if not isinstance(input, Tensor):
        raise TypeError(f"gradient: input must be a Tensor, got {type(input).__name__}")
    if edge_order not in (1, 2):
        raise RuntimeError(f"torch.gradient only supports edge_order=1 and edge_order=2, got "
                           f"{edge_order!r}")
    if dim is None:
        dims = tuple(range(input.ndim))
    else:
        given = (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)
        dims = tuple(axis_index("gradient", d, input.ndim) for d in given)
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"gradient: dim {given} names a dim twice")
    if any(input.shape[d] < edge_order + 1 for d in dims):
        raise RuntimeError("torch.gradient expected each dimension size to be at least "
                           "edge_order+1")
    steps = _steps("gradient", spacing, dims, input)
    f = input if input.dtype.is_floating else input.to(dtypes.get_default_dtype())
    return tuple(_along(f, d, s, edge_order) for d, s in zip(dims, steps))
