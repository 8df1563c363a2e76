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
"""

from fastnn.distributions import constraints, kl_families, transforms  # noqa: F401 (registers)
from fastnn.distributions.bernoulli import Bernoulli
from fastnn.distributions.beta import Beta, Dirichlet
from fastnn.distributions.categorical import (
    Categorical,
    OneHotCategorical,
    OneHotCategoricalStraightThrough,
)
from fastnn.distributions.counts import Binomial, Geometric, Poisson
from fastnn.distributions.distribution import Distribution
from fastnn.distributions.exponential import Exponential
from fastnn.distributions.gamma import Chi2, Gamma
from fastnn.distributions.heavy_tails import Cauchy, Gumbel, StudentT
from fastnn.distributions.independent import Independent
from fastnn.distributions.kl import kl_divergence, register_kl
from fastnn.distributions.laplace import Laplace
from fastnn.distributions.mixture_same_family import MixtureSameFamily
from fastnn.distributions.multivariate_normal import MultivariateNormal
from fastnn.distributions.normal import Normal
from fastnn.distributions.positive_laws import AbsTransform, HalfNormal, LogNormal
from fastnn.distributions.transformed_distribution import TransformedDistribution
from fastnn.distributions.transforms import (
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    SigmoidTransform,
    TanhTransform,
    Transform,
)
from fastnn.distributions.uniform import Uniform

__all__ = [
    "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "Dirichlet",
    "Distribution", "Exponential", "Gamma", "Geometric", "Gumbel", "HalfNormal", "Independent",
    "Laplace", "LogNormal", "MixtureSameFamily", "MultivariateNormal", "Normal",
    "OneHotCategorical",
    "OneHotCategoricalStraightThrough", "Poisson", "StudentT", "Uniform",
    "constraints", "kl_divergence", "register_kl", "TransformedDistribution", "Transform",
    "AbsTransform", "AffineTransform", "ComposeTransform", "ExpTransform", "SigmoidTransform",
    "TanhTransform", "transforms",
]


# the rest of PyTorch's transforms and the constraint registries
from fastnn.distributions.constraint_registry import biject_to, transform_to  # noqa: E402
from fastnn.distributions.transforms import (  # noqa: E402
    CatTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    PowerTransform,
    ReshapeTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StackTransform,
    StickBreakingTransform,
    identity_transform,
)

__all__ += [
    "CatTransform", "CorrCholeskyTransform", "CumulativeDistributionTransform",
    "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
    "PowerTransform", "ReshapeTransform", "SoftmaxTransform", "SoftplusTransform",
    "StackTransform", "StickBreakingTransform", "biject_to", "identity_transform",
    "transform_to",
]

# the low-rank normal, the simplex laws, Wishart, LKJCholesky, ExponentialFamily
from fastnn.distributions.exp_family import ExponentialFamily  # noqa: E402
from fastnn.distributions.kl_exp_family import _kl_expfamily_expfamily  # noqa: E402,F401
from fastnn.distributions.lkj_cholesky import LKJCholesky  # noqa: E402
from fastnn.distributions.logistic_normal import LogisticNormal  # noqa: E402
from fastnn.distributions.lowrank_multivariate_normal import (  # noqa: E402
    LowRankMultivariateNormal,
)
from fastnn.distributions.relaxed_bernoulli import RelaxedBernoulli  # noqa: E402
from fastnn.distributions.relaxed_categorical import RelaxedOneHotCategorical  # noqa: E402
from fastnn.distributions.wishart import Wishart  # noqa: E402

__all__ += ["ExponentialFamily", "LKJCholesky", "LogisticNormal", "LowRankMultivariateNormal",
            "RelaxedBernoulli", "RelaxedOneHotCategorical", "Wishart"]
