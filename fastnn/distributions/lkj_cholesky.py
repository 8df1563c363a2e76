"""``LKJCholesky(dim, concentration=1.0)``: the LKJ distribution over Cholesky factors
``L`` of ``dim x dim`` correlation matrices, with density proportional to
``det(L L^T) ** (concentration - 1)`` on the correlation matrix, as PyTorch's (after
NumPyro): draws by the onion method (Lewandowski, Kurowicka and Joe, 2009), not
reparameterised."""

from __future__ import annotations

import math

import fastnn as fnn
from fastnn.autograd.grad_mode import no_grad
from fastnn.distributions import constraints
from fastnn.distributions.beta import Beta
from fastnn.distributions.distribution import Distribution, as_size
from fastnn.distributions.utils import broadcast_all, standard_normal

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """Cholesky factors of correlation matrices of size ``dim`` (>= 2), with
    ``concentration`` (eta > 0; 1 is uniform over correlation matrices)."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.shape
        # the Beta laws of the squared norms of the rows' off-diagonal parts: row k >= 1 of
        # the onion method (Sec. 3.2 of the paper) draws Beta(k / 2, beta0 - (k - 1) / 2),
        # beta0 = eta + (dim - 2) / 2 (row 0 is a dummy). PyTorch's first parameter is
        # k - 1/2, which is right for k = 1 only: its draws of dim >= 3 do not follow its
        # own log_prob (their correlations are too spread).
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = fnn.arange(self.dim - 1, dtype=self.concentration.dtype,
                            device=self.concentration.device)
        offset = fnn.cat([offset.new_zeros((1,)), offset])  # 0, 0, 1, ..., dim - 2
        self._beta = Beta(0.5 * (offset + 1), marginal_conc.unsqueeze(-1) - 0.5 * offset)
        super().__init__(batch_shape, (dim, dim), validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with concentration expanded to ``batch_shape``."""
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = as_size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        super(LKJCholesky, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()):
        """Onion-method draws of shape ``sample_shape + batch_shape + (dim, dim)``: row i
        is ``sqrt(y_i)`` times a uniform direction in its first i entries, with
        ``y_i ~ Beta`` and the diagonal entry completing the unit norm."""
        with no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            shape = tuple(self._extended_shape(sample_shape))
            u_normal = standard_normal(shape, y.dtype, y.device).tril(-1)
            norm = u_normal.norm(dim=-1, keepdim=True)
            first_row = fnn.arange(self.dim, device=y.device).unsqueeze(-1) == 0
            u_hypersphere = u_normal / fnn.where(first_row, fnn.ones_like(norm), norm)
            w = y.sqrt() * u_hypersphere
            tiny = fnn.finfo(w.dtype).tiny
            diag_elems = (1 - w.pow(2).sum(-1)).clamp(min=tiny).sqrt()
            return w + fnn.diag_embed(diag_elems)

    def log_prob(self, value):
        """``sum_i (2 (eta - 1) + dim - i) log L_ii`` (i = 2..dim) minus the log
        normaliser of the paper (page 1999)."""
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = fnn.diagonal(value, 0, -1, -2)[..., 1:]
        order = fnn.arange(2, self.dim + 1, dtype=self.concentration.dtype,
                           device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = (order * diag_elems.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = fnn.lgamma(alpha) * dm1
        numerator = fnn.mvlgamma(alpha - 0.5, dm1)
        pi_constant = 0.5 * dm1 * math.log(math.pi)  # D (D - 1) / 4 log(pi) in the paper
        return unnormalized_log_pdf - (pi_constant + numerator - denominator)
