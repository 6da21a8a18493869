"""kiln.distributions transforms, constraints and the biject_to/transform_to registries against torch.

Transforms: forward, inverse, log_abs_det_jacobian (values and gradients), the round trip,
domain/codomain, sign, bijectivity, event_dim, forward/inverse shapes, caching, equality and reprs.
Constraints: check() on in- and out-of-region values, reprs, is_discrete/event_dim, the dependent
placeholders. Registries: every registered constraint maps to the same transform as torch's, whose
image satisfies the constraint (and inverts back for biject_to).
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch

import kiln
import kiln.distributions as KD
import torch.distributions as TD
from torch_compare import float64_values as as_np, raised as _raised

RNG = np.random.default_rng(77)
KC, TC = KD.constraints, TD.constraints


def pair(a, dtype="float64"):
    a = np.asarray(a, dtype=np.float64)
    return kiln.tensor(a.tolist(), dtype=getattr(kiln, dtype)), torch.tensor(a, dtype=getattr(torch, dtype))


def close(k, t, rtol=1e-10, atol=1e-12):
    if isinstance(t, (int, float)):
        assert float(k) == pytest.approx(t, rel=rtol, abs=atol)
        return
    assert tuple(k.shape) == tuple(t.shape), (tuple(k.shape), tuple(t.shape))
    np.testing.assert_allclose(as_np(k), as_np(t), rtol=rtol, atol=atol, equal_nan=True)


def text(obj):
    return repr(obj).replace("torch", "kiln")


def _spd(n, batch=()):
    a = RNG.standard_normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


# (id, factory(D, tensors) -> transform, the domain point maker (numpy), tensor parameters)
TRANSFORMS = [
    ("exp", lambda D, p: D.ExpTransform(), lambda: RNG.standard_normal((2, 3)), []),
    ("affine-scalar", lambda D, p: D.AffineTransform(0.5, -2.0), lambda: RNG.standard_normal((2, 3)), []),
    ("affine-tensor", lambda D, p: D.AffineTransform(p[0], p[1]), lambda: RNG.standard_normal((2, 3)),
     [RNG.standard_normal(3), RNG.uniform(0.5, 2, 3)]),
    ("affine-event", lambda D, p: D.AffineTransform(p[0], p[1], event_dim=1), lambda: RNG.standard_normal((2, 3)),
     [RNG.standard_normal(3), RNG.uniform(0.5, 2, 3) * np.array([1, -1, 1])]),
    ("sigmoid", lambda D, p: D.SigmoidTransform(), lambda: RNG.standard_normal((2, 3)) * 3, []),
    ("tanh", lambda D, p: D.TanhTransform(), lambda: RNG.standard_normal((2, 3)), []),
    ("softplus", lambda D, p: D.SoftplusTransform(), lambda: RNG.standard_normal((2, 3)) * 3, []),
    ("power", lambda D, p: D.PowerTransform(p[0]), lambda: RNG.uniform(0.2, 3, (2, 3)), [np.array([0.5, 2.0, -1.5])]),
    ("power-scalar", lambda D, p: D.PowerTransform(3.0), lambda: RNG.uniform(0.2, 3, (2, 3)), []),
    ("abs", lambda D, p: D.AbsTransform(), lambda: RNG.standard_normal((2, 3)), []),
    ("softmax", lambda D, p: D.SoftmaxTransform(), lambda: RNG.standard_normal((2, 4)), []),
    ("stick-breaking", lambda D, p: D.StickBreakingTransform(), lambda: RNG.standard_normal((2, 3)), []),
    ("lower-cholesky", lambda D, p: D.LowerCholeskyTransform(), lambda: RNG.standard_normal((2, 3, 3)), []),
    ("positive-definite", lambda D, p: D.PositiveDefiniteTransform(), lambda: RNG.standard_normal((2, 3, 3)), []),
    ("corr-cholesky", lambda D, p: D.CorrCholeskyTransform(), lambda: RNG.standard_normal((2, 6)), []),
    ("compose", lambda D, p: D.ComposeTransform([D.AffineTransform(p[0], 2.0), D.ExpTransform()]),
     lambda: RNG.standard_normal((2, 3)), [RNG.standard_normal(3)]),
    ("compose-event", lambda D, p: D.ComposeTransform([D.ExpTransform(), D.StickBreakingTransform()]),
     lambda: RNG.standard_normal((2, 3)), []),
    ("compose-empty", lambda D, p: D.ComposeTransform([]), lambda: RNG.standard_normal((2, 3)), []),
    ("independent", lambda D, p: D.IndependentTransform(D.SigmoidTransform(), 1), lambda: RNG.standard_normal((2, 3)),
     []),
    ("reshape", lambda D, p: D.ReshapeTransform((2, 3), (3, 2)), lambda: RNG.standard_normal((4, 2, 3)), []),
    ("cat", lambda D, p: D.CatTransform([D.ExpTransform(), D.SigmoidTransform()], dim=1, lengths=[2, 3]),
     lambda: RNG.standard_normal((2, 5)), []),
    ("cat-event", lambda D, p: D.CatTransform([D.IndependentTransform(D.ExpTransform(), 1),
                                               D.SigmoidTransform()], dim=-1, lengths=[2, 3]),
     lambda: RNG.standard_normal((2, 5)), []),
    ("stack", lambda D, p: D.StackTransform([D.ExpTransform(), D.TanhTransform(), D.AffineTransform(1.0, 3.0)], dim=1),
     lambda: RNG.standard_normal((2, 3, 2)), []),
    ("cdf", lambda D, p: D.CumulativeDistributionTransform(D.Normal(p[0], p[1])), lambda: RNG.standard_normal((2, 3)),
     [RNG.standard_normal(3), RNG.uniform(0.5, 2, 3)]),
    ("inverse", lambda D, p: D.ExpTransform().inv, lambda: RNG.uniform(0.2, 3, (2, 3)), []),
    ("inverse-sigmoid", lambda D, p: D.SigmoidTransform().inv, lambda: RNG.uniform(0.05, 0.95, (2, 3)), []),
]
IDS = [t[0] for t in TRANSFORMS]
NOT_INVERTIBLE = {"abs", "softmax", "lower-cholesky", "positive-definite"}  # inverse keeps only the lower part


def build(case):
    global RNG
    _, factory, domain, params = case
    RNG = np.random.default_rng(zlib.crc32(case[0].encode()))  # each case's points independent of test order
    x = domain()
    kp = [pair(p)[0] for p in params]
    tp = [pair(p)[1] for p in params]
    return factory(KD, kp), factory(TD, tp), pair(x)


def outcome(fn):
    try:
        return fn(), None
    except (NotImplementedError, ValueError) as error:
        return None, type(error)


@pytest.mark.parametrize("case", TRANSFORMS, ids=IDS)
def test_transform_matches_torch(case):
    kt, tt, (kx, tx) = build(case)
    ky, ty = kt(kx), tt(tx)
    close(ky, ty)
    k_ladj, k_err = outcome(lambda: kt.log_abs_det_jacobian(kx, ky))
    t_ladj, t_err = outcome(lambda: tt.log_abs_det_jacobian(tx, ty))
    assert k_err == t_err
    if t_err is None:
        close(k_ladj, t_ladj, 1e-9, 1e-11)
    close(kt.inv(ky), tt.inv(ty), 1e-8, 1e-10)
    if case[0] not in NOT_INVERTIBLE:
        close(kt.inv(ky), kx if case[0] != "inverse" else kx, 1e-7, 1e-9)
    assert kt.bijective == tt.bijective
    assert text(kt.domain) == text(tt.domain) and text(kt.codomain) == text(tt.codomain)
    assert type(kt.domain).__name__ == type(tt.domain).__name__
    assert type(kt.codomain).__name__ == type(tt.codomain).__name__
    assert kt.domain.event_dim == tt.domain.event_dim and kt.codomain.event_dim == tt.codomain.event_dim
    k_error, t_error = _raised(lambda: kt.codomain.check(ky)), _raised(lambda: tt.codomain.check(ty))
    assert type(k_error) is type(t_error)  # torch's cat constraint cannot mix event dims; nor can kiln's
    if t_error is None:
        assert bool(kt.codomain.check(ky).all()) and bool(tt.codomain.check(ty).all())
    for attr in ("event_dim", "sign"):
        k_value, k_err = outcome(lambda: getattr(kt, attr))
        t_value, t_err = outcome(lambda: getattr(tt, attr))
        assert k_err == t_err, attr
        if t_err is None:
            if isinstance(t_value, torch.Tensor):
                close(k_value, t_value)
            else:
                assert k_value == t_value, attr
    shape = tuple(tx.shape)
    assert tuple(kt.forward_shape(kiln.Size(shape))) == tuple(tt.forward_shape(torch.Size(shape)))
    assert tuple(kt.inverse_shape(kiln.Size(tuple(ty.shape)))) == tuple(tt.inverse_shape(torch.Size(tuple(ty.shape))))
    assert text(kt) == text(tt)
    assert kt.inv.inv is kt


NO_JACOBIAN = ("abs", "softmax", "reshape", "compose-empty", "lower-cholesky", "positive-definite")


@pytest.mark.parametrize("case", [c for c in TRANSFORMS if c[0] not in NO_JACOBIAN],
                         ids=lambda c: c[0])
def test_log_abs_det_jacobian_gradients_match_torch(case):
    kt, tt, (kx, tx) = build(case)
    kx.requires_grad_(True)
    tx.requires_grad_(True)
    k_total = kt.log_abs_det_jacobian(kx, kt(kx)).sum() + kt(kx).sum()
    t_total = tt.log_abs_det_jacobian(tx, tt(tx)).sum() + tt(tx).sum()
    (kg,) = kiln.autograd.grad(k_total, [kx])
    (tg,) = torch.autograd.grad(t_total, [tx])
    close(kg, tg, 1e-8, 1e-10)


@pytest.mark.parametrize("name", ["ExpTransform", "SigmoidTransform", "TanhTransform", "SoftplusTransform"])
def test_scalar_log_abs_det_jacobian_is_log_derivative(name):
    """log|dy/dx| from autograd equals log_abs_det_jacobian (a check independent of torch)."""
    x = kiln.tensor(RNG.standard_normal(7).tolist(), dtype=kiln.float64, requires_grad=True)
    t = getattr(KD, name)()
    y = t(x)
    (dy,) = kiln.autograd.grad(y.sum(), [x])
    close(t.log_abs_det_jacobian(x, y), kiln.log(dy.abs()), 1e-10, 1e-12)


def test_float32_transforms_match_torch():
    x = RNG.standard_normal((3, 4)) * 4
    for factory in (lambda D: D.SigmoidTransform(), lambda D: D.StickBreakingTransform(),
                    lambda D: D.TanhTransform(), lambda D: D.SoftplusTransform()):
        kx, tx = pair(x, "float32")
        kt, tt = factory(KD), factory(TD)
        ky, ty = kt(kx), tt(tx)
        assert ky.dtype == kiln.float32
        close(ky, ty, 1e-5, 1e-6)
        close(kt.log_abs_det_jacobian(kx, ky), tt.log_abs_det_jacobian(tx, ty), 1e-5, 1e-5)
        # the inverse of the same y (atanh near +-1 would amplify a 1-ulp difference in tanh's y)
        close(kt.inv(kiln.from_numpy(ty.numpy().copy())), tt.inv(ty), 1e-5, 1e-6)


def test_transform_cache_equality_and_errors():
    x = kiln.tensor([0.5, 1.0])
    t = KD.ExpTransform(cache_size=1)
    y = t(x)
    assert t(x) is y and t.inv(y) is x
    uncached = KD.ExpTransform()
    assert uncached(x) is not uncached(x)
    assert KD.ExpTransform().with_cache(1)._cache_size == 1
    assert KD.ExpTransform() == KD.ExpTransform() and KD.ExpTransform() != KD.SigmoidTransform()
    assert KD.AffineTransform(1.0, 2.0) == KD.AffineTransform(1.0, 2.0) != KD.AffineTransform(1.0, 3.0)
    assert KD.ExpTransform().inv == KD.ExpTransform().inv
    assert KD.ComposeTransform([KD.ExpTransform()]) == KD.ComposeTransform([KD.ExpTransform()])
    assert KD.PowerTransform(kiln.tensor(2.0)) == KD.PowerTransform(kiln.tensor(2.0))
    with pytest.raises(TypeError, match="^unhashable type: 'ExpTransform'$"):
        hash(KD.ExpTransform())  # as torch: __eq__ without __hash__
    for k_fn, t_fn in (
        (lambda: KD.ExpTransform(cache_size=2), lambda: TD.ExpTransform(cache_size=2)),
        (lambda: KD.ReshapeTransform((2, 3), (5,)), lambda: TD.ReshapeTransform((2, 3), (5,))),
        (lambda: KD.ReshapeTransform((2, 3), (3, 2)).forward_shape(kiln.Size([3, 2])),
         lambda: TD.ReshapeTransform((2, 3), (3, 2)).forward_shape(torch.Size([3, 2]))),
        (lambda: KD.CorrCholeskyTransform().forward_shape(kiln.Size([4])),
         lambda: TD.CorrCholeskyTransform().forward_shape(torch.Size([4]))),
        (lambda: KD.CorrCholeskyTransform().inverse_shape(kiln.Size([2, 3])),
         lambda: TD.CorrCholeskyTransform().inverse_shape(torch.Size([2, 3]))),
        (lambda: KD.StickBreakingTransform().forward_shape(kiln.Size([])),
         lambda: TD.StickBreakingTransform().forward_shape(torch.Size([]))),
        (lambda: KD.AffineTransform(0.0, 1.0).with_cache(1).with_cache(3), lambda: TD.AffineTransform(0.0, 1.0)
         .with_cache(1).with_cache(3)),
        (lambda: KD.AbsTransform().log_abs_det_jacobian(x, x), lambda: TD.AbsTransform().log_abs_det_jacobian(
            torch.tensor([0.5, 1.0]), torch.tensor([0.5, 1.0]))),
        (lambda: KD.IndependentTransform(KD.ExpTransform(), 2)(kiln.ones(3)),
         lambda: TD.IndependentTransform(TD.ExpTransform(), 2)(torch.ones(3))),
        (lambda: KD.StackTransform([KD.ExpTransform()], dim=0)(kiln.ones(2)),
         lambda: TD.StackTransform([TD.ExpTransform()], dim=0)(torch.ones(2))),
        (lambda: KD.CatTransform([KD.ExpTransform()], dim=0, lengths=[1])(kiln.ones(2)),
         lambda: TD.CatTransform([TD.ExpTransform()], dim=0, lengths=[1])(torch.ones(2))),
        (lambda: KD.CatTransform([KD.ExpTransform()], lengths=[1, 2]), lambda: TD.CatTransform([TD.ExpTransform()],
                                                                                              lengths=[1, 2])),
    ):
        k_err, t_err = _raised(k_fn), _raised(t_fn)
        assert type(k_err) is type(t_err), (k_err, t_err)
        if t_err is not None:
            assert str(k_err) == str(t_err).replace("torch", "kiln")


# ---------------------------------------------------------------- constraints

def _constraint_cases(C, T):
    return [
        ("real", C.real), ("real_vector", C.real_vector), ("positive", C.positive), ("nonnegative", C.nonnegative),
        ("unit_interval", C.unit_interval), ("boolean", C.boolean), ("one_hot", C.one_hot),
        ("nonnegative_integer", C.nonnegative_integer), ("positive_integer", C.positive_integer),
        ("integer_interval", C.integer_interval(0, 3)), ("greater_than", C.greater_than(1.0)),
        ("greater_than_eq", C.greater_than_eq(1.0)), ("less_than", C.less_than(0.5)),
        ("interval", C.interval(-1.0, 1.0)), ("half_open_interval", C.half_open_interval(-1.0, 1.0)),
        ("simplex", C.simplex), ("multinomial", C.multinomial(3)), ("lower_triangular", C.lower_triangular),
        ("lower_cholesky", C.lower_cholesky), ("corr_cholesky", C.corr_cholesky), ("square", C.square),
        ("symmetric", C.symmetric), ("positive_semidefinite", C.positive_semidefinite),
        ("positive_definite", C.positive_definite), ("independent", C.independent(C.positive, 1)),
        ("cat", C.cat([C.positive, C.real], dim=-1, lengths=[2, 1])),
        ("stack", C.stack([C.positive, C.unit_interval, C.real], dim=-1)),
        ("mixture", C.MixtureSameFamilyConstraint(C.positive)),
        ("integer_less_than", C._IntegerLessThan(2)),
    ]


CONSTRAINT_NAMES = [name for name, _ in _constraint_cases(TC, torch)]
VECTORS = np.array([[0.0, 1.0, 0.0], [0.2, 0.3, 0.5], [1.0, 1.0, 1.0], [-0.5, 0.5, 1.0], [2.0, 0.0, 1.0],
                    [np.nan, 0.5, 0.5], [0.5, 1.5, -1.0], [3.0, 0.0, 0.0]])


def _matrices():
    spd = _spd(3)
    chol = np.linalg.cholesky(spd)
    corr = chol / np.linalg.norm(chol, axis=-1, keepdims=True)
    return np.stack([spd, chol, corr, -spd, np.triu(spd), np.zeros((3, 3)), np.eye(3), spd + np.diag([0, 0, -30.0])])


@pytest.mark.parametrize("name", CONSTRAINT_NAMES)
def test_constraint_check_matches_torch(name):
    kc = dict(_constraint_cases(KC, kiln))[name]
    tc = dict(_constraint_cases(TC, torch))[name]
    assert repr(kc) == repr(tc)
    assert kc.is_discrete == tc.is_discrete and kc.event_dim == tc.event_dim
    for values in (VECTORS, _matrices()):
        kv, tv = pair(values)
        k_result, t_result = _raised(lambda: kc.check(kv)), _raised(lambda: tc.check(tv))
        if isinstance(t_result, Exception) or isinstance(k_result, Exception):
            assert type(k_result) is type(t_result)
            continue
        k_out, t_out = kc.check(kv), tc.check(tv)
        assert k_out.dtype == kiln.bool
        np.testing.assert_array_equal(k_out.numpy(), t_out.numpy())


def test_dependent_constraints():
    assert KC.is_dependent(KC.dependent) and not KC.is_dependent(KC.real)
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        KC.dependent.check(kiln.ones(1))
    with pytest.raises(NotImplementedError, match=".is_discrete cannot be determined statically"):
        KC.dependent.is_discrete
    with pytest.raises(NotImplementedError, match=".event_dim cannot be determined statically"):
        KC.dependent.event_dim
    custom = KC.dependent(is_discrete=True, event_dim=1)
    assert custom.is_discrete is True and custom.event_dim == 1 and repr(custom) == repr(TC.dependent())
    # dependent_property: a property on instances, a dependent constraint on the class
    assert KC.is_dependent(KD.Uniform.support) and KD.Uniform.support.event_dim == 0
    u = KD.Uniform(kiln.tensor([0.0]), kiln.tensor([2.0]))
    assert isinstance(u.support, KC._Interval)
    assert KC.is_dependent(KD.Uniform(0.0, 1.0).arg_constraints["low"]) is False
    assert KC.is_dependent(KD.Binomial.support) and KD.Binomial.support.is_discrete


def test_constraint_errors_match_torch():
    for k_fn, t_fn in (
        (lambda: KC.independent(3, 1), lambda: TC.independent(3, 1)),
        (lambda: KC.independent(KC.real, -1), lambda: TC.independent(TC.real, -1)),
        (lambda: KC.independent(KC.real, 2).check(kiln.ones(3)),
         lambda: TC.independent(TC.real, 2).check(torch.ones(3))),
        (lambda: KC.cat([1]), lambda: TC.cat([1])),
        (lambda: KC.stack([KC.real]).check(kiln.tensor(1.0)), lambda: TC.stack([TC.real]).check(torch.tensor(1.0))),
    ):
        k_err, t_err = _raised(k_fn), _raised(t_fn)
        assert type(k_err) is type(t_err) and t_err is not None
        assert str(k_err) == str(t_err)


# ---------------------------------------------------------------- registries

def _registered(C):
    return [C.real, C.positive, C.nonnegative, C.greater_than(2.0), C.greater_than_eq(-1.0), C.less_than(3.0),
            C.interval(0.0, 1.0), C.interval(-2.0, 5.0), C.half_open_interval(1.0, 4.0), C.unit_interval,
            C.simplex, C.lower_cholesky, C.positive_definite, C.positive_semidefinite, C.corr_cholesky,
            C.real_vector, C.independent(C.positive, 1), C.cat([C.positive, C.real], dim=-1, lengths=[2, 1]),
            C.stack([C.positive, C.unit_interval], dim=-1)]


SHAPES = {"_Simplex": (2, 3), "_LowerCholesky": (2, 3, 3), "_PositiveDefinite": (2, 3, 3),
          "_PositiveSemidefinite": (2, 3, 3), "_CorrCholesky": (2, 3), "_Cat": (2, 3), "_Stack": (4, 2)}


@pytest.mark.parametrize("index", range(len(_registered(TC))))
@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_registries_match_torch(registry, index):
    kc, tc = _registered(KC)[index], _registered(TC)[index]
    k_reg, t_reg = getattr(KD, registry), getattr(TD, registry)
    k_t, k_err = outcome(lambda: k_reg(kc))
    t_t, t_err = outcome(lambda: t_reg(tc))
    assert k_err == t_err
    if t_err is not None:
        assert str(_raised(lambda: k_reg(kc))) == str(_raised(lambda: t_reg(tc)))
        return
    assert text(k_t) == text(t_t)
    shape = SHAPES.get(type(tc).__name__, (2, 3))
    if type(tc).__name__ == "_IndependentConstraint" and tc.base_constraint is TC.real:
        shape = (2, 3)
    x = RNG.standard_normal(shape)
    kx, tx = pair(x)
    ky, ty = k_t(kx), t_t(tx)
    close(ky, ty, 1e-9, 1e-11)
    assert bool(kc.check(ky).all())
    if registry == "biject_to":
        close(k_t.inv(ky), kx, 1e-7, 1e-9)
        close(k_t.log_abs_det_jacobian(kx, ky), t_t.log_abs_det_jacobian(tx, ty), 1e-9, 1e-11)


def test_registry_errors_and_custom_registration():
    for reg_k, reg_t in ((KD.biject_to, TD.biject_to), (KD.transform_to, TD.transform_to)):
        for kc, tc in ((KC.boolean, TC.boolean), (KC.dependent, TC.dependent)):
            k_err, t_err = _raised(lambda: reg_k(kc)), _raised(lambda: reg_t(tc))
            assert type(k_err) is type(t_err) is NotImplementedError and str(k_err) == str(t_err)
    with pytest.raises(TypeError, match="Expected constraint to be either a Constraint subclass or instance"):
        KD.constraint_registry.ConstraintRegistry().register(3, lambda c: None)
    registry = KD.constraint_registry.ConstraintRegistry()

    @registry.register(KC.positive)
    def _factory(constraint):
        return KD.SoftplusTransform()

    assert isinstance(registry(KC.greater_than(5.0)), KD.SoftplusTransform)  # keyed by type
