"""``fnn.special``: PyTorch's ``torch.special``, every function of it.

Most are fastnn's own ops under torch.special's spelling (``expit`` is ``sigmoid``,
``gammaln`` is ``lgamma``, ``psi`` is ``digamma``); ``ndtr``, ``log_ndtr``, ``entr``,
``xlog1py`` and ``multigammaln`` are in :mod:`fastnn.ops.special_more`; the modified Bessel
functions (``i0``, ``i0e``, ``i1``, ``i1e``, ``modified_bessel_*``,
``scaled_modified_bessel_*``) in :mod:`fastnn.ops.special_bessel`; ``bessel_j0``/``j1``/
``y0``/``y1``, ``spherical_bessel_j0`` and ``airy_ai`` in :mod:`fastnn.ops.special_bessel_j`;
``zeta``, ``polygamma``, ``erfcx`` and ``ndtri`` in :mod:`fastnn.ops.special_zeta`;
``gammainc``/``gammaincc`` (computed on the host) in :mod:`fastnn.ops.special_gammainc`;
and the orthogonal polynomials in :mod:`fastnn.ops.special_poly`.
"""

from __future__ import annotations

from fastnn.ops.activations import sigmoid as expit
from fastnn.ops.elementwise import erf
from fastnn.ops.elementwise_more import sinc, xlogy
from fastnn.ops.mathops import exp2, expm1, log1p, round
from fastnn.ops.nnops import log_softmax, softmax
from fastnn.ops.reduction import logsumexp
from fastnn.ops.special_bessel import (
    i0,
    i0e,
    i1,
    i1e,
    modified_bessel_i0,
    modified_bessel_i1,
    modified_bessel_k0,
    modified_bessel_k1,
    scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
)
from fastnn.ops.special_bessel_j import (
    airy_ai,
    bessel_j0,
    bessel_j1,
    bessel_y0,
    bessel_y1,
    spherical_bessel_j0,
)
from fastnn.ops.special_gamma import digamma, erfc, erfinv, lgamma
from fastnn.ops.special_gammainc import gammainc, gammaincc
from fastnn.ops.special_more import entr, log_ndtr, multigammaln, ndtr, xlog1py
from fastnn.ops.special_poly import (
    chebyshev_polynomial_t,
    chebyshev_polynomial_u,
    chebyshev_polynomial_v,
    chebyshev_polynomial_w,
    hermite_polynomial_h,
    hermite_polynomial_he,
    laguerre_polynomial_l,
    legendre_polynomial_p,
    shifted_chebyshev_polynomial_t,
    shifted_chebyshev_polynomial_u,
    shifted_chebyshev_polynomial_v,
    shifted_chebyshev_polynomial_w,
)
from fastnn.ops.special_zeta import erfcx, ndtri, polygamma, zeta
from fastnn.ops.statistics import logit

gammaln = lgamma
psi = digamma

__all__ = ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
           "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma",
           "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc",
           "gammaincc", "gammaln", "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e",
           "i1", "i1e", "laguerre_polynomial_l", "legendre_polynomial_p", "log1p", "log_ndtr",
           "log_softmax", "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1",
           "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri",
           "polygamma", "psi", "round", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
           "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
           "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "sinc", "softmax",
           "spherical_bessel_j0", "xlog1py", "xlogy", "zeta"]
