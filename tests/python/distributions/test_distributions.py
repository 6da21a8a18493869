"""kiln.distributions against torch.distributions (torch 2.13).

Each case builds the same distribution in both libraries from the same numbers (scalar, batched
and broadcast parameters) and compares log_prob / cdf / icdf on values torch draws, mean,
variance, stddev, mode, entropy, shapes, support reprs, the gradients of log_prob + entropy with
respect to the parameters, then float32. Sampling is checked for shape, dtype, support and
(for large samples under a fixed kiln seed) the sample mean and variance against the analytic
moments within 5 standard errors. kl_divergence is compared on every registered pair, and
validate_args errors by type and message (torch's text with "torch" read as "kiln").
kiln's random streams differ from torch's, so no test compares samples draw for draw.
"""

from __future__ import annotations

import contextlib
import functools
import math
import warnings
import zlib

import numpy as np
import pytest
import torch

import kiln
import kiln.distributions as KD
import torch.distributions as TD
from torch_compare import assert_same_error, float64_values as as_np, raised, to_kiln

RNG = np.random.default_rng(1234)


def _u(*shape, lo=0.2, hi=2.0):
    return RNG.uniform(lo, hi, size=shape)


def _n(*shape):
    return RNG.standard_normal(size=shape)


def _simplex(*shape):
    x = RNG.uniform(0.1, 1.0, size=shape)
    return x / x.sum(-1, keepdims=True)


def _spd(n, batch=()):
    a = RNG.standard_normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _tril(n, batch=()):
    return np.linalg.cholesky(_spd(n, batch))


def _to(T, value, dtype, grad=False):
    """numpy arrays become T tensors of ``dtype`` (numbers stay numbers)."""
    if isinstance(value, np.ndarray):
        t = T.tensor(value.tolist(), dtype=getattr(T, dtype))
        if grad and t.is_floating_point():
            t.requires_grad_(True)
        return t
    return value


# (id, class name, parameters, options). Parameters are numpy arrays (tensors in both libraries)
# or Python numbers; "int" marks parameters that must stay integral.
CASES = [
    ("normal-scalar", "Normal", {"loc": 0.3, "scale": 1.7}, {}),
    ("normal-batch", "Normal", {"loc": _n(3), "scale": _u(3)}, {}),
    ("normal-broadcast", "Normal", {"loc": _n(2, 1), "scale": _u(3)}, {}),
    ("uniform-batch", "Uniform", {"low": _n(3), "high": _n(3) + 3.0}, {}),
    ("uniform-scalar", "Uniform", {"low": -1.0, "high": 2.0}, {}),
    ("bernoulli-probs", "Bernoulli", {"probs": _u(4, lo=0.05, hi=0.95)}, {}),
    ("bernoulli-logits", "Bernoulli", {"logits": _n(2, 3)}, {}),
    ("categorical-probs", "Categorical", {"probs": _simplex(2, 4)}, {}),
    ("categorical-logits", "Categorical", {"logits": _n(5)}, {}),
    ("onehot-probs", "OneHotCategorical", {"probs": _simplex(3, 4)}, {}),
    ("binomial", "Binomial", {"total_count": np.array([5.0, 10.0, 10.0]), "probs": _u(3, lo=0.1, hi=0.9)},
     {"int": ["total_count"]}),
    ("binomial-homog", "Binomial", {"total_count": 6, "logits": _n(2, 2)}, {}),
    ("multinomial", "Multinomial", {"total_count": 7, "probs": _simplex(2, 3)}, {}),
    ("poisson", "Poisson", {"rate": _u(4, lo=0.5, hi=6.0)}, {}),
    ("exponential", "Exponential", {"rate": _u(2, 2)}, {}),
    ("gamma", "Gamma", {"concentration": _u(3, lo=0.5, hi=4.0), "rate": _u(3)}, {}),
    ("gamma-broadcast", "Gamma", {"concentration": _u(2, 1, lo=0.5, hi=4.0), "rate": 1.5}, {}),
    ("beta", "Beta", {"concentration1": _u(3, lo=0.5, hi=4.0), "concentration0": _u(3, lo=0.5, hi=4.0)}, {}),
    ("beta-scalar", "Beta", {"concentration1": 2.0, "concentration0": 3.0}, {}),
    ("dirichlet", "Dirichlet", {"concentration": _u(2, 4, lo=0.5, hi=3.0)}, {}),
    ("laplace", "Laplace", {"loc": _n(3), "scale": _u(3)}, {}),
    ("cauchy", "Cauchy", {"loc": _n(3), "scale": _u(3)}, {}),
    ("lognormal", "LogNormal", {"loc": _n(3) * 0.3, "scale": _u(3, lo=0.2, hi=0.8)}, {}),
    ("studentt", "StudentT", {"df": np.array([0.8, 1.5, 3.0, 8.0]), "loc": _n(4), "scale": _u(4)}, {}),
    ("chi2", "Chi2", {"df": _u(3, lo=1.0, hi=6.0)}, {}),
    ("geometric-probs", "Geometric", {"probs": _u(3, lo=0.1, hi=0.9)}, {}),
    ("geometric-logits", "Geometric", {"logits": _n(3)}, {}),
    ("halfnormal", "HalfNormal", {"scale": _u(3)}, {}),
    ("halfcauchy", "HalfCauchy", {"scale": _u(3)}, {}),
    ("gumbel", "Gumbel", {"loc": _n(3), "scale": _u(3)}, {}),
    ("weibull", "Weibull", {"scale": _u(3), "concentration": _u(3, lo=0.5, hi=3.0)}, {}),
    ("pareto", "Pareto", {"scale": _u(3), "alpha": np.array([0.5, 1.5, 3.0])}, {}),
    ("vonmises", "VonMises", {"loc": _n(3), "concentration": np.array([0.5, 2.0, 8.0])}, {}),
    ("mvn-cov", "MultivariateNormal", {"loc": _n(2, 3), "covariance_matrix": _spd(3, (2,))}, {}),
    ("mvn-prec", "MultivariateNormal", {"loc": _n(3), "precision_matrix": _spd(3)}, {}),
    ("mvn-tril", "MultivariateNormal", {"loc": _n(2, 3), "scale_tril": _tril(3)}, {}),
    ("lowrank-mvn", "LowRankMultivariateNormal", {"loc": _n(2, 3), "cov_factor": _n(2, 3, 2), "cov_diag": _u(2, 3)},
     {}),
    ("relaxed-bernoulli", "RelaxedBernoulli", {"temperature": np.array(0.7), "probs": _u(3, lo=0.1, hi=0.9)}, {}),
    ("relaxed-onehot", "RelaxedOneHotCategorical", {"temperature": np.array(0.5), "probs": _simplex(2, 3)}, {}),
    ("cont-bernoulli", "ContinuousBernoulli", {"probs": np.array([0.1, 0.4995, 0.7, 0.95])}, {}),
    ("cont-bernoulli-logits", "ContinuousBernoulli", {"logits": _n(3)}, {}),
    ("negbinomial", "NegativeBinomial", {"total_count": _u(3, lo=1.0, hi=5.0), "probs": _u(3, lo=0.1, hi=0.8)}, {}),
    ("logistic-normal", "LogisticNormal", {"loc": _n(2, 3), "scale": _u(2, 3)}, {}),
    ("kumaraswamy", "Kumaraswamy", {"concentration1": _u(3, lo=0.5, hi=3.0), "concentration0": _u(3, lo=0.5, hi=3.0)},
     {}),
    ("fisher", "FisherSnedecor", {"df1": np.array([1.5, 3.0, 6.0]), "df2": np.array([3.0, 5.0, 9.0])}, {}),
    ("wishart", "Wishart", {"df": np.array([4.0, 6.0]), "covariance_matrix": _spd(3, (2,))}, {}),
    # kiln.cholesky_solve's gradient keeps to the triangle it reads (torch's spills into the unused upper
    # triangle), so only the lower triangle of d/d scale_tril is compared.
    ("wishart-tril", "Wishart", {"df": 5.0, "scale_tril": _tril(2)}, {}),
    ("lkj", "LKJCholesky", {"dim": 3, "concentration": np.array([0.5, 2.0])}, {}),
    ("gen-pareto", "GeneralizedPareto", {"loc": _n(3), "scale": _u(3), "concentration": np.array([-0.3, 0.0, 0.4])},
     {}),
    ("inverse-gamma", "InverseGamma", {"concentration": _u(3, lo=0.5, hi=4.0), "rate": _u(3)}, {}),
]
CASE_IDS = [c[0] for c in CASES]


