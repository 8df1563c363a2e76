"""The named tuples that ops with several results return, as ``torch.return_types``.

``x.max(dim)`` gives ``max(values, indices)``: it unpacks as a tuple
(``values, indices = x.max(1)``) and names its parts (``x.max(1).indices``).
Indices are int64 tensors; values carry the gradient to the elements they select.
"""

from __future__ import annotations

from collections import namedtuple


def _repr(self) -> str:
    """As PyTorch prints them: ``fastnn.return_types.max(`` and a field a line."""
    fields = ",\n".join(f"{k}={v!r}" for k, v in zip(self._fields, self))
    return f"fastnn.return_types.{type(self).__name__}(\n{fields})"


def _pair(name: str, first: str = "values", second: str = "indices", what: str = ""):
    cls = namedtuple(name, (first, second))
    cls.__module__ = __name__
    cls.__qualname__ = name
    cls.__doc__ = f"``({first}, {second})``: what ``{name}`` returns{what}."
    cls.__repr__ = _repr
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
frexp = _pair("frexp", "mantissa", "exponent")
linalg_qr = _pair("linalg_qr", "Q", "R")
qr = _pair("qr", "Q", "R")
triangular_solve = _pair("triangular_solve", "solution", "cloned_coefficient")
linalg_eigh = _pair("linalg_eigh", "eigenvalues", "eigenvectors")
histogram = _pair("histogram", "hist", "bin_edges")
histogramdd = _pair("histogramdd", "hist", "bin_edges")
linalg_lu_factor = _pair("linalg_lu_factor", "LU", "pivots")
linalg_ldl_factor = _pair("linalg_ldl_factor", "LD", "pivots")


def _named(name: str, *fields: str):
    cls = namedtuple(name, fields)
    cls.__module__ = __name__
    cls.__qualname__ = name
    cls.__doc__ = f"``({', '.join(fields)})``: what ``{name}`` returns."
    cls.__repr__ = _repr
    return cls


linalg_svd = _named("linalg_svd", "U", "S", "Vh")
svd = _named("svd", "U", "S", "V")
linalg_lu_factor_ex = _named("linalg_lu_factor_ex", "LU", "pivots", "info")
linalg_ldl_factor_ex = _named("linalg_ldl_factor_ex", "LD", "pivots", "info")
linalg_lu = _named("linalg_lu", "P", "L", "U")
lu_unpack = _named("lu_unpack", "P", "L", "U")
linalg_lstsq = _named("linalg_lstsq", "solution", "residuals", "rank", "singular_values")

__all__ = ["aminmax", "cummax", "cummin", "histogram", "kthvalue", "linalg_cholesky_ex",
           "linalg_eigh", "linalg_inv_ex", "linalg_ldl_factor", "linalg_ldl_factor_ex",
           "linalg_lstsq", "linalg_lu", "linalg_lu_factor", "linalg_lu_factor_ex", "linalg_qr",
           "linalg_slogdet", "linalg_solve_ex", "linalg_svd", "lu_unpack", "max", "median",
           "min", "mode", "nanmedian", "qr", "slogdet", "sort", "svd", "topk",
           "triangular_solve"]
