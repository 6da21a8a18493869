"""kiln.distributions: probability distributions, as torch.distributions (torch 2.13).

Every distribution class, constraint, transform, the biject_to/transform_to registries and the
kl_divergence table of torch.distributions, written over kiln tensor ops (Python only).
Knowing differences from torch are listed in the docstrings of the modules concerned; the main
ones: gamma (and Beta/Dirichlet/Chi2/StudentT/FisherSnedecor/NegativeBinomial...) sampling is
kiln's own Python Marsaglia-Tsang sampler (kiln._C has no _standard_gamma), see _sampling;
Wishart does not repeat torch 2.13's spurious "Singular sample detected." warning; kiln's random
streams differ from torch's, so samples never match torch's draw for draw.
"""

from kiln.distributions import constraints, transforms, utils
from kiln.distributions.bernoulli import Bernoulli
from kiln.distributions.beta import Beta
from kiln.distributions.binomial import Binomial
from kiln.distributions.categorical import Categorical
from kiln.distributions.cauchy import Cauchy
from kiln.distributions.chi2 import Chi2
from kiln.distributions.constraint_registry import biject_to, transform_to
from kiln.distributions.continuous_bernoulli import ContinuousBernoulli
from kiln.distributions.dirichlet import Dirichlet
from kiln.distributions.distribution import Distribution
from kiln.distributions.exp_family import ExponentialFamily
from kiln.distributions.exponential import Exponential
from kiln.distributions.fishersnedecor import FisherSnedecor
from kiln.distributions.gamma import Gamma
from kiln.distributions.generalized_pareto import GeneralizedPareto
from kiln.distributions.geometric import Geometric
from kiln.distributions.gumbel import Gumbel
from kiln.distributions.half_cauchy import HalfCauchy
from kiln.distributions.half_normal import HalfNormal
from kiln.distributions.independent import Independent
from kiln.distributions.inverse_gamma import InverseGamma
from kiln.distributions.kl import kl_divergence, register_kl
from kiln.distributions.kumaraswamy import Kumaraswamy
from kiln.distributions.laplace import Laplace
from kiln.distributions.lkj_cholesky import LKJCholesky
from kiln.distributions.log_normal import LogNormal
from kiln.distributions.logistic_normal import LogisticNormal
from kiln.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from kiln.distributions.mixture_same_family import MixtureSameFamily
from kiln.distributions.multinomial import Multinomial
from kiln.distributions.multivariate_normal import MultivariateNormal
from kiln.distributions.negative_binomial import NegativeBinomial
from kiln.distributions.normal import Normal
from kiln.distributions.one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from kiln.distributions.pareto import Pareto
from kiln.distributions.poisson import Poisson
from kiln.distributions.relaxed_bernoulli import RelaxedBernoulli
from kiln.distributions.relaxed_categorical import RelaxedOneHotCategorical
from kiln.distributions.studentT import StudentT
from kiln.distributions.transformed_distribution import TransformedDistribution
from kiln.distributions.transforms import *  # noqa: F403
from kiln.distributions.transforms import identity_transform
from kiln.distributions.uniform import Uniform
from kiln.distributions.von_mises import VonMises
from kiln.distributions.weibull import Weibull
from kiln.distributions.wishart import Wishart

from kiln.distributions import (  # noqa: E402,F401  (the submodules, reachable as in torch)
    bernoulli, beta, binomial, categorical, cauchy, chi2, constraint_registry, continuous_bernoulli, dirichlet,
    distribution, exp_family, exponential, fishersnedecor, gamma, generalized_pareto, geometric, gumbel, half_cauchy,
    half_normal, independent, inverse_gamma, kl, kumaraswamy, laplace, lkj_cholesky, log_normal, logistic_normal,
    lowrank_multivariate_normal, mixture_same_family, multinomial, multivariate_normal, negative_binomial, normal,
    one_hot_categorical, pareto, poisson, relaxed_bernoulli, relaxed_categorical, studentT, transformed_distribution,
    uniform, von_mises, weibull, wishart,
)

__all__ = [
    "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "ContinuousBernoulli", "Dirichlet",
    "Distribution", "Exponential", "ExponentialFamily", "FisherSnedecor", "Gamma", "GeneralizedPareto", "Geometric",
    "Gumbel", "HalfCauchy", "HalfNormal", "Independent", "InverseGamma", "Kumaraswamy", "LKJCholesky", "Laplace",
    "LogNormal", "LogisticNormal", "LowRankMultivariateNormal", "MixtureSameFamily", "Multinomial",
    "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough",
    "Pareto", "Poisson", "RelaxedBernoulli", "RelaxedOneHotCategorical", "StudentT", "TransformedDistribution",
    "Uniform", "VonMises", "Weibull", "Wishart", "biject_to", "kl_divergence", "register_kl", "transform_to",
]
__all__.extend(transforms.__all__)