def build(T, case, dtype="float64", grad=False):
    _, name, params, _ = case
    cls = getattr(T.distributions, name)
    args = {k: _to(T, v, dtype, grad) for k, v in params.items()}
    return cls(**args), args


def values_for(case, dtype="float64"):
    """Points to evaluate at: torch draws from its own distribution (plus a sample dim)."""
    torch.manual_seed(0)
    d, _ = build(torch, case, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = d.sample((2,))
    return x


def close(k, t, rtol, atol):
    assert tuple(k.shape) == tuple(t.shape), (tuple(k.shape), tuple(t.shape))
    assert str(k.dtype).replace("kiln.", "") == str(t.dtype).replace("torch.", ""), (k.dtype, t.dtype)
    np.testing.assert_allclose(as_np(k), as_np(t), rtol=rtol, atol=atol, equal_nan=True)


def outcome(fn):
    """(result, exception type) of ``fn()``; NotImplementedError and friends become the type."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(), None
    except (NotImplementedError, ValueError, AssertionError) as error:
        return None, type(error)


TOLERANCE = {"float64": (1e-7, 1e-9), "float32": (3e-4, 3e-5)}
MOMENTS = ("mean", "variance", "stddev", "mode")


class _torch_default_float64:
    """torch 2.13's GeneralizedPareto compares with a default-dtype torch.tensor(0.0), so its float64
    log_prob/cdf raise "Double did not match Float"; the reference for that case runs with torch's
    default dtype set to float64 (kiln computes float64 directly)."""

    def __enter__(self):
        self.saved = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)

    def __exit__(self, *exc):
        torch.set_default_dtype(self.saved)


def _torch_context(case, dtype):
    if case[1] == "GeneralizedPareto" and dtype == "float64":
        return _torch_default_float64()
    return contextlib.nullcontext()


def _compare_outcomes(k_fn, t_fn, rtol, atol, what, context=contextlib.nullcontext):
    k_value, k_error = outcome(k_fn)
    with context():
        t_value, t_error = outcome(t_fn)
    assert k_error == t_error, f"{what}: kiln raised {k_error}, torch raised {t_error}"
    if t_error is None:
        close(k_value, t_value, rtol, atol)
    return t_error is None


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_values_match_torch(case, dtype):
    rtol, atol = TOLERANCE[dtype]
    ctx = lambda: _torch_context(case, dtype)  # noqa: E731
    kd, _ = build(kiln, case, dtype)
    td, _ = build(torch, case, dtype)
    assert tuple(kd.batch_shape) == tuple(td.batch_shape)
    assert tuple(kd.event_shape) == tuple(td.event_shape)
    assert kd.has_rsample == td.has_rsample
    assert kd.has_enumerate_support == td.has_enumerate_support
    assert type(kd.support).__name__ == type(td.support).__name__
    assert repr(kd).split("(")[0] == repr(td).split("(")[0]
    for name in MOMENTS:
        _compare_outcomes(lambda: getattr(kd, name), lambda: getattr(td, name), rtol, atol, name, ctx)
    _compare_outcomes(kd.entropy, td.entropy, rtol, atol, "entropy", ctx)
    x = values_for(case, dtype)
    kx = to_kiln(x)
    _compare_outcomes(lambda: kd.log_prob(kx), lambda: td.log_prob(x), rtol, atol, "log_prob", ctx)
    _compare_outcomes(lambda: kd.cdf(kx), lambda: td.cdf(x), rtol, atol, "cdf", ctx)
    if len(td.event_shape) == 0:
        u = torch.from_numpy(RNG.uniform(0.05, 0.95, size=(2,) + tuple(td.batch_shape))).to(getattr(torch, dtype))
        _compare_outcomes(lambda: kd.icdf(to_kiln(u)), lambda: td.icdf(u), rtol * 10, atol * 10, "icdf", ctx)
    if td.has_enumerate_support:
        for expand in (True, False):
            _compare_outcomes(lambda: kd.enumerate_support(expand), lambda: td.enumerate_support(expand), rtol, atol,
                              "enumerate_support")


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_gradients_match_torch(case):
    kd, kargs = build(kiln, case, grad=True)
    td, targs = build(torch, case, grad=True)
    x = values_for(case)
    kx = to_kiln(x)
    names = [n for n in targs if isinstance(targs[n], torch.Tensor) and targs[n].requires_grad
             and n not in case[3].get("int", [])]

    def loss(d, value, lib):
        total = d.log_prob(value).sum()
        e, err = outcome(d.entropy)
        if err is None:
            total = total + e.sum()
        return total

    with _torch_context(case, "float64"):
        t_loss = loss(td, x, torch)
    k_loss = loss(kd, kx, kiln)
    np.testing.assert_allclose(float(k_loss.detach()), float(t_loss.detach()), rtol=1e-8)
    if not names:  # all-number parameters: nothing to differentiate
        return
    t_inputs = [targs[n] for n in names]
    k_inputs = [kargs[n] for n in names]
    t_grads = torch.autograd.grad(t_loss, t_inputs, allow_unused=True)
    k_grads = kiln.autograd.grad(k_loss, k_inputs, allow_unused=True)
    for name, kg, tg in zip(names, k_grads, t_grads):
        assert (kg is None) == (tg is None), name
        if tg is not None:
            kv, tv = as_np(kg), as_np(tg)
            np.testing.assert_allclose(kv, tv, rtol=1e-6, atol=1e-9, err_msg=name)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_expand_matches_torch(case):
    kd, _ = build(kiln, case)
    td, _ = build(torch, case)
    shape = (2,) + tuple(td.batch_shape)
    ke, te = kd.expand(shape), td.expand(shape)
    assert type(ke) is type(kd)
    assert tuple(ke.batch_shape) == tuple(te.batch_shape) == shape
    assert tuple(ke.event_shape) == tuple(te.event_shape)
    assert ke._validate_args == kd._validate_args
    x = values_for(case)[:1]
    with _torch_context(case, "float64"):
        _compare_outcomes(lambda: ke.log_prob(to_kiln(x)), lambda: te.log_prob(x), 1e-7, 1e-9, "log_prob")
        _compare_outcomes(lambda: ke.mean, lambda: te.mean, 1e-7, 1e-9, "mean")
        # the expanded entropy is the entropy expanded (torch 2.13's expanded Multinomial lacks _binomial)
        _compare_outcomes(ke.entropy, lambda: td.entropy().expand(shape), 1e-7, 1e-9, "entropy")


@pytest.mark.parametrize("case", [c for c in CASES if c[1] in ("MultivariateNormal", "LowRankMultivariateNormal",
                                                               "Wishart")], ids=lambda c: c[0])
def test_matrix_parameterizations_match_torch(case):
    kd, _ = build(kiln, case)
    td, _ = build(torch, case)
    for name in ("covariance_matrix", "precision_matrix", "scale_tril"):
        close(getattr(kd, name), getattr(td, name), 1e-8, 1e-10)


def _sample_dtype(td):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return td.sample().dtype


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_sample_shape_dtype_support(case):
    kiln.manual_seed(7)
    kd, kargs = build(kiln, case, grad=True)
    td, _ = build(torch, case)
    shape = (4, 3)
    s = kd.sample(shape)
    assert tuple(s.shape) == shape + tuple(td.batch_shape) + tuple(td.event_shape)
    assert str(s.dtype).replace("kiln.", "") == str(_sample_dtype(td)).replace("torch.", "")
    assert not s.requires_grad
    assert bool(kd.support.check(s).all())
    assert tuple(kd.sample().shape) == tuple(td.batch_shape) + tuple(td.event_shape)
    if kd.has_rsample:
        r = kd.rsample((5,))
        assert tuple(r.shape) == (5,) + tuple(td.batch_shape) + tuple(td.event_shape)
        assert r.requires_grad == any(isinstance(v, kiln.Tensor) and v.requires_grad for v in kargs.values())
        assert bool(kd.support.check(r.detach()).all())
    else:
        assert_same_error(lambda: kd.rsample(), lambda: td.rsample())  # torch's message is empty


# Cases whose sample mean/variance are compared with the analytic moments (finite fourth moments).
NO_VARIANCE_CHECK = {"studentt", "pareto", "fisher", "inverse-gamma", "cauchy", "halfcauchy", "gen-pareto",
                     "weibull", "lognormal"}
NO_MOMENT_CHECK = {"categorical-probs", "categorical-logits", "cauchy", "halfcauchy", "vonmises", "lkj",
                   "relaxed-bernoulli", "relaxed-onehot", "logistic-normal", "studentt", "pareto", "fisher",
                   "inverse-gamma", "gen-pareto"}
N_DRAWS = {"wishart": 4000, "wishart-tril": 4000, "lkj": 4000}


def _within(sample_stat, expected, se, what):
    sample_stat, expected, se = (np.asarray(a, dtype=np.float64) for a in (sample_stat, expected, se))
    bound = 5 * se + 1e-9
    assert np.all(np.abs(sample_stat - expected) <= bound), (what, sample_stat, expected, bound)


@pytest.mark.parametrize("case", [c for c in CASES if c[0] not in NO_MOMENT_CHECK], ids=lambda c: c[0])
def test_sample_moments(case):
    kiln.manual_seed(2024)
    kd, _ = build(kiln, case)
    n = N_DRAWS.get(case[0], 20000)
    x = as_np(kd.sample((n,)))
    mean, var = as_np(kd.mean), as_np(kd.variance)
    finite = np.isfinite(mean)
    centered = x - x.mean(0)
    s2 = (centered ** 2).mean(0)
    _within(x.mean(0)[finite], mean[finite], np.sqrt(var[finite] / n), "mean")
    if case[0] not in NO_VARIANCE_CHECK:
        m4 = (centered ** 4).mean(0)
        finite = np.isfinite(var)
        _within(s2[finite], var[finite], np.sqrt(np.maximum(m4 - s2 ** 2, 0)[finite] / n), "variance")


def _reference_cdf(case, kd, td, points):
    """The cdf at ``points``: kiln's (compared with torch's above) or, where torch has none
    (StudentT, FisherSnedecor), the regularized incomplete beta from mpmath (installed with torch)."""
    if case[1] not in ("StudentT", "FisherSnedecor"):
        return as_np(kd.cdf(kiln.from_numpy(points.copy())))
    mpmath = pytest.importorskip("mpmath", reason="optional package mpmath is not installed "
                                 "(a torch dependency; it gives the cdfs torch lacks)")
    out = np.empty_like(points)
    for index in np.ndindex(points.shape):
        b = index[1:]
        if case[1] == "StudentT":
            df, loc, scale = (float(as_np(getattr(td, n))[b]) for n in ("df", "loc", "scale"))
            t = (points[index] - loc) / scale
            tail = 0.5 * float(mpmath.betainc(df / 2, 0.5, 0, df / (df + t * t), regularized=True))
            out[index] = 1 - tail if t > 0 else tail
        else:
            d1, d2 = float(as_np(td.df1)[b]), float(as_np(td.df2)[b])
            x = points[index]
            out[index] = float(mpmath.betainc(d1 / 2, d2 / 2, 0, d1 * x / (d1 * x + d2), regularized=True))
    return out


@pytest.mark.parametrize("case", [c for c in CASES if c[1] in ("Cauchy", "HalfCauchy", "StudentT", "Pareto",
                                                               "FisherSnedecor", "InverseGamma", "GeneralizedPareto",
                                                               "Gamma", "Weibull", "Kumaraswamy", "Gumbel", "Beta",
                                                               "LogNormal")],
                         ids=lambda c: c[0])
def test_sample_cdf(case):
    """The empirical CDF of 20000 kiln draws at a few points (torch draws) is the cdf, within 5 SE:
    a distribution check that also covers heavy tails."""
    kiln.manual_seed(99)
    kd, _ = build(kiln, case)
    td, _ = build(torch, case)
    n = 20000
    x = as_np(kd.sample((n,)))
    torch.manual_seed(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        points = td.sample((3,)).double().numpy()
    if case[1] == "Beta":
        ref = None
        sc = pytest.importorskip("mpmath", reason="optional package mpmath is not installed "
                                 "(a torch dependency; it gives the Beta cdf torch lacks)")
        a, b = as_np(td.concentration1), as_np(td.concentration0)
        ref = np.vectorize(lambda p, aa, bb: float(sc.betainc(aa, bb, 0, p, regularized=True)))(points, a, b)
    else:
        ref = _reference_cdf(case, kd, td, points)
    empirical = (x[None] <= points[:, None]).mean(1)
    _within(empirical, ref, np.sqrt(ref * (1 - ref) / n), "cdf")


def _case(case_id):
    return next(c for c in CASES if c[0] == case_id)


@pytest.mark.parametrize("case_id", ["categorical-probs", "categorical-logits"])
def test_categorical_sample_frequencies(case_id):
    kiln.manual_seed(3)
    kd, _ = build(kiln, _case(case_id))
    n = 20000
    x = as_np(kd.sample((n,))).astype(np.int64)
    p = as_np(kd.probs)
    freq = (x[..., None] == np.arange(p.shape[-1])).mean(0)
    _within(freq, p, np.sqrt(p * (1 - p) / n), "frequency")


def test_vonmises_sample_circular_moments():
    kiln.manual_seed(4)
    kd, _ = build(kiln, _case("vonmises"))
    n = 20000
    x = as_np(kd.sample((n,)))
    assert np.all((x >= -math.pi) & (x < math.pi))
    loc = as_np(kd.loc)
    resultant = np.cos(x - loc)  # E[cos(x - loc)] = I1(k)/I0(k) = 1 - circular variance
    expected = 1 - as_np(kd.variance)
    _within(resultant.mean(0), expected, resultant.std(0) / math.sqrt(n), "mean resultant length")
    _within(np.sin(x - loc).mean(0), 0.0, np.sin(x - loc).std(0) / math.sqrt(n), "symmetry")


def test_lkj_sample_correlation_marginals():
    """Off-diagonal entries of L L^T are scaled Beta(eta - 1 + d/2, same) on (-1, 1): mean 0,
    variance 1 / (2 eta + d - 1), for every pair (torch 2.13's sampler fails this for rows >= 2;
    see kiln/distributions/lkj_cholesky.py)."""
    kiln.manual_seed(5)
    kd, _ = build(kiln, _case("lkj"))
    n = 4000
    L = as_np(kd.sample((n,)))
    corr = L @ np.swapaxes(L, -1, -2)
    np.testing.assert_allclose(np.diagonal(corr, axis1=-2, axis2=-1), 1.0, atol=1e-12)
    eta, d = as_np(kd.concentration), 3
    r = corr[..., 1, 0], corr[..., 2, 0], corr[..., 2, 1]
    for ri in r:
        _within(ri.mean(0), 0.0, ri.std(0) / math.sqrt(n), "mean")
        expected = 1 / (2 * eta + d - 1)
        _within((ri ** 2).mean(0), expected, (ri ** 2).std(0) / math.sqrt(n), "variance")


def test_relaxed_bernoulli_sample_threshold():
    """P(X > 1/2) = probs for the binary Concrete (logistic noise around the logits)."""
    kiln.manual_seed(6)
    kd, _ = build(kiln, _case("relaxed-bernoulli"))
    n = 20000
    above = (as_np(kd.sample((n,))) > 0.5).mean(0)
    p = as_np(kd.probs)
    _within(above, p, np.sqrt(p * (1 - p) / n), "P(X > 1/2)")


def test_relaxed_onehot_sample_argmax():
    """The argmax of a Concrete sample is Categorical(probs) (the Gumbel-max trick)."""
    kiln.manual_seed(8)
    kd, _ = build(kiln, _case("relaxed-onehot"))
    n = 20000
    x = as_np(kd.sample((n,)))
    np.testing.assert_allclose(x.sum(-1), 1.0, atol=1e-9)
    p = as_np(kd.probs)
    freq = (x.argmax(-1)[..., None] == np.arange(3)).mean(0)
    _within(freq, p, np.sqrt(p * (1 - p) / n), "argmax frequency")


def test_logistic_normal_sample_inverts_to_normal():
    kiln.manual_seed(9)
    kd, _ = build(kiln, _case("logistic-normal"))
    n = 20000
    z = as_np(KD.StickBreakingTransform().inv(kd.sample((n,))))
    loc, scale = as_np(kd.loc), as_np(kd.scale)
    _within(z.mean(0), loc, scale / math.sqrt(n), "mean")
    _within(z.var(0), scale ** 2, scale ** 2 * math.sqrt(2 / n), "variance")


def test_rsample_gradient_location_scale():
    """d rsample / d loc = 1 and d rsample / d scale = (x - loc) / scale for the location-scale families."""
    kiln.manual_seed(10)
    for name in ("Normal", "Laplace", "Cauchy"):
        loc = kiln.tensor([0.5, -1.0], dtype=kiln.float64, requires_grad=True)
        scale = kiln.tensor([2.0, 0.3], dtype=kiln.float64, requires_grad=True)
        x = getattr(KD, name)(loc, scale).rsample((50,))
        g_loc, g_scale = kiln.autograd.grad(x.sum(), [loc, scale])
        np.testing.assert_allclose(as_np(g_loc), [50.0, 50.0])
        np.testing.assert_allclose(as_np(g_scale), ((as_np(x) - as_np(loc)) / as_np(scale)).sum(0), rtol=1e-10)


def test_gamma_rsample_gradient_matches_torch_standard_gamma_grad():
    """kiln's implicit reparameterization gradient on kiln's draws agrees with torch's
    _standard_gamma_grad (torch's own series/asymptotic approximation, good to ~1e-4 here)."""
    kiln.manual_seed(11)
    alpha = kiln.tensor([0.05, 0.3, 1.0, 2.5, 7.0, 40.0, 300.0], dtype=kiln.float64, requires_grad=True)
    rate = kiln.tensor(1.0, dtype=kiln.float64)
    x = KD.Gamma(alpha, rate).rsample((30,))
    (g,) = kiln.autograd.grad(x.sum(), [alpha])
    # per-sample gradients: differentiate each draw on its own
    xs = x.detach()
    from kiln.distributions._sampling import standard_gamma_grad
    mine = as_np(standard_gamma_grad(xs, alpha.detach().expand(xs.shape)))
    ref = torch._standard_gamma_grad(torch.tensor(as_np(alpha.detach())).expand(xs.shape), torch.tensor(as_np(xs)))
    np.testing.assert_allclose(as_np(g), mine.sum(0), rtol=1e-12)
    np.testing.assert_allclose(mine, ref.numpy(), rtol=2e-3, atol=1e-12)


def test_gamma_rsample_gradient_against_mpmath():
    mpmath = pytest.importorskip("mpmath", reason="optional package mpmath is not installed "
                                 "(a torch dependency; the high-precision reference)")
    from kiln.distributions._sampling import standard_gamma_grad
    a = np.array([0.3, 1.5, 4.0, 0.5])
    x = np.array([1.4972, 0.2, 9.0, 40.0])
    got = as_np(standard_gamma_grad(kiln.tensor(x.tolist(), dtype=kiln.float64),
                                    kiln.tensor(a.tolist(), dtype=kiln.float64)))
    with mpmath.workdps(30):  # scoped: other files' mpmath references set their own precision
        for ai, xi, gi in zip(a, x, got):
            upper = lambda s: mpmath.gammainc(s, xi, mpmath.inf, regularized=True)  # noqa: E731
            density = mpmath.mpf(xi) ** (ai - 1) * mpmath.e ** (-xi) / mpmath.gamma(ai)
            assert abs(gi - float(mpmath.diff(upper, ai) / density)) <= 1e-6 * abs(gi)


@pytest.mark.parametrize("name", ["Beta", "Dirichlet", "Gamma"])
def test_rsample_gradient_is_unbiased(name):
    """Per-draw gradients d x / d parameter (one parameter copy per draw) average to d E[x] / d parameter,
    within 5 standard errors."""
    kiln.manual_seed(12)
    n = 6000

    def param(value, *shape):
        return kiln.full((n,) + shape, value, dtype=kiln.float64, requires_grad=True)

    if name == "Dirichlet":
        c = kiln.tensor([0.7, 2.0, 3.5], dtype=kiln.float64).expand(n, 3).clone().requires_grad_(True)
        params, x = [c], KD.Dirichlet(c).rsample()[..., 0]
        total = 0.7 + 2.0 + 3.5
        expected = [[(total - 0.7) / total ** 2, -0.7 / total ** 2, -0.7 / total ** 2]]
    elif name == "Beta":
        a, b = param(1.5), param(0.8)
        params, x = [a, b], KD.Beta(a, b).rsample()
        expected = [0.8 / 2.3 ** 2, -1.5 / 2.3 ** 2]
    else:
        a, r = param(0.6), param(2.0)
        params, x = [a, r], KD.Gamma(a, r).rsample()
        expected = [1 / 2.0, -0.6 / 4.0]
    grads = kiln.autograd.grad(x.sum(), params)
    for g, e in zip(grads, expected):
        g = as_np(g)
        _within(g.mean(0), e, g.std(0) / math.sqrt(n), f"{name} gradient")


# Parameters with batch shape (3,) for every class in the KL table (event shape (2,) for the normals).
KL_PARAMS = {
    "Bernoulli": lambda: {"probs": np.array([0.0, 0.3, 1.0])},
    "Beta": lambda: {"concentration1": _u(3, lo=0.5, hi=3.0), "concentration0": _u(3, lo=0.5, hi=3.0)},
    "Binomial": lambda: {"total_count": np.array([4.0, 6.0, 6.0]), "probs": _u(3, lo=0.1, hi=0.9)},
    "Categorical": lambda: {"probs": np.array([[0.0, 0.5, 0.5], [0.2, 0.3, 0.5], [0.6, 0.4, 0.0]])},
    "Cauchy": lambda: {"loc": _n(3), "scale": _u(3)},
    "ContinuousBernoulli": lambda: {"probs": np.array([0.2, 0.4999, 0.8])},
    "Dirichlet": lambda: {"concentration": _u(3, 4, lo=0.5, hi=3.0)},
    "Exponential": lambda: {"rate": _u(3)},
    "Gamma": lambda: {"concentration": _u(3, lo=0.5, hi=3.0), "rate": _u(3)},
    "Geometric": lambda: {"probs": _u(3, lo=0.1, hi=0.9)},
    "Gumbel": lambda: {"loc": _n(3), "scale": _u(3)},
    "HalfNormal": lambda: {"scale": _u(3)},
    "Laplace": lambda: {"loc": _n(3), "scale": _u(3)},
    "LowRankMultivariateNormal": lambda: {"loc": _n(3, 2), "cov_factor": _n(3, 2, 1), "cov_diag": _u(3, 2)},
    "MultivariateNormal": lambda: {"loc": _n(3, 2), "scale_tril": _tril(2, (3,))},
    "Normal": lambda: {"loc": _n(3), "scale": _u(3)},
    "OneHotCategorical": lambda: {"probs": _simplex(3, 4)},
    "Pareto": lambda: {"scale": _u(3), "alpha": np.array([0.8, 1.5, 3.0])},
    "Poisson": lambda: {"rate": _u(3, lo=0.5, hi=4.0)},
    "Uniform": lambda: {"low": np.array([0.1, -0.5, 1.5]), "high": np.array([0.9, 1.2, 3.0])},
}
_SKIP_GENERIC = {"ExponentialFamily", "TransformedDistribution", "Independent"}
KL_PAIRS = sorted((p.__name__, q.__name__) for p, q in KD.kl._KL_REGISTRY
                  if p.__name__ not in _SKIP_GENERIC and q.__name__ not in _SKIP_GENERIC)


def _kl_pair(p_name, q_name, seed):
    global RNG
    saved, RNG = RNG, np.random.default_rng(seed)
    try:
        p_params, q_params = KL_PARAMS[p_name](), KL_PARAMS[q_name]()
    finally:
        RNG = saved
    if (p_name, q_name) == ("Binomial", "Binomial"):
        q_params["total_count"] = np.array([4.0, 6.0, 5.0])  # one p.total_count > q.total_count: +inf
    made = []
    for T in (kiln, torch):
        p = build(T, ("p", p_name, p_params, {}), grad=True)
        q = build(T, ("q", q_name, q_params, {}), grad=True)
        made.append((p, q))
    return made


def test_kl_table_is_torchs():
    assert len(KD.kl._KL_REGISTRY) == len(TD.kl._KL_REGISTRY)
    assert sorted((p.__name__, q.__name__) for p, q in KD.kl._KL_REGISTRY) == \
        sorted((p.__name__, q.__name__) for p, q in TD.kl._KL_REGISTRY)


@pytest.mark.parametrize("pair", KL_PAIRS, ids=lambda pq: f"{pq[0]}-{pq[1]}")
def test_kl_divergence_matches_torch(pair):
    ((kp, kpa), (kq, kqa)), ((tp, tpa), (tq, tqa)) = _kl_pair(*pair, seed=zlib.crc32(repr(pair).encode()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_value, t_error = outcome(lambda: TD.kl_divergence(tp, tq))
        k_value, k_error = outcome(lambda: KD.kl_divergence(kp, kq))
    assert k_error == t_error
    if t_error is not None:
        return
    close(k_value, t_value, 1e-8, 1e-10)
    # gradients where the divergence is finite
    t_finite = torch.isfinite(t_value)
    if not bool(t_finite.any()):
        return
    t_inputs = [v for v in list(tpa.values()) + list(tqa.values()) if isinstance(v, torch.Tensor) and v.requires_grad]
    k_inputs = [v for v in list(kpa.values()) + list(kqa.values()) if isinstance(v, kiln.Tensor) and v.requires_grad]
    mask = t_finite.double()
    t_grads = torch.autograd.grad((torch.where(t_finite, t_value, 0.0) * mask).sum(), t_inputs, allow_unused=True)
    k_mask = kiln.from_numpy(t_finite.numpy().copy())
    k_sum = kiln.where(k_mask, k_value, kiln.zeros_like(k_value)).sum()
    k_grads = kiln.autograd.grad(k_sum, k_inputs, allow_unused=True)
    for kg, tg in zip(k_grads, t_grads):
        if tg is None or kg is None:
            assert kg is None or not bool((kg != 0).any()), pair
            continue
        np.testing.assert_allclose(as_np(kg), as_np(tg), rtol=1e-6, atol=1e-9, err_msg=str(pair))


def test_kl_generic_pairs_match_torch():
    """The ExponentialFamily (Bregman), TransformedDistribution and Independent entries."""
    cov = _spd(3, (2,))
    k = [KD.Wishart(kiln.tensor([4.0, 5.0], dtype=kiln.float64), covariance_matrix=kiln.tensor(cov.tolist(),
                                                                                                 dtype=kiln.float64)),
         KD.Wishart(kiln.tensor([6.0, 4.5], dtype=kiln.float64), covariance_matrix=kiln.eye(3, dtype=kiln.float64))]
    t = [TD.Wishart(torch.tensor([4.0, 5.0], dtype=torch.float64), covariance_matrix=torch.tensor(cov)),
         TD.Wishart(torch.tensor([6.0, 4.5], dtype=torch.float64), covariance_matrix=torch.eye(3, dtype=torch.float64))]
    close(KD.kl_divergence(*k), TD.kl_divergence(*t), 1e-8, 1e-10)
    loc, scale = _n(2, 3), _u(2, 3)
    mk = lambda T, D, s: [D.LogNormal(T.tensor(loc.tolist(), dtype=T.float64), T.tensor((scale * s).tolist(),  # noqa
                                                                                        dtype=T.float64))]
    close(KD.kl_divergence(mk(kiln, KD, 1)[0], mk(kiln, KD, 2)[0]),
          TD.kl_divergence(mk(torch, TD, 1)[0], mk(torch, TD, 2)[0]), 1e-10, 1e-12)
    ki = [KD.Independent(KD.Normal(kiln.tensor(loc.tolist(), dtype=kiln.float64),
                                   kiln.tensor((scale * s).tolist(), dtype=kiln.float64)), 1) for s in (1, 3)]
    ti = [TD.Independent(TD.Normal(torch.tensor(loc), torch.tensor(scale * s)), 1) for s in (1, 3)]
    close(KD.kl_divergence(*ki), TD.kl_divergence(*ti), 1e-10, 1e-12)
    assert_same_error(lambda: KD.kl_divergence(ki[0], KD.Independent(ki[1].base_dist.expand((1, 2, 3)), 2)),
                      lambda: TD.kl_divergence(ti[0], TD.Independent(ti[1].base_dist.expand((1, 2, 3)), 2)))


def test_kl_errors_and_registration():
    p = KD.VonMises(kiln.tensor([0.0]), kiln.tensor([1.0]))
    q = KD.Normal(kiln.tensor([0.0]), kiln.tensor([1.0]))
    tp = TD.VonMises(torch.tensor([0.0]), torch.tensor([1.0]))
    tq = TD.Normal(torch.tensor([0.0]), torch.tensor([1.0]))
    with pytest.raises(NotImplementedError) as k_err:
        KD.kl_divergence(p, q)
    with pytest.raises(NotImplementedError) as t_err:
        TD.kl_divergence(tp, tq)
    assert str(k_err.value) == str(t_err.value)
    # a different exponential family pair goes to the Bregman entry, which refuses
    with pytest.raises(NotImplementedError, match="cross KL-divergence between different exponential families"):
        KD.kl_divergence(KD.Wishart(4.0, kiln.eye(2)), KD.Dirichlet(kiln.ones(2)).expand(()))

    class MyNormal(KD.Normal):
        pass

    @KD.register_kl(MyNormal, KD.Normal)
    def _mine(p, q):
        return kiln.full(p.batch_shape, 42.0)

    try:
        assert float(KD.kl_divergence(MyNormal(0.0, 1.0), KD.Normal(0.0, 1.0))) == 42.0
        assert float(KD.kl_divergence(KD.Normal(0.0, 1.0), KD.Normal(1.0, 1.0))) == pytest.approx(0.5)

        class Other(KD.Normal):
            pass

        @KD.register_kl(KD.Normal, Other)
        def _other(p, q):
            return kiln.zeros(())

        with pytest.warns(RuntimeWarning, match=r"Ambiguous kl_divergence\(MyNormal, Other\)"):
            KD.kl_divergence(MyNormal(0.0, 1.0), Other(0.0, 1.0))
    finally:
        for key in [k for k in KD.kl._KL_REGISTRY if k[0].__name__ in ("MyNormal",) or k[1].__name__ == "Other"]:
            del KD.kl._KL_REGISTRY[key]
        KD.kl._KL_MEMOIZE.clear()


_raised = functools.partial(raised, ignore_warnings=True)


f64 = "float64"
ERROR_CASES = {
    "normal-scale": lambda T: T.distributions.Normal(0.0, -1.0),
    "normal-scale-tensor": lambda T: T.distributions.Normal(T.zeros(2), T.tensor([1.0, -2.0])),
    "normal-nan-loc": lambda T: T.distributions.Normal(T.tensor([float("nan")]), T.ones(1)),
    "uniform-order": lambda T: T.distributions.Uniform(T.tensor([2.0]), T.tensor([1.0])),
    "bernoulli-both": lambda T: T.distributions.Bernoulli(probs=0.5, logits=0.0),
    "bernoulli-neither": lambda T: T.distributions.Bernoulli(),
    "bernoulli-probs": lambda T: T.distributions.Bernoulli(probs=T.tensor([0.5, 1.5])),
    "categorical-0d": lambda T: T.distributions.Categorical(probs=T.tensor(1.0)),
    "categorical-0d-logits": lambda T: T.distributions.Categorical(logits=T.tensor(1.0)),
    "categorical-negative": lambda T: T.distributions.Categorical(probs=T.tensor([0.5, -0.5, 1.0])),
    "binomial-count": lambda T: T.distributions.Binomial(T.tensor([2.5]), probs=T.tensor([0.5])),
    "multinomial-count": lambda T: T.distributions.Multinomial(T.tensor(3), probs=T.tensor([0.5, 0.5])),
    "gamma-rate": lambda T: T.distributions.Gamma(T.tensor([1.0]), T.tensor([0.0])),
    "dirichlet-0d": lambda T: T.distributions.Dirichlet(T.tensor(1.0)),
    "dirichlet-negative": lambda T: T.distributions.Dirichlet(T.tensor([1.0, -1.0])),
    "geometric-zero": lambda T: T.distributions.Geometric(probs=T.tensor([0.0, 0.5])),
    "mvn-none": lambda T: T.distributions.MultivariateNormal(T.zeros(2)),
    "mvn-two": lambda T: T.distributions.MultivariateNormal(T.zeros(2), covariance_matrix=T.eye(2),
                                                            scale_tril=T.eye(2)),
    "mvn-loc-0d": lambda T: T.distributions.MultivariateNormal(T.tensor(0.0), covariance_matrix=T.eye(1)),
    "mvn-cov-1d": lambda T: T.distributions.MultivariateNormal(T.zeros(2), covariance_matrix=T.ones(2)),
    "mvn-not-pd": lambda T: T.distributions.MultivariateNormal(
        T.zeros(2), covariance_matrix=T.tensor([[1.0, 2.0], [2.0, 1.0]]), validate_args=True),
    "mvn-tril-upper": lambda T: T.distributions.MultivariateNormal(T.zeros(2), scale_tril=T.tensor([[1.0, 1.0],
                                                                                                   [0.0, 1.0]])),
    "lowrank-shape": lambda T: T.distributions.LowRankMultivariateNormal(T.zeros(3), T.ones(2, 1), T.ones(3)),
    "lowrank-diag": lambda T: T.distributions.LowRankMultivariateNormal(T.zeros(3), T.ones(3, 1), T.ones(2)),
    "wishart-df": lambda T: T.distributions.Wishart(T.tensor(0.5), covariance_matrix=T.eye(2)),
    "wishart-none": lambda T: T.distributions.Wishart(T.tensor(3.0)),
    "lkj-dim": lambda T: T.distributions.LKJCholesky(1, 1.0),
    "independent-ndims": lambda T: T.distributions.Independent(T.distributions.Normal(T.zeros(2), T.ones(2)), 2),
    "transformed-bad": lambda T: T.distributions.TransformedDistribution(T.distributions.Normal(0.0, 1.0), [1]),
    "transformed-type": lambda T: T.distributions.TransformedDistribution(T.distributions.Normal(0.0, 1.0), 3),
    "mixture-type": lambda T: T.distributions.MixtureSameFamily(T.distributions.Normal(0.0, 1.0),
                                                                T.distributions.Normal(T.zeros(2), T.ones(2))),
    "mixture-count": lambda T: T.distributions.MixtureSameFamily(T.distributions.Categorical(T.ones(3)),
                                                                 T.distributions.Normal(T.zeros(2), T.ones(2))),
    "mixture-batch": lambda T: T.distributions.MixtureSameFamily(T.distributions.Categorical(T.ones(4, 2)),
                                                                 T.distributions.Normal(T.zeros(3, 2), T.ones(3, 2))),
    "vonmises-concentration": lambda T: T.distributions.VonMises(T.tensor([0.0]), T.tensor([-1.0])),
    "studentt-df": lambda T: T.distributions.StudentT(T.tensor([-1.0])),
    "pareto-alpha": lambda T: T.distributions.Pareto(T.tensor([1.0]), T.tensor([0.0])),
    "lognormal-scale": lambda T: T.distributions.LogNormal(T.tensor([0.0]), T.tensor([-1.0])),
    "halfnormal-scale": lambda T: T.distributions.HalfNormal(T.tensor([-1.0])),
    "cont-bernoulli-probs": lambda T: T.distributions.ContinuousBernoulli(T.tensor([1.5]), validate_args=True),
    "negbinomial-probs": lambda T: T.distributions.NegativeBinomial(T.tensor([2.0]), probs=T.tensor([1.0])),
    "gen-pareto-scale": lambda T: T.distributions.GeneralizedPareto(T.tensor([0.0]), T.tensor([-1.0]), T.tensor([0.1])),
    # out-of-support and badly shaped values
    "value-not-tensor": lambda T: T.distributions.Normal(0.0, 1.0).log_prob(0.5),
    "value-support": lambda T: T.distributions.Exponential(T.tensor([1.0])).log_prob(T.tensor([-1.0])),
    "value-support-cdf": lambda T: T.distributions.Exponential(T.tensor([1.0])).cdf(T.tensor([-1.0])),
    "value-nan": lambda T: T.distributions.Normal(T.zeros(2), T.ones(2)).log_prob(T.tensor([0.0, float("nan")])),
    "value-integer": lambda T: T.distributions.Poisson(T.tensor([2.0])).log_prob(T.tensor([1.5])),
    "value-category": lambda T: T.distributions.Categorical(T.ones(3)).log_prob(T.tensor([3])),
    "value-simplex": lambda T: T.distributions.Dirichlet(T.ones(3)).log_prob(T.tensor([0.5, 0.5, 0.5])),
    "value-event-shape": lambda T: T.distributions.MultivariateNormal(T.zeros(3), T.eye(3)).log_prob(T.zeros(2)),
    "value-broadcast": lambda T: T.distributions.Normal(T.zeros(3), T.ones(3)).log_prob(T.zeros(2)),
    "value-uniform": lambda T: T.distributions.Uniform(T.tensor([0.0]), T.tensor([1.0])).log_prob(T.tensor([2.0])),
    "value-binomial": lambda T: T.distributions.Binomial(T.tensor([3.0]), T.tensor([0.5])).log_prob(T.tensor([4.0])),
    "value-onehot": lambda T: T.distributions.OneHotCategorical(T.ones(3)).log_prob(T.tensor([1.0, 1.0, 0.0])),
    "value-mixture": lambda T: T.distributions.MixtureSameFamily(
        T.distributions.Categorical(T.ones(2)), T.distributions.Exponential(T.ones(2))).log_prob(T.tensor(-1.0)),
    "value-wishart": lambda T: T.distributions.Wishart(T.tensor(3.0), T.eye(2)).log_prob(-T.eye(2)),
    "value-lkj": lambda T: T.distributions.LKJCholesky(2).log_prob(T.tensor([[1.0, 0.0], [0.5, 0.5]])),
    "expand-custom-init": lambda T: type("Sub", (T.distributions.Normal,), {"__init__": lambda s: None})().expand((2,)),
    "binomial-entropy": lambda T: T.distributions.Binomial(T.tensor([2.0, 3.0]), T.tensor([0.5, 0.5])).entropy(),
    "multinomial-nosupport": lambda T: T.distributions.Multinomial(2, T.ones(2)).log_prob(T.tensor([3.0, 0.0])),
    "mode-missing": lambda T: T.distributions.Multinomial(2, T.ones(2)).mode,
    "default-validate": lambda T: T.distributions.Distribution.set_default_validate_args(3),
}


@pytest.mark.parametrize("name", list(ERROR_CASES))
def test_errors_match_torch(name):
    make = ERROR_CASES[name]
    t_err = _raised(lambda: make(torch))
    k_err = _raised(lambda: make(kiln))
    assert t_err is not None, "torch raised nothing"
    assert type(k_err) is type(t_err), (k_err, t_err)
    assert str(k_err) == str(t_err).replace("torch", "kiln")


def test_validation_switches():
    assert KD.Distribution._validate_args is True
    try:
        KD.Distribution.set_default_validate_args(False)
        d = KD.Normal(0.0, -1.0)  # no check
        assert float(d.scale) == -1.0
        assert bool(kiln.isnan(KD.Exponential(1.0).log_prob(kiln.tensor(-1.0))).item()) is False
    finally:
        KD.Distribution.set_default_validate_args(True)
    d = KD.Normal(0.0, -1.0, validate_args=False)
    assert d._validate_args is False
    with pytest.raises(ValueError):
        KD.Normal(0.0, 1.0).log_prob(kiln.tensor(float("nan")))
    KD.Normal(0.0, 1.0, validate_args=False).log_prob(kiln.tensor(float("nan")))
    # expand keeps the instance setting and does not re-validate
    e = KD.Normal(kiln.tensor(0.0), kiln.tensor(1.0), validate_args=False).expand((3,))
    assert e._validate_args is False


def _pair_tensors(*arrays):
    return [kiln.tensor(a.tolist(), dtype=kiln.float64) for a in arrays], [torch.tensor(a) for a in arrays]


@pytest.mark.parametrize("component", ["normal", "mvn", "mixture-batch-broadcast"])
def test_mixture_same_family_matches_torch(component):
    logits = _n(2, 3)
    if component == "normal":
        (kl_, kloc, kscale), (tl, tloc, tscale) = _pair_tensors(logits, _n(2, 3), _u(2, 3))
        kd = KD.MixtureSameFamily(KD.Categorical(logits=kl_), KD.Normal(kloc, kscale))
        td = TD.MixtureSameFamily(TD.Categorical(logits=tl), TD.Normal(tloc, tscale))
    elif component == "mvn":
        (kl_, kloc, ktril), (tl, tloc, ttril) = _pair_tensors(logits, _n(2, 3, 2), _tril(2, (2, 3)))
        kd = KD.MixtureSameFamily(KD.Categorical(logits=kl_), KD.MultivariateNormal(kloc, scale_tril=ktril))
        td = TD.MixtureSameFamily(TD.Categorical(logits=tl), TD.MultivariateNormal(tloc, scale_tril=ttril))
    else:
        (kl_, kloc, kscale), (tl, tloc, tscale) = _pair_tensors(_n(3), _n(2, 3), _u(2, 3))
        kd = KD.MixtureSameFamily(KD.Categorical(logits=kl_), KD.Normal(kloc, kscale))
        td = TD.MixtureSameFamily(TD.Categorical(logits=tl), TD.Normal(tloc, tscale))
    assert tuple(kd.batch_shape) == tuple(td.batch_shape) and tuple(kd.event_shape) == tuple(td.event_shape)
    torch.manual_seed(1)
    x = torch.randn((4,) + tuple(td.batch_shape) + tuple(td.event_shape), dtype=torch.float64)
    close(kd.log_prob(to_kiln(x)), td.log_prob(x), 1e-10, 1e-12)
    close(kd.mean, td.mean, 1e-10, 1e-12)
    close(kd.variance, td.variance, 1e-10, 1e-12)
    if component != "mvn":
        close(kd.cdf(to_kiln(x)), td.cdf(x), 1e-10, 1e-12)
    kiln.manual_seed(1)
    if component == "mixture-batch-broadcast":  # torch's sampler cannot gather across the broadcast; nor kiln's
        k_err, t_err = _raised(lambda: kd.sample((5, 2))), _raised(lambda: td.sample((5, 2)))
        assert type(k_err) is type(t_err) is RuntimeError and str(k_err) == str(t_err)
    else:
        s = kd.sample((5, 2))
        assert tuple(s.shape) == (5, 2) + tuple(td.batch_shape) + tuple(td.event_shape)
    e, te = kd.expand((4,) + tuple(kd.batch_shape)), td.expand((4,) + tuple(td.batch_shape))
    close(e.log_prob(to_kiln(x[:1])), te.log_prob(x[:1]), 1e-10, 1e-12)
    assert repr(kd).replace("kiln", "torch") == repr(td)


def test_mixture_same_family_sample_moments():
    kiln.manual_seed(13)
    probs = kiln.tensor([0.2, 0.5, 0.3], dtype=kiln.float64)
    d = KD.MixtureSameFamily(KD.Categorical(probs), KD.Normal(kiln.tensor([-2.0, 0.0, 3.0], dtype=kiln.float64),
                                                             kiln.tensor([0.5, 1.0, 0.7], dtype=kiln.float64)))
    n = 20000
    x = as_np(d.sample((n,)))
    _within(x.mean(), as_np(d.mean), math.sqrt(float(d.variance) / n), "mean")
    c = x - x.mean()
    _within((c ** 2).mean(), as_np(d.variance), math.sqrt(((c ** 4).mean() - (c ** 2).mean() ** 2) / n), "variance")


def test_independent_matches_torch():
    (kloc, kscale), (tloc, tscale) = _pair_tensors(_n(2, 3, 4), _u(2, 3, 4))
    kd = KD.Independent(KD.Normal(kloc, kscale), 2)
    td = TD.Independent(TD.Normal(tloc, tscale), 2)
    assert tuple(kd.batch_shape) == (2,) and tuple(kd.event_shape) == (3, 4)
    x = td.sample((5,))
    close(kd.log_prob(to_kiln(x)), td.log_prob(x), 1e-12, 1e-12)
    close(kd.entropy(), td.entropy(), 1e-12, 1e-12)
    assert repr(kd).replace("kiln", "torch") == repr(td)
    assert repr(kd.support).replace("kiln", "torch") == repr(td.support)
    assert kd.has_rsample and not kd.has_enumerate_support
    b = KD.Independent(KD.Bernoulli(probs=kiln.tensor([0.3, 0.6])), 0)
    assert b.has_enumerate_support
    close(b.enumerate_support(), TD.Independent(TD.Bernoulli(torch.tensor([0.3, 0.6])), 0).enumerate_support(), 0, 0)
    with pytest.raises(NotImplementedError, match="Enumeration over cartesian product is not implemented"):
        KD.Independent(KD.Bernoulli(probs=kiln.tensor([0.3, 0.6])), 1).enumerate_support()
    e = kd.expand((3, 2))
    assert tuple(e.batch_shape) == (3, 2) and tuple(e.base_dist.batch_shape) == (3, 2, 3, 4)


def test_transformed_distribution_matches_torch():
    (kloc, kscale, ka, kb), (tloc, tscale, ta, tb) = _pair_tensors(_n(3), _u(3), _n(3), _u(3) * -1)
    for build_transforms in (
        lambda D, a, b: [D.AffineTransform(a, b), D.ExpTransform()],
        lambda D, a, b: [D.SigmoidTransform(), D.AffineTransform(a, b)],
        lambda D, a, b: D.TanhTransform(),
    ):
        kd = KD.TransformedDistribution(KD.Normal(kloc, kscale), build_transforms(KD, ka, kb))
        td = TD.TransformedDistribution(TD.Normal(tloc, tscale), build_transforms(TD, ta, tb))
        torch.manual_seed(2)
        x = td.sample((4,))
        close(kd.log_prob(to_kiln(x)), td.log_prob(x), 1e-9, 1e-11)
        close(kd.cdf(to_kiln(x)), td.cdf(x), 1e-9, 1e-11)
        u = torch.rand(4, 3, dtype=torch.float64)
        close(kd.icdf(to_kiln(u)), td.icdf(u), 1e-9, 1e-11)
        assert repr(kd.support).replace("kiln", "torch") == repr(td.support)
        kiln.manual_seed(2)
        s = kd.rsample((6,))
        assert tuple(s.shape) == (6, 3) and s.requires_grad is False
        assert bool(kd.support.check(kd.sample((6,))).all())
    # a vector transform reinterprets the base's batch dim as an event dim
    kd = KD.TransformedDistribution(KD.Normal(kloc, kscale), [KD.StickBreakingTransform()])
    td = TD.TransformedDistribution(TD.Normal(tloc, tscale), [TD.StickBreakingTransform()])
    assert tuple(kd.event_shape) == (4,) and isinstance(kd.base_dist, KD.Independent)
    x = td.sample((2,))
    close(kd.log_prob(to_kiln(x)), td.log_prob(x), 1e-9, 1e-11)
    e = kd.expand((5,))
    assert tuple(e.batch_shape) == (5,) and tuple(e.event_shape) == (4,)


def test_straight_through_and_misc():
    probs = kiln.tensor([0.2, 0.3, 0.5], dtype=kiln.float64, requires_grad=True)
    d = KD.OneHotCategoricalStraightThrough(probs=probs)
    kiln.manual_seed(3)
    s = d.rsample((4,))
    assert tuple(s.shape) == (4, 3) and bool(((s.detach() == 0) | (s.detach() == 1)).all())
    (g,) = kiln.autograd.grad((s * kiln.tensor([1.0, 2.0, 3.0], dtype=kiln.float64)).sum(), [probs])
    tp = torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64, requires_grad=True)
    ts = TD.OneHotCategoricalStraightThrough(probs=tp).rsample((4,))
    (tg,) = torch.autograd.grad((ts * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum(), [tp])
    close(g, tg, 1e-12, 1e-12)  # the straight-through gradient does not depend on the draw
    n = KD.Normal(kiln.tensor([0.0, 1.0]), kiln.tensor([1.0, 2.0]))
    close(n.perplexity(), TD.Normal(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0])).perplexity(), 1e-6, 1e-7)
    with pytest.warns(FutureWarning, match=r"`sample_n\(n\)` will be deprecated"):
        assert tuple(n.sample_n(3).shape) == (3, 2)
    assert isinstance(n.batch_shape, kiln.Size) and isinstance(n.sample().shape, kiln.Size)
    assert_same_error(lambda: KD.Distribution(validate_args=False).mean,
                      lambda: TD.Distribution(validate_args=False).mean)
    bare = KD.Distribution(validate_args=False)
    assert bare.batch_shape == kiln.Size() and bare.event_shape == kiln.Size()
    with pytest.warns(UserWarning, match="does not define `arg_constraints`"):
        KD.Distribution(validate_args=True)


def test_utils_match_torch():
    x = _n(2, 4)
    (kx,), (tx,) = _pair_tensors(x)
    for fn in ("logits_to_probs", "probs_to_logits"):
        for binary in (False, True):
            arg_k = kx if fn == "logits_to_probs" else kiln.sigmoid(kx)
            arg_t = tx if fn == "logits_to_probs" else torch.sigmoid(tx)
            close(getattr(KD.utils, fn)(arg_k, is_binary=binary), getattr(TD.utils, fn)(arg_t, is_binary=binary),
                  1e-12, 1e-12)
    for dtype in ("float32", "float64"):
        p = [0.0, 0.5, 1.0]
        close(KD.utils.clamp_probs(kiln.tensor(p, dtype=getattr(kiln, dtype))),
              TD.utils.clamp_probs(torch.tensor(p, dtype=getattr(torch, dtype))), 0, 0)
    a, b = KD.utils.broadcast_all(kiln.ones(2, 1, dtype=kiln.float64), 3.0)
    ta, tb = TD.utils.broadcast_all(torch.ones(2, 1, dtype=torch.float64), 3.0)
    close(a, ta, 0, 0)
    close(b, tb, 0, 0)
    (s,) = KD.utils.broadcast_all(2.0)
    assert s.dtype == kiln.float32 and s.shape == ()
    with pytest.raises(ValueError, match="Input arguments must all be instances of Number, kiln.Tensor"):
        KD.utils.broadcast_all("x")
    m = _n(2, 4, 4)
    (km,), (tm,) = _pair_tensors(m)
    for diag in (-2, -1, 0, 1):
        kv, tv = KD.utils.tril_matrix_to_vec(km, diag), TD.utils.tril_matrix_to_vec(tm, diag)
        close(kv, tv, 0, 0)
        close(KD.utils.vec_to_tril_matrix(kv, diag), TD.utils.vec_to_tril_matrix(tv, diag), 0, 0)
    assert str(_raised(lambda: KD.utils.tril_matrix_to_vec(km, 4))) == \
        str(_raised(lambda: TD.utils.tril_matrix_to_vec(tm, 4)))
    assert str(_raised(lambda: KD.utils.vec_to_tril_matrix(kiln.ones(5)))) == \
        str(_raised(lambda: TD.utils.vec_to_tril_matrix(torch.ones(5))))

    class Holder:
        calls = 0

        @KD.utils.lazy_property
        def value(self):
            Holder.calls += 1
            return kiln.is_grad_enabled()

    h = Holder()
    with kiln.no_grad():
        assert h.value is True  # computed with grad enabled
    assert h.value is True and Holder.calls == 1 and "value" in h.__dict__
    assert isinstance(Holder.value, property) and isinstance(Holder.value, KD.utils.lazy_property)
