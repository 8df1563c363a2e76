"""The named tuples that ops with two results return, as ``torch.return_types``.

``x.max(dim)`` gives ``max(values, indices)``: it unpacks as a tuple
(``values, indices = x.max(1)``) and names its parts (``x.max(1).indices``).
Indices are int64 tensors; values carry the gradient to the elements they select.
"""

from __future__ import annotations

from collections import namedtuple


def _pair(name: str, first: str = "values", second: str = "indices", what: str = ""):
    cls = namedtuple(name, (first, second))
    cls.__module__ = __name__
    cls.__qualname__ = name
    cls.__doc__ = f"``({first}, {second})``: what ``{name}`` returns{what}."
    return cls


max = _pair("max", what=" with a single int dim")  # noqa: A001  (torch.return_types.max)
min = _pair("min", what=" with a single int dim")  # noqa: A001
sort = _pair("sort")
topk = _pair("topk")
kthvalue = _pair("kthvalue")
median = _pair("median", what=" with a dim")
nanmedian = _pair("nanmedian", what=" with a dim")
mode = _pair("mode")
cummax = _pair("cummax")
cummin = _pair("cummin")
aminmax = _pair("aminmax", "min", "max")
slogdet = _pair("slogdet", "sign", "logabsdet")
linalg_slogdet = _pair("linalg_slogdet", "sign", "logabsdet")
linalg_cholesky_ex = _pair("linalg_cholesky_ex", "L", "info")
linalg_inv_ex = _pair("linalg_inv_ex", "inverse", "info")
linalg_solve_ex = _pair("linalg_solve_ex", "result", "info")

__all__ = ["aminmax", "cummax", "cummin", "kthvalue", "linalg_cholesky_ex", "linalg_inv_ex",
           "linalg_slogdet", "linalg_solve_ex", "max", "median", "min", "mode", "nanmedian",
           "slogdet", "sort", "topk"]
