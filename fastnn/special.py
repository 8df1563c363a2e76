"""``fnn.special``: PyTorch's ``torch.special`` names, where fastnn has the function.

Most are fastnn's own ops under torch.special's spelling (``expit`` is ``sigmoid``,
``gammaln`` is ``lgamma``, ``psi`` is ``digamma``); ``ndtr``, ``log_ndtr``, ``entr``,
``xlog1py`` and ``multigammaln`` are in :mod:`fastnn.ops.special_more`. Not here yet: the
Bessel functions (``i0``, ``i0e``, ``i1``, ``i1e`` and the others), ``ndtri``, ``erfcx``,
``polygamma`` above order 0, ``zeta``, ``gammainc``/``gammaincc`` and the orthogonal
polynomials: each raises AttributeError naming it.
"""

from __future__ import annotations

from fastnn.ops.activations import sigmoid as expit
from fastnn.ops.elementwise import erf
from fastnn.ops.elementwise_more import sinc, xlogy
from fastnn.ops.mathops import exp2, expm1, log1p, round
from fastnn.ops.nnops import log_softmax, softmax
from fastnn.ops.reduction import logsumexp
from fastnn.ops.special_gamma import digamma, erfc, erfinv, lgamma
from fastnn.ops.special_more import entr, log_ndtr, multigammaln, ndtr, xlog1py
from fastnn.ops.statistics import logit

gammaln = lgamma
psi = digamma

__all__ = ["digamma", "entr", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammaln",
           "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr",
           "psi", "round", "sinc", "softmax", "xlog1py", "xlogy"]
