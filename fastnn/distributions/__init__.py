"""``fastnn.distributions``: the probability distributions of ``torch.distributions``
that RL, VAE and probabilistic scripts use, composed from fastnn's tensor ops (any
device and floating dtype of the parameters; gradients through ``rsample``,
``log_prob``, ``entropy`` and ``kl_divergence``).

Draws come from fastnn's generator (``fnn.manual_seed`` makes them reproducible; they
are not PyTorch's draws). Argument validation is on by default, as PyTorch's.
``MultivariateNormal`` factors ``covariance_matrix=`` and ``precision_matrix=`` with
``fnn.linalg.cholesky``, as PyTorch's. Gamma draws (and Chi2, Beta, Dirichlet and
StudentT, built on them) come from the host generator with PyTorch's implicit
reparameterisation gradient; Poisson, Geometric and Binomial draws carry no gradient.

Also as PyTorch's: Weibull, Pareto, Kumaraswamy and InverseGamma (TransformedDistributions
through ``PowerTransform``), HalfCauchy, FisherSnedecor, GeneralizedPareto,
ContinuousBernoulli, VonMises (drawn on the host by NumPy's von Mises sampler, no
gradient) and the counts Multinomial and NegativeBinomial (draws without gradient), with
PyTorch's KL pairs for Pareto and ContinuousBernoulli (``kl_more``).
"""

from fastnn.distributions import (  # noqa: F401 (registers)
    constraints,
    kl_families,
    kl_more,
    transforms,
)
from fastnn.distributions.bernoulli import Bernoulli
from fastnn.distributions.beta import Beta, Dirichlet
from fastnn.distributions.categorical import (
    Categorical,
    OneHotCategorical,
    OneHotCategoricalStraightThrough,
)
from fastnn.distributions.continuous_bernoulli import ContinuousBernoulli
from fastnn.distributions.counts import Binomial, Geometric, Poisson
from fastnn.distributions.counts_more import Multinomial, NegativeBinomial
from fastnn.distributions.distribution import Distribution
from fastnn.distributions.exponential import Exponential
from fastnn.distributions.gamma import Chi2, Gamma
from fastnn.distributions.heavy_tails import Cauchy, Gumbel, StudentT
from fastnn.distributions.heavy_tails_more import FisherSnedecor, GeneralizedPareto, HalfCauchy
from fastnn.distributions.independent import Independent
from fastnn.distributions.kl import kl_divergence, register_kl
from fastnn.distributions.laplace import Laplace
from fastnn.distributions.mixture_same_family import MixtureSameFamily
from fastnn.distributions.multivariate_normal import MultivariateNormal
from fastnn.distributions.normal import Normal
from fastnn.distributions.positive_laws import AbsTransform, HalfNormal, LogNormal
from fastnn.distributions.power_laws import InverseGamma, Kumaraswamy, Pareto, Weibull
from fastnn.distributions.transformed_distribution import TransformedDistribution
from fastnn.distributions.transforms import (
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    PowerTransform,
    SigmoidTransform,
    TanhTransform,
    Transform,
)
from fastnn.distributions.uniform import Uniform
from fastnn.distributions.von_mises import VonMises

__all__ = [
    "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "Dirichlet",
    "Distribution", "Exponential", "Gamma", "Geometric", "Gumbel", "HalfNormal", "Independent",
    "Laplace", "LogNormal", "MixtureSameFamily", "MultivariateNormal", "Normal",
    "OneHotCategorical",
    "OneHotCategoricalStraightThrough", "Poisson", "StudentT", "Uniform",
    "constraints", "kl_divergence", "register_kl", "TransformedDistribution", "Transform",
    "AbsTransform", "AffineTransform", "ComposeTransform", "ExpTransform", "SigmoidTransform",
    "TanhTransform", "transforms",
    "ContinuousBernoulli", "FisherSnedecor", "GeneralizedPareto", "HalfCauchy", "InverseGamma",
    "Kumaraswamy", "Multinomial", "NegativeBinomial", "Pareto", "PowerTransform", "VonMises",
    "Weibull",
]
