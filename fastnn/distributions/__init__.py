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
PyTorch's KL pairs for Pareto and ContinuousBernoulli (``kl_more``); the multivariate
LowRankMultivariateNormal, Wishart, LKJCholesky and LogisticNormal; the relaxed
(Concrete) RelaxedBernoulli and RelaxedOneHotCategorical; the ExponentialFamily base
(Bregman entropy and KL); PyTorch's transforms and the ``biject_to``/``transform_to``
registries.
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
from fastnn.distributions.constraint_registry import biject_to, transform_to
from fastnn.distributions.continuous_bernoulli import ContinuousBernoulli
from fastnn.distributions.counts import Binomial, Geometric, Poisson
from fastnn.distributions.counts_more import Multinomial, NegativeBinomial
from fastnn.distributions.distribution import Distribution
from fastnn.distributions.exp_family import ExponentialFamily
from fastnn.distributions.exponential import Exponential
from fastnn.distributions.gamma import Chi2, Gamma
from fastnn.distributions.heavy_tails import Cauchy, Gumbel, StudentT
from fastnn.distributions.heavy_tails_more import FisherSnedecor, GeneralizedPareto, HalfCauchy
from fastnn.distributions.independent import Independent
from fastnn.distributions.kl import kl_divergence, register_kl
from fastnn.distributions.kl_exp_family import _kl_expfamily_expfamily  # noqa: F401 (registers)
from fastnn.distributions.laplace import Laplace
from fastnn.distributions.lkj_cholesky import LKJCholesky
from fastnn.distributions.logistic_normal import LogisticNormal
from fastnn.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from fastnn.distributions.mixture_same_family import MixtureSameFamily
from fastnn.distributions.multivariate_normal import MultivariateNormal
from fastnn.distributions.normal import Normal
from fastnn.distributions.positive_laws import AbsTransform, HalfNormal, LogNormal
from fastnn.distributions.power_laws import InverseGamma, Kumaraswamy, Pareto, Weibull
from fastnn.distributions.relaxed_bernoulli import RelaxedBernoulli
from fastnn.distributions.relaxed_categorical import RelaxedOneHotCategorical
from fastnn.distributions.transformed_distribution import TransformedDistribution
from fastnn.distributions.transforms import (
    AffineTransform,
    CatTransform,
    ComposeTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    PowerTransform,
    ReshapeTransform,
    SigmoidTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StackTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
    identity_transform,
)
from fastnn.distributions.uniform import Uniform
from fastnn.distributions.von_mises import VonMises
from fastnn.distributions.wishart import Wishart

__all__ = [
    "AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "CatTransform",
    "Categorical", "Cauchy", "Chi2", "ComposeTransform", "ContinuousBernoulli",
    "CorrCholeskyTransform", "CumulativeDistributionTransform", "Dirichlet", "Distribution",
    "ExpTransform", "Exponential", "ExponentialFamily", "FisherSnedecor", "Gamma",
    "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal", "Independent",
    "IndependentTransform", "InverseGamma", "Kumaraswamy", "LKJCholesky", "Laplace",
    "LogNormal", "LogisticNormal", "LowRankMultivariateNormal", "LowerCholeskyTransform",
    "MixtureSameFamily", "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal",
    "OneHotCategorical", "OneHotCategoricalStraightThrough", "Pareto", "Poisson",
    "PositiveDefiniteTransform", "PowerTransform", "RelaxedBernoulli",
    "RelaxedOneHotCategorical", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
    "SoftplusTransform", "StackTransform", "StickBreakingTransform", "StudentT",
    "TanhTransform", "Transform", "TransformedDistribution", "Uniform", "VonMises", "Weibull",
    "Wishart", "biject_to", "constraints", "identity_transform", "kl_divergence",
    "register_kl", "transform_to", "transforms",
]
